#!/usr/bin/env python3
"""pycounter: the Python half of the cross-language example.

It registers as app "pycounter" (interest demo/cpp/** at 100/s, capability demo/py/counter at
50/s), waits until the Coordinator assigns its capability to the C++ app "cppecho"
(examples/cpp/echo_app.cpp), writes --count values {"n": i} to demo/py/counter and waits for
each echo {"echo": {"n": i}, "seq": ...} on demo/cpp/echo@cppecho. Prints one JSON summary
line; status 0 only when an assignment arrived and every value came back.
"""

import argparse
import json
import sys
import threading
import time

import redis

from sdnator_due import Due, parse_key

APP_ID = "pycounter"
CAPABILITY = "demo/py/counter"
INTEREST = "demo/cpp/**"
ECHO_KEY = "demo/cpp/echo@cppecho"
CONSUMER = "cppecho"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--redis-host", default="127.0.0.1")
    ap.add_argument("--redis-port", type=int, default=56379,
                    help="default 56379, the Redis of scripts/services.sh")
    ap.add_argument("-n", "--count", type=int, default=20, help="values to send (default 20)")
    ap.add_argument("--timeout", type=float, default=30.0,
                    help="seconds for the whole run (default 30)")
    ap.add_argument("--heartbeat-ms", type=int, default=1000)
    ap.add_argument("--window", type=int, default=1,
                    help="values sent but not yet echoed, at most (default 1). The C++ side "
                         "paces its echoes (latest value wins), so a burst could be coalesced")
    args = ap.parse_args()
    deadline = time.monotonic() + args.timeout

    def left() -> float:
        return max(0.0, deadline - time.monotonic())

    due = Due(APP_ID, args.redis_host, args.redis_port, args.heartbeat_ms)
    cond = threading.Condition()
    echoed = set()
    strays = []  # records on demo/cpp/** that are not the echo of one of our values

    def on_echo(rec):
        v = rec.value
        with cond:
            if (rec.key == ECHO_KEY and isinstance(v, dict) and isinstance(v.get("echo"), dict)
                    and isinstance(v["echo"].get("n"), int)):
                echoed.add(v["echo"]["n"])
                cond.notify_all()
            elif len(strays) < 10:
                strays.append({"key": rec.key, "value": v})

    # Subscribe before registering: the echo app may answer as soon as it is assigned to us.
    due.observe(INTEREST, on_echo)
    due.init(roles=["producer", "consumer"],
             interests=[{"key": INTEREST, "freq": 100}],
             capabilities=[{"key": CAPABILITY, "freq": 50}])

    cap = parse_key(f"{CAPABILITY}@{APP_ID}", concrete=True)

    def served(a):  # does this assignment set give our capability to the echo app?
        return any(CONSUMER in item.get("consumers", []) and
                   parse_key(item["key"]).matches(cap) for item in a.get("assignments", []))

    assignment = due.wait_assignment(left(), served)
    sent = 0
    error = None
    if assignment is None:
        error = (f"no assignment naming consumer '{CONSUMER}' for {CAPABILITY} within "
                 f"{args.timeout:g} s (is the Coordinator running? is sdnator-example-echo?)")
    else:
        freq = due.assigned_freq(CAPABILITY)
        interval = 1.0 / freq if freq else 0.0
        last = 0.0
        for i in range(1, args.count + 1):
            with cond:
                if not cond.wait_for(lambda: sent - len(echoed) < args.window, left()):
                    break
            # One value per pacing slot: DUE would otherwise keep only the latest of a burst.
            # The slot opens one interval after the previous write went out, so measure from
            # after that write returned.
            time.sleep(max(0.0, last + interval - time.monotonic()))
            due.write(CAPABILITY, {"n": i})
            last = time.monotonic()
            sent += 1
        with cond:
            cond.wait_for(lambda: len(echoed) >= args.count, left())

    missing = sorted(set(range(1, args.count + 1)) - echoed)
    summary = {"app": APP_ID, "instance": due.instance,
               "assignment": assignment or due.assignment(),  # the last one seen, on timeout
               "sent": sent, "echoes": len(echoed), "missing": missing,
               "strays": strays, "stats": dict(due.stats)}
    due.close()
    print(json.dumps(summary), flush=True)
    if error is None and missing:
        error = (f"timed out after {args.timeout:g} s: sent {sent} of {args.count}, "
                 f"{len(missing)} not echoed (first: {missing[:5]})")
    if error:
        print(f"counter_app: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except redis.RedisError as e:
        print(f"counter_app: Redis: {e}", file=sys.stderr)
        sys.exit(1)
