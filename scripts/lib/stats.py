#!/usr/bin/env python3
"""Read sdnator's --stats-file (a JSON object rewritten every second) without knowing its exact
layout: numeric leaves are flattened to dotted keys ("metrics.counters.southbound.rx.packet_in")
and selected by regular expression, so a renamed section does not break the scripts.

  stats.py sum FILE REGEX      sum of numeric leaves whose dotted key matches REGEX (re.search, case-insensitive);
                               exit 3 if no key matches
  stats.py get FILE KEY        one value by exact dotted key (lists are indexed: switches.0.dpid)
  stats.py count FILE KEY      length of the list at KEY (e.g. switches)
  stats.py summary FILE        human summary: switches, RSS, threads, non-zero counters
"""
import json
import re
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def flatten(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from flatten(v, f"{prefix}{k}.")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from flatten(v, f"{prefix}{i}.")
    else:
        yield prefix[:-1], obj


def lookup(obj, key):
    for part in key.split(".") if key else []:
        if isinstance(obj, list):
            obj = obj[int(part)]
        elif isinstance(obj, dict) and part in obj:
            obj = obj[part]
        elif isinstance(obj, dict):
            # keys may themselves contain dots ("southbound.rx.packet_in"): take the longest match
            rest = key[key.index(part):]
            for k in sorted(obj, key=len, reverse=True):
                if rest == k or rest.startswith(k + "."):
                    return lookup(obj[k], rest[len(k) + 1:])
            raise KeyError(key)
        else:
            raise KeyError(key)
    return obj


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, data = argv[1], load(argv[2])
    if cmd == "sum":
        rx = re.compile(argv[3], re.I)
        vals = [v for k, v in flatten(data) if rx.search(k) and isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not vals:
            return 3
        total = sum(vals)
        print(int(total) if float(total).is_integer() else total)
    elif cmd == "get":
        v = lookup(data, argv[3])
        print(json.dumps(v) if isinstance(v, (dict, list)) else v)
    elif cmd == "count":
        print(len(lookup(data, argv[3])))
    elif cmd == "summary":
        sw = data.get("switches", [])
        rss = data.get("rss_bytes")
        print(f"controller: pid {data.get('pid')}, uptime {data.get('uptime_s', 0):.1f} s, "
              f"{len(sw)} switches connected, RSS {rss / 2**20:.1f} MiB, {data.get('threads')} threads"
              if isinstance(rss, (int, float)) else f"controller: {len(sw)} switches connected")
        for s in sw:
            print("  switch " + ", ".join(f"{k} {v}" for k, v in s.items()))
        d = data.get("data")
        if isinstance(d, dict):
            u, a, c = d.get("updates") or {}, d.get("archive") or {}, d.get("coordinator") or {}
            print(f"data layer: updates {u.get('backend')} ({u.get('published', 0)} published, "
                  f"{u.get('dropped', 0)} dropped), archive {a.get('backend', 'off')} "
                  f"({a.get('written', 0)} written, {a.get('dropped', 0)} dropped), "
                  f"coordinator apps {c.get('apps', 'off')}")
            for n in d.get("notes", []):
                print(f"  note: {n}")
        counters = [(k, v) for k, v in flatten(data)
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and v
                    and not k.startswith(("switches.", "pid", "uptime", "rss", "threads", "shards",
                                          "data.coordinator."))]
        for k, v in counters:
            k = re.sub(r"^metrics\.(counters|gauges|histograms)\.", "", k)
            print(f"  {k:<48} {round(v, 3) if isinstance(v, float) else v}")
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
