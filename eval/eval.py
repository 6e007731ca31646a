#!/usr/bin/env python3
"""The paper's evaluation (seed 000: sections 4.4-4.6, 5, Table 3) on real Open vSwitch, plus the
measurement it leaves out: does address mutation defeat reconnaissance?

For every runtime mode (sharded, cooperative) and every run, on a fresh campus fabric built by
scripts/testbed.sh with a fresh controller (topology + cpam + forwarding, Table 1 defaults), every
manifest pair (h_i -> h_{i+N/2}) does the same five phases, with a settling time between them:

  udp         iperf3 constant-bit-rate UDP per pair -> loss %, jitter
  icmp        resolve the partner's VIP, ping it -> first-packet (reactive) RTT, steady RTT
  tcp         iperf3 bulk TCP, every pair at once, then a few pairs one at a time (host-bound)
  continuity  one long-lived TCP session per pair (sdnator-session hold) spanning >= 1 rotation:
              setup-time failures and mid-session breaks counted apart
  churn       short-lived TCP connections per pair (sdnator-session churn: resolve right before
              connecting, bounded retry) -> flow-setup rate and table peak from ovs-ofctl
              dump-flows snapshots, RPPT under load from the controller's per-event samples

The controller's CPU %, RSS and thread count are sampled every 0.5 s throughout. Then the
defense-effectiveness phase: an attacker host scans the VIP range (nmap and sdnator-session scan),
then re-probes what it found until 3 rotations have passed, for a static network (CPAM off) and a
few rotation intervals; with CPAM the attacker also adds an address in no protected list
(10.0.200.1) and scans the real /16 from it, which must find no real address. Output layout:
eval/SCHEMA.md; eval/report.py turns it into the report.

Run as root through eval/run.sh (which installs and builds first). See eval/README.md.
"""
import argparse
import csv
import datetime
import ipaddress
import json
import math
import os
import platform
import random
import re
import shlex
import signal
import sqlite3
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))
import reportlib  # noqa: E402
TESTBED = os.path.join(ROOT, "scripts", "testbed.sh")
DNS_IP, ZONE, VIP_RANGE = "10.0.255.253", "cpam.lan", "10.0.128.0/18"
ECHO_PORT, IPERF_PORT, SCAN_PORT = 5000, 5201, 5000
GRACE_ACCEPT_MS = 5000   # [cpam] grace_accept_ms default: a retired VIP binds new sessions this long
# The "unlisted source" scan (CPAM configs): the attacker adds an address of its own choosing that
# is in no protected list and scans the real /16 from it. 10.0.200.1 collides with nothing the
# testbed or CPAM hands out: hosts are 10.0.X.Y with X = (n-1)//250 <= 15 (at most 4000 hosts,
# scripts/testbed.sh), VIPs are in VIP_RANGE (10.0.128-191.x), the DNS is 10.0.255.253;
# unlisted_scan() checks this against the manifest before it adds the address.
UNLISTED_SRC, UNLISTED_RANGE = "10.0.200.1", "10.0.0.0/16"

# Scales: "small" is what CI runs (correctness only), "paper" the paper's configuration.
SCALES = {
    "small": dict(hosts=16, runs=1, interval_ms=10000, settle_s=2, udp_s=3, udp_spread_s=1, udp_mbps=1.0, icmp_count=5, icmp_spread_s=2,
                  tcp_s=2, tcp_single=2, tcp_single_s=1, continuity_extra_s=5, churn_s=6, churn_rate=2.0,
                  effect_intervals=[10000, 5000]),
    "paper": dict(hosts=500, runs=10, interval_ms=60000, settle_s=4, udp_s=10, udp_spread_s=5, udp_mbps=0.2, icmp_count=5, icmp_spread_s=10,
                  tcp_s=4, tcp_single=2, tcp_single_s=2, continuity_extra_s=8, churn_s=20, churn_rate=0.25,
                  effect_intervals=[60000, 20000, 10000]),
}


class EvalError(Exception):
    """A run could not be set up or measured (not a bad figure: those are recorded)."""


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] eval: {msg}", file=sys.stderr, flush=True)


def summary(vals):
    """Nearest-rank {n, p50, p90, p95, p99, max, mean}, to 4 decimals."""
    return reportlib.summary(vals, digits=4)


def mean(vals):
    v = [x for x in vals if x is not None]
    return sum(v) / len(v) if v else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, timeout=None, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise EvalError(f"{' '.join(map(str, cmd))} exited {r.returncode}: {(r.stderr or r.stdout).strip()[-800:]}")
    return r


def netns(ns, *cmd):
    return ["ip", "netns", "exec", ns, *map(str, cmd)]


class Procs:
    """Background processes of one run, each with its output in a file; all killed at cleanup."""

    def __init__(self):
        self.procs = []

    def start(self, cmd, out_path):
        f = open(out_path, "w")
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        f.close()
        self.procs.append(p)
        return p

    def kill_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []


def run_parallel(cmds, limit, timeout):
    """Run [(cmd, out_path)] with at most `limit` at once; returns exit codes (None = killed)."""
    procs, rcs, i = {}, [None] * len(cmds), 0
    deadline = time.monotonic() + timeout
    while i < len(cmds) or procs:
        while i < len(cmds) and len(procs) < limit:
            cmd, out = cmds[i]
            with open(out, "w") as f:
                procs[i] = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            i += 1
        for j, p in list(procs.items()):
            if p.poll() is not None:
                rcs[j] = p.returncode
                del procs[j]
        if time.monotonic() > deadline:
            for p in procs.values():
                p.kill()
                p.wait()
            break
        time.sleep(0.02)
    return rcs


class ProcSampler(threading.Thread):
    """The controller's CPU (utime+stime), RSS and threads from /proc every `period` s."""

    def __init__(self, pid, t0, period=0.5):
        super().__init__(daemon=True)
        self.pid, self.t0, self.period = pid, t0, period
        self.hz = os.sysconf("SC_CLK_TCK")
        self.samples = []   # [t_s, cpu_pct over the last period, rss_kb, threads]
        self.stop_ev = threading.Event()

    def read(self):
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])   # utime, stime (fields 14, 15)
        rss = threads = None
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        return ticks, rss, threads

    def run(self):
        try:
            prev_ticks, _, _ = self.read()
        except OSError:
            return
        prev_t = time.monotonic()
        while not self.stop_ev.wait(self.period):
            try:
                ticks, rss, threads = self.read()
            except OSError:
                return
            now = time.monotonic()
            cpu = 100.0 * (ticks - prev_ticks) / self.hz / (now - prev_t)
            self.samples.append([round(now - self.t0, 3), round(cpu, 2), rss, threads])
            prev_ticks, prev_t = ticks, now

    def stop(self):
        self.stop_ev.set()
        self.join(timeout=3)




class FlowSampler(threading.Thread):
    """ovs-ofctl dump-flows snapshots of every bridge (the paper's FSR and table-occupancy source).
    A flow is new in a snapshot when its match/priority/actions were not in the previous snapshot
    of its bridge, or its duration is shorter than the time since that snapshot (re-added)."""

    def __init__(self, bridges, t0, period=1.0):
        super().__init__(daemon=True)
        self.bridges, self.t0, self.period = bridges, t0, period
        self.snapshots = []   # [t_s, total, new]
        self.errors = 0
        self.stop_ev = threading.Event()
        self.prev = {b: (None, set()) for b in bridges}

    def snap(self):
        total = new = 0
        for b in self.bridges:
            r = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", b], capture_output=True, text=True)
            if r.returncode != 0:
                self.errors += 1
                continue
            t = time.monotonic()
            prev_t, prev_keys = self.prev[b]
            keys = set()
            for line in r.stdout.splitlines():
                # " cookie=C, duration=D s, table=T, n_packets=.., ..., priority=P,MATCH actions=A"
                i, j = line.find("duration="), line.find("priority=")
                if i < 0:
                    continue
                key = line[:i] + (line[j:] if j >= 0 else line[line.find("table="):])
                keys.add(key)
                if prev_t is not None:
                    k = line.find("s,", i)
                    if key not in prev_keys or float(line[i + 9:k]) < t - prev_t:
                        new += 1
            total += len(keys)
            self.prev[b] = (t, keys)
        return total, new

    def run(self):
        self.snap()   # the baseline: flows present before the phase are not new
        self.snapshots.append([round(time.monotonic() - self.t0, 3), sum(len(k) for _, k in self.prev.values()), 0])
        while not self.stop_ev.wait(self.period):
            total, new = self.snap()
            self.snapshots.append([round(time.monotonic() - self.t0, 3), total, new])

    def stop(self):
        self.stop_ev.set()
        self.join(timeout=30)
        total, new = self.snap()   # the last one: flows installed since the previous snapshot
        self.snapshots.append([round(time.monotonic() - self.t0, 3), total, new])


class Controller:
    """One sdnator on a fresh testbed: up, config, start, discovery, teardown."""

    def __init__(self, cfg, work, apps, cpam_keys):
        self.cfg, self.work = cfg, work
        os.makedirs(work, exist_ok=True)
        self.apps, self.cpam_keys = apps, cpam_keys
        self.proc = None
        self.procs = Procs()
        self.prefix = None
        for _ in range(50):
            p = "e%04x-" % random.randrange(65536)
            if not os.path.exists(f"/run/sdnator-testbed/{p}") and not os.path.exists(f"/run/netns/{p}h1"):
                self.prefix = p
                break
        if self.prefix is None:
            raise EvalError("no free testbed prefix")
        self.port = free_port()
        self.tb = ["bash", TESTBED, "--prefix", self.prefix, "--port", str(self.port), "--resolver", DNS_IP]
        self.stats_path = os.path.join(work, "stats.json")
        self.log_path = os.path.join(work, "sdnator.log")

    def up(self):
        c = self.cfg
        shape = ["up", "campus", str(c.hosts), "--cores", str(c.cores), "--aggs", str(c.aggs), "--edges",
                 str(c.edges), "--dual-homed"]
        t = time.monotonic()
        r = subprocess.run(self.tb + shape, capture_output=True, text=True)
        with open(os.path.join(self.work, "up.log"), "w") as f:
            f.write(r.stdout + r.stderr)
        if r.returncode != 0:
            raise EvalError(f"testbed up failed: {r.stderr.strip()[-600:]}")
        self.build_s = time.monotonic() - t
        with open(f"/run/sdnator-testbed/{self.prefix}/manifest.json") as f:
            self.manifest = json.load(f)
        with open(os.path.join(self.work, "manifest.json"), "w") as f:
            json.dump(self.manifest, f)
        self.hosts = {h["name"]: h for h in self.manifest["hosts"]}
        self.pairs = [(p["a"], p["b"]) for p in self.manifest["pairs"]]
        self.bridges = [s["name"] for s in self.manifest["switches"]]   # the OVS bridge names

    def ns(self, host):
        return self.hosts[host]["netns"]

    def start(self):
        hosts_txt = os.path.join(self.work, "hosts.txt")
        with open(hosts_txt, "w") as f:
            for h in self.manifest["hosts"]:
                f.write(f"{h['name']} {h['ip']}\n")
        toml = [f"[controller]\napps = {json.dumps(self.apps)}\n",
                f"[sqlite]\npath = \"{os.path.join(self.work, 'archive.db')}\"\n"]
        if "cpam" in self.apps:
            keys = {"zone": ZONE, "dns_ip": DNS_IP, "hosts_file": hosts_txt, **self.cpam_keys}
            toml.append("[cpam]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items()))
        cfg_path = os.path.join(self.work, "sdnator.toml")
        with open(cfg_path, "w") as f:
            f.write("".join(toml))
        args = [self.cfg.sdnator, "run", "-c", cfg_path, "--listen", f"127.0.0.1:{self.port}", "--stats-file",
                self.stats_path, "--log-level", "info", "--archive-path", os.path.join(self.work, "archive.db")]
        if self.cfg.shards:
            args += ["--shards", str(self.cfg.shards)]
        with open(self.log_path, "w") as f:
            self.proc = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        t = time.monotonic()
        while True:
            if self.proc.poll() is not None:
                raise EvalError(f"sdnator exited at start-up ({self.proc.returncode}); see {self.log_path}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    break
            if time.monotonic() - t > 10:
                raise EvalError("sdnator not listening after 10 s")
            time.sleep(0.05)
        run(self.tb + ["wait-connected", "60"], timeout=90)
        nsw, nlinks = len(self.manifest["switches"]), self.manifest["expected_links"]
        t = time.monotonic()
        while True:
            topo = self.stats().get("apps", {}).get("topology", {})
            if topo.get("switches") == nsw and topo.get("links") == nlinks and topo.get("pending_ports") == 0:
                break
            if time.monotonic() - t > 120:
                raise EvalError(f"discovery incomplete after 120 s: {topo.get('switches')}/{nsw} switches, "
                                f"{topo.get('links')}/{nlinks} links")
            time.sleep(0.2)
        self.nsw, self.nlinks = nsw, nlinks

    def stats(self):
        try:
            with open(self.stats_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def teach(self, limit=50):
        """Every host sends one DNS query (its partner's name): the controller learns where it is,
        so every rotation pre-installs every host's next VIP rule (as on a campus where all are
        active)."""
        names = list(self.hosts)
        cmds = [(netns(self.ns(h), self.cfg.session, "resolve", f"{names[(i + 1) % len(names)]}.{ZONE}"),
                 os.devnull) for i, h in enumerate(names)]
        rcs = run_parallel(cmds, limit, timeout=120)
        return sum(1 for rc in rcs if rc != 0)

    def rotations(self, t0_wall):
        """Rotations published (controller log): [{epoch, t_s (from t0_wall), took_ms}]."""
        rx = re.compile(r"^(\S+) info .*cpam: epoch (\d+) published: (\d+) hosts rotated in ([\d.]+) ms")
        out = []
        try:
            with open(self.log_path) as f:
                for line in f:
                    m = rx.search(line)
                    if m:
                        t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp()
                        out.append({"epoch": int(m.group(2)), "t_s": round(t - t0_wall, 3),
                                    "took_ms": float(m.group(4)), "rotated": int(m.group(3))})
        except OSError:
            pass
        return out

    def stop(self):
        """SIGTERM (the controller flushes its RPPT samples); returns its exit status."""
        self.procs.kill_all()
        rc = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        elif self.proc is not None:
            rc = self.proc.returncode
        return rc

    def down(self):
        self.stop()
        subprocess.run(self.tb + ["down"], capture_output=True, text=True)


# ---------------------------------------------------------------- the five phases

def iperf_json(path):
    try:
        with open(path) as f:
            text = f.read()
        return json.loads(text[text.index("{"):]) if "{" in text else None
    except (OSError, ValueError):
        return None


def phase_udp(c, d, cfg):
    # Starts spread over udp_spread_s (250 iperf3 control connections at once are a setup burst
    # of their own); the streams then overlap for most of their udp_s.
    step = cfg.udp_spread_s / max(1, len(c.pairs))
    # iperf3 wakes every --pacing-timer us (default 1000) to send what its budget allows: 250
    # clients at the default are 250,000 wake-ups a second, enough to starve the 2-core machine
    # (and with it the switches' LLDP). One wake-up per datagram is all a constant rate needs.
    pacing_us = int(min(100000, max(1000, 1000 * 8 / (cfg.udp_mbps * 1e6) * 1e6)))
    cmds = [(netns(c.ns(a), "sh", "-c", 'sleep "$1"; shift; exec "$@"', "sh", f"{i * step:.3f}", "iperf3", "-c",
                   f"{b}.{ZONE}", "-p", IPERF_PORT, "-u", "-b", f"{cfg.udp_mbps}M", "-l", 1000, "-t", cfg.udp_s, "--pacing-timer", pacing_us,
                   "--connect-timeout", 3000, "--json"),
             os.path.join(d, f"udp.{a}.json")) for i, (a, b) in enumerate(c.pairs)]
    run_parallel(cmds, len(cmds), timeout=cfg.udp_spread_s + cfg.udp_s + 60)
    rows = []
    for a, b in c.pairs:
        j = iperf_json(os.path.join(d, f"udp.{a}.json")) or {}
        s = j.get("end", {}).get("sum", {})
        ok = "error" not in j and "lost_percent" in s
        rows.append({"a": a, "b": b, "loss_pct": s.get("lost_percent") if ok else None,
                     "jitter_ms": s.get("jitter_ms") if ok else None, "packets": s.get("packets") if ok else None,
                     "error": j.get("error") if not ok else None})
    good = [r for r in rows if r["loss_pct"] is not None]
    return {"pairs": len(rows), "ok": len(good), "rate_mbps": cfg.udp_mbps, "seconds": cfg.udp_s,
            "loss_pct_mean": mean(r["loss_pct"] for r in good), "jitter_ms_mean": mean(r["jitter_ms"] for r in good),
            "per_pair": rows}


PING_LINE = re.compile(r"icmp_seq=(\d+) .*time=([\d.]+) ms")


def phase_icmp(c, d, cfg):
    # The pairs start spread evenly over icmp_spread_s (each one resolves, then pings right away),
    # so the first echo measures a reactive setup at a steady arrival rate, not a 250-setup burst.
    step = cfg.icmp_spread_s / max(1, len(c.pairs))
    script = (f'sleep "$2"; v=$({shlex.quote(cfg.session)} resolve "$1" --count 1 2>/dev/null) || {{ echo RESOLVE_FAILED; exit 1; }}; '
              f'v=${{v%% *}}; echo "VIP=$v"; exec ping -n -c {cfg.icmp_count} -i 0.2 -W 2 "$v"')
    cmds = [(netns(c.ns(a), "sh", "-c", script, "sh", f"{b}.{ZONE}", f"{i * step:.3f}"), os.path.join(d, f"icmp.{a}.txt"))
            for i, (a, b) in enumerate(c.pairs)]
    run_parallel(cmds, len(cmds), timeout=cfg.icmp_spread_s + cfg.icmp_count * 0.2 + 30)
    rows = []
    for a, b in c.pairs:
        vip, rtt = None, {}
        try:
            with open(os.path.join(d, f"icmp.{a}.txt")) as f:
                for line in f:
                    if line.startswith("VIP="):
                        vip = line[4:].strip()
                    m = PING_LINE.search(line)
                    if m:
                        rtt.setdefault(int(m.group(1)), float(m.group(2)))
        except OSError:
            pass
        steady = [v for k, v in rtt.items() if k > 1]
        rows.append({"a": a, "b": b, "vip": vip, "first_ms": rtt.get(1), "steady_ms": mean(steady),
                     "lost": cfg.icmp_count - len(rtt)})
    return {"pairs": len(rows), "ok": sum(1 for r in rows if r["first_ms"] is not None),
            "first_rtt_ms": summary(r["first_ms"] for r in rows),
            "steady_rtt_ms": summary(r["steady_ms"] for r in rows), "per_pair": rows}


def phase_tcp(c, d, cfg):
    def mbps(path):
        j = iperf_json(path) or {}
        s = j.get("end", {}).get("sum_received", {})
        return None if "error" in j or "bits_per_second" not in s else s["bits_per_second"] / 1e6
    cmds = [(netns(c.ns(a), "iperf3", "-c", f"{b}.{ZONE}", "-p", IPERF_PORT, "-t", cfg.tcp_s,
                   "--connect-timeout", 3000, "--json"), os.path.join(d, f"tcp.{a}.json")) for a, b in c.pairs]
    run_parallel(cmds, len(cmds), timeout=cfg.tcp_s + 60)
    conc = [mbps(os.path.join(d, f"tcp.{a}.json")) for a, _ in c.pairs]
    good = [x for x in conc if x is not None]
    single = []
    for a, b in c.pairs[:cfg.tcp_single]:
        time.sleep(0.5)
        out = os.path.join(d, f"tcp1.{a}.json")
        run_parallel([(netns(c.ns(a), "iperf3", "-c", f"{b}.{ZONE}", "-p", IPERF_PORT, "-t", cfg.tcp_single_s,
                               "--connect-timeout", 3000, "--json"), out)], 1, timeout=cfg.tcp_single_s + 30)
        single.append(mbps(out))
    return {"concurrent": {"pairs": len(conc), "ok": len(good), "seconds": cfg.tcp_s,
                           "aggregate_mbps": round(sum(good), 2) if good else None,
                           "per_pair_mbps_mean": mean(good)},
            "single": {"pairs": len(single), "seconds": cfg.tcp_single_s,
                       "mbps": [None if x is None else round(x, 2) for x in single], "mbps_mean": mean(single)}}


SETUP_ERRORS = {"resolve_failed", "connect_timeout", "refused", "unreachable"}


def phase_continuity(c, d, cfg, seconds):
    cmds = [(netns(c.ns(a), cfg.session, "hold", f"{b}.{ZONE}", ECHO_PORT, "--duration", seconds,
                   "--interval-ms", 500, "--max-stall-ms", 3000, "--connect-timeout-ms", 3000, "--timeout-ms", 5000,
                   "--json", os.path.join(d, f"hold.{a}.json")), os.path.join(d, f"hold.{a}.log"))
            for a, b in c.pairs]
    run_parallel(cmds, len(cmds), timeout=seconds + 60)
    setup = mid = stalled = est = 0
    errors, gaps = {}, []
    for a, _ in c.pairs:
        try:
            with open(os.path.join(d, f"hold.{a}.json")) as f:
                j = json.load(f)
        except (OSError, ValueError):
            j = {"error": "no_result", "echoes": 0}
        e = j.get("error")
        if e:
            errors[e] = errors.get(e, 0) + 1
        # A session that never carried an echo failed at setup (the paper's setup-time race); one
        # that did and then lost its connection broke mid-session.
        if e in SETUP_ERRORS or e == "no_result" or (e and not j.get("echoes")):
            setup += 1
            continue
        est += 1
        gaps.append(j.get("max_gap_ms"))
        if e:
            mid += 1
        elif not j.get("ok"):
            stalled += 1   # connected throughout, but a gap above --max-stall-ms
    n = len(c.pairs)
    return {"pairs": n, "established": est, "setup_failures": setup, "mid_session_breaks": mid, "stalled": stalled,
            "continuity_pct": round(100.0 * (n - setup - mid) / n, 3) if n else None, "seconds": seconds,
            "max_gap_ms": max((g for g in gaps if g is not None), default=None), "errors": errors}


def phase_churn(c, d, cfg, t0):
    count = max(1, int(round(cfg.churn_rate * cfg.churn_s)))
    fs = FlowSampler(c.bridges, t0)
    fs.start()
    t_start = time.monotonic()
    # Each pair opens a connection every 1/churn_rate s, the pairs' first ones spread evenly over
    # that spacing: together a steady len(pairs) x churn_rate per second for churn_s (Poisson
    # arrivals per pair would leave a long tail: the slowest of 250 pairs ends at ~2.5 x churn_s).
    spacing_ms = int(round(1000 / cfg.churn_rate))
    step = spacing_ms / 1000 / max(1, len(c.pairs))
    cmds = [(netns(c.ns(a), "sh", "-c", 'sleep "$1"; shift; exec "$@"', "sh", f"{i * step:.3f}", cfg.session,
                   "churn", f"{b}.{ZONE}", ECHO_PORT, "--count", count, "--spacing-ms", spacing_ms,
                   "--timeout-ms", 3000, "--resolve-tries", 3, "--seed", i + 1, "--json",
                   os.path.join(d, f"churn.{a}.json")), os.path.join(d, f"churn.{a}.log"))
            for i, (a, b) in enumerate(c.pairs)]
    run_parallel(cmds, len(cmds), timeout=cfg.churn_s * 3 + 60)
    elapsed = time.monotonic() - t_start
    time.sleep(1.0)   # the last connections' flows are in the last snapshot
    fs.stop()
    tot = ok = 0
    outcomes = {}
    for a, _ in c.pairs:
        try:
            with open(os.path.join(d, f"churn.{a}.json")) as f:
                j = json.load(f)
        except (OSError, ValueError):
            tot += count
            outcomes["no_result"] = outcomes.get("no_result", 0) + count
            continue
        tot += j.get("count", count)
        ok += j.get("succeeded", 0)
        for k, v in j.get("outcomes", {}).items():
            outcomes[k] = outcomes.get(k, 0) + v
    new = sum(s[2] for s in fs.snapshots)
    span = fs.snapshots[-1][0] - fs.snapshots[0][0] if len(fs.snapshots) > 1 else 0
    return {"pairs": len(c.pairs), "attempted": tot, "ok": ok, "failed": tot - ok, "outcomes": outcomes,
            "seconds": round(elapsed, 2), "conn_per_s": round(ok / elapsed, 2) if elapsed > 0 else None,
            "fsr_flows_per_s": round(new / elapsed, 2) if elapsed > 0 else None, "new_flows": new,
            "table_peak": max((s[1] for s in fs.snapshots), default=None), "snapshot_span_s": round(span, 2),
            "snapshot_errors": fs.errors, "snapshots": fs.snapshots}


def read_rppt(path, windows):
    """Per-event RPPT samples (ms) split by phase: churn = PacketIn read during the churn phase,
    idle = during any other phase."""
    idle, churn = [], []
    ch = windows.get("churn")
    measured = [w for k, w in windows.items() if k != "churn"]
    try:
        with open(path) as f:
            for r in csv.DictReader(f):
                t, ms = int(r["rx_ns"]), int(r["rppt_ns"]) / 1e6
                if ch and ch[0] <= t <= ch[1]:
                    churn.append(ms)
                elif any(a <= t <= b for a, b in measured):
                    idle.append(ms)
    except (OSError, KeyError, ValueError):
        pass
    return idle, churn


def run_once(cfg, mode, k, out):
    d = os.path.join(out, mode, f"run-{k}")
    os.makedirs(d, exist_ok=True)
    keys = {"runtime": mode, "rotation_interval_ms": cfg.interval_ms, "rppt_samples": os.path.join(d, "rppt.csv")}
    c = Controller(cfg, d, ["topology", "cpam", "forwarding"], keys)
    problems = []
    res = {"mode": mode, "run": k}
    t_run = time.monotonic()
    try:
        c.up()
        c.start()
        log(f"[{mode} run {k}] {c.nsw} switches, {c.nlinks} links discovered (fabric built in {c.build_s:.1f} s)")
        for a, b in c.pairs:   # servers on every pair's b side: TCP/UDP echo and iperf3
            c.procs.start(netns(c.ns(b), cfg.session, "serve", "--tcp", ECHO_PORT), os.path.join(d, f"serve.{b}.log"))
            c.procs.start(netns(c.ns(b), "iperf3", "-s", "-p", IPERF_PORT), os.path.join(d, f"iperf3-s.{b}.log"))
        bad = c.teach()
        if bad:
            problems.append(f"{bad} hosts' first DNS query failed")
        time.sleep(1.0)
        t0, t0_wall = time.monotonic(), time.time()
        sampler = ProcSampler(c.proc.pid, t0)
        sampler.start()
        windows, phases = {}, {}
        continuity_s = cfg.interval_ms // 1000 + cfg.continuity_extra_s

        def phase(name, fn):
            if not c.alive():
                raise EvalError(f"sdnator died before phase {name}")
            log(f"[{mode} run {k}] phase {name}")
            a = time.monotonic()
            phases[name] = fn()
            windows[name] = [a, time.monotonic()]
            time.sleep(cfg.settle_s)

        phase("udp", lambda: phase_udp(c, d, cfg))
        phase("icmp", lambda: phase_icmp(c, d, cfg))
        phase("tcp", lambda: phase_tcp(c, d, cfg))
        # The sessions must span a rotation: they last until continuity_extra_s after the next
        # publish (rotations are periodic: the last publish + the interval), at most an interval
        # + continuity_extra_s when none was seen yet.
        rots = c.rotations(t0_wall)
        if rots:
            nxt = rots[-1]["t_s"] + cfg.interval_ms / 1000 - (time.time() - t0_wall)
            while nxt < 2:
                nxt += cfg.interval_ms / 1000
            continuity_s = int(math.ceil(nxt + rots[-1]["took_ms"] / 1000 + cfg.continuity_extra_s))
        phase("continuity", lambda: phase_continuity(c, d, cfg, continuity_s))
        phase("churn", lambda: phase_churn(c, d, cfg, t0))
        sampler.stop()
        if not c.alive():
            raise EvalError(f"sdnator died during the run (exit status {c.proc.returncode})")
        stats = c.stats()
        rots = c.rotations(t0_wall)
        rc = c.stop()
        if rc != 0:
            problems.append(f"sdnator exited {rc} on SIGTERM")
        ns_windows = {k2: [int(a * 1e9), int(b * 1e9)] for k2, (a, b) in windows.items()}
        idle, churn = read_rppt(os.path.join(d, "rppt.csv"), ns_windows)
        with open(os.path.join(d, "rppt.json"), "w") as f:
            json.dump({"idle": [round(x, 4) for x in idle], "churn": [round(x, 4) for x in churn]}, f)
        rel = {k2: [round(a - t0, 3), round(b - t0, 3)] for k2, (a, b) in windows.items()}
        cw = rel["continuity"]
        phases["continuity"]["rotations_during"] = sum(1 for r in rots if cw[0] <= r["t_s"] <= cw[1])
        smp = sampler.samples
        by_phase = {}
        for name, (a, b) in rel.items():
            s = [x for x in smp if a <= x[0] <= b]
            by_phase[name] = {"cpu_pct": round(mean(x[1] for x in s), 2) if s else None,
                              "rss_kb_peak": max((x[2] for x in s), default=None)}
        res.update({
            "fabric": {"hosts": len(c.hosts), "switches": c.nsw, "links": c.nlinks, "pairs": len(c.pairs),
                       "build_s": round(c.build_s, 2)},
            "phases": phases,
            "rppt": {"idle": summary(idle), "churn": summary(churn), "all": summary(idle + churn)},
            "controller": {"cpu_pct_mean": round(mean(x[1] for x in smp), 2) if smp else None,
                           "cpu_pct_max": max((x[1] for x in smp), default=None),
                           "rss_kb_mean": round(mean(x[2] for x in smp)) if smp else None,
                           "rss_kb_peak": max((x[2] for x in smp), default=None),
                           "threads": max((x[3] for x in smp), default=None), "shards": stats.get("shards"),
                           "by_phase": by_phase, "samples": smp},
            "rotations": rots,
            "phase_windows": rel,
            "counters": {k2: v for k2, v in stats.get("apps", {}).get("cpam", {}).items() if isinstance(v, int)},
            "topology": {k2: stats.get("apps", {}).get("topology", {}).get(k2)
                         for k2 in ("link_timeouts", "links_removed", "links_added", "links")},
        })
        # Correctness (what the small scale asserts): every phase produced numbers, no setup
        # failure, no mid-session break, a rotation inside the continuity phase.
        P = phases
        if P["udp"]["ok"] < P["udp"]["pairs"]:
            problems.append(f"udp: {P['udp']['pairs'] - P['udp']['ok']} pairs produced no figures")
        if P["icmp"]["ok"] < P["icmp"]["pairs"]:
            problems.append(f"icmp: {P['icmp']['pairs'] - P['icmp']['ok']} pairs had no first reply")
        if P["tcp"]["concurrent"]["ok"] < P["tcp"]["concurrent"]["pairs"] or None in P["tcp"]["single"]["mbps"]:
            problems.append("tcp: a transfer produced no figures")
        co = P["continuity"]
        if co["setup_failures"] or co["mid_session_breaks"]:
            problems.append(f"continuity: {co['setup_failures']} setup failures, {co['mid_session_breaks']} mid-session breaks "
                            f"({co['errors']})")
        if co["rotations_during"] < 1:
            problems.append("continuity: no rotation was published during the phase")
        if P["churn"]["failed"]:
            problems.append(f"churn: {P['churn']['failed']} of {P['churn']['attempted']} connections failed "
                            f"({P['churn']['outcomes']})")
        if not P["churn"]["new_flows"]:
            problems.append("churn: no new flows seen in the snapshots")
        if res["topology"]["link_timeouts"]:
            problems.append(f"topology: {res['topology']['link_timeouts']} links timed out (LLDP) during the run: "
                            "the emulation stalled the switches or the controller")
        if not idle or not churn:
            problems.append(f"rppt: {len(idle)} idle and {len(churn)} churn samples")
    except EvalError as e:
        problems.append(str(e))
        res.setdefault("phases", {})
    finally:
        c.down()
    res["problems"] = problems
    res["ok"] = not problems
    res["wall_s"] = round(time.monotonic() - t_run, 1)
    with open(os.path.join(d, "result.json"), "w") as f:
        json.dump(res, f, indent=1)
    return res


# ---------------------------------------------------------------- defense effectiveness

def nmap_scan(c, attacker, cidr, d, tag):
    out = os.path.join(d, f"nmap.{tag}.txt")
    t = time.monotonic()
    cmd = netns(c.ns(attacker), "nmap", "-n", "-sS", "-p", SCAN_PORT, "-T4", "--min-rate", 3000, "--max-retries", 1,
                "-oG", "-", cidr)
    with open(out, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=900)
    took = time.monotonic() - t
    found, up = [], set()
    with open(out) as f:
        for line in f:
            m = re.match(r"Host: (\S+) .*Ports: \d+/(open|closed)/", line)
            if m:
                found.append(m.group(1))
            m = re.match(r"Host: (\S+) .*Status: Up", line)
            if m:
                up.add(m.group(1))
    if r.returncode != 0:
        raise EvalError(f"nmap exited {r.returncode} (see {out})")
    return sorted(set(found)), took, len(up)


def probe_scan(c, attacker, d, tag, cidr=None, targets=None, timeout_ms=600, parallel=2048):
    out = os.path.join(d, f"probe.{tag}.json")
    args = [cidr, SCAN_PORT] if cidr else ["--targets", targets, SCAN_PORT]
    t = time.monotonic()
    r = subprocess.run(netns(c.ns(attacker), c.cfg.session, "scan", *args, "--timeout-ms", timeout_ms, "--parallel",
                             parallel, "--json", out), capture_output=True, text=True, timeout=900)
    took = time.monotonic() - t
    try:
        with open(out) as f:
            j = json.load(f)
    except (OSError, ValueError):
        raise EvalError(f"sdnator-session scan gave no result: {r.stderr.strip()[-400:]}")
    return sorted(x["address"] for x in j["alive_list"]), took


def gnmap(path):
    """nmap -oG output: ({address with status Up}, {address with an open or closed port})."""
    up, answered = set(), set()
    with open(path) as f:
        for line in f:
            m = re.match(r"Host: (\S+) .*Status: Up", line)
            if m:
                up.add(m.group(1))
            m = re.match(r"Host: (\S+) .*Ports: \d+/(open|closed)/", line)
            if m:
                answered.add(m.group(1))
    return up, answered


def unlisted_scan(c, attacker, d, source=UNLISTED_SRC, cidr=UNLISTED_RANGE):
    """The attacker walks around the address mutation: it adds `source` (in no protected list) to
    its eth0 and scans the block of the hosts' REAL addresses from it, as an attacker would:
    first an ARP discovery sweep (nmap -sn: on the local segment, as root, nmap's host discovery
    is ARP), then a SYN scan of SCAN_PORT on whatever answered. The defense holds when no real
    address of a protected host is found. The address is always removed again.

    Speed (the added time per CPAM config): with nothing answering, nmap's ARP sweep is bound by
    its wait per host group, not the wire: groups of 4,096 addresses, 200 ms initial ARP timeout
    (nmap 7.93: groups of 251 unanswered addresses took 0.22 s each between two namespaces). With
    --min-rate 20000 --max-retries 0 a group is sent in ~0.2 s, so a /16 (16 groups) takes
    ~16 x 0.4 s: 8.5 s measured on the small campus, nothing answering (2026-12-04, sweep + no SYN
    step; on a static fabric, where all 15 other hosts answered, 8.6 s with the SYN step; nmap's
    default timing and retries take far longer). The
    price of no retry: each address is asked once, so an ARP request lost in the fabric (20,000 a
    second through userspace OVS) would hide that one address; a defense that lets the source
    through shows up as many addresses, not one. The SYN scan (-Pn, 1 retry: only the addresses
    the sweep found) runs only if the sweep found any. Returns the "unlisted" entry of
    effect.json; raises EvalError if a scan fails or the source collides with a testbed address."""
    net = ipaddress.ip_network(cidr)
    src = ipaddress.ip_address(source)
    me = c.hosts[attacker]
    on_link = ipaddress.ip_network(f"{me['ip']}/{me['prefix_len']}", strict=False)
    real = {h["ip"] for n, h in c.hosts.items() if n != attacker}
    taken = {h["ip"] for h in c.hosts.values()} | {DNS_IP}
    if source in taken or src in ipaddress.ip_network(VIP_RANGE) or src not in on_link or not net.subnet_of(on_link):
        raise EvalError(f"unlisted source {source}: collides with a testbed address or the VIP range, "
                        f"or it or {cidr} is not on the attacker's link {on_link}")
    ns, addr = c.ns(attacker), f"{source}/{on_link.prefixlen}"
    own = {me["ip"], source}
    sweep = ["nmap", "-n", "-sn", "-e", "eth0", "-S", source, "--min-rate", 20000, "--max-retries", 0]
    syn = ["nmap", "-n", "-sS", "-Pn", "-p", SCAN_PORT, "-e", "eth0", "-S", source, "--max-retries", 1]
    res = {"source": source, "range": cidr,
           "scanner": " ".join(map(str, sweep + [cidr])) + "; then " + " ".join(map(str, syn + ["<up>"]))}
    run(netns(ns, "ip", "addr", "add", addr, "dev", "eth0"), timeout=10)
    try:
        t = time.monotonic()
        out = os.path.join(d, "nmap.unlisted-sweep.txt")
        with open(out, "w") as f:
            r = subprocess.run(netns(ns, *sweep, "-oG", "-", cidr), stdout=f, stderr=subprocess.STDOUT, timeout=300)
        if r.returncode != 0:
            raise EvalError(f"unlisted-source nmap sweep exited {r.returncode} (see {out})")
        up, _ = gnmap(out)
        up -= own
        answered = set()
        if up:
            out = os.path.join(d, "nmap.unlisted-syn.txt")
            with open(out, "w") as f:
                r = subprocess.run(netns(ns, *syn, "-oG", "-", *sorted(up, key=ipaddress.ip_address)),
                                   stdout=f, stderr=subprocess.STDOUT, timeout=300)
            if r.returncode != 0:
                raise EvalError(f"unlisted-source nmap SYN scan exited {r.returncode} (see {out})")
            _, answered = gnmap(out)
            answered -= own
        res["scan_s"] = round(time.monotonic() - t, 2)
    finally:
        rm = run(netns(ns, "ip", "addr", "del", addr, "dev", "eth0"), timeout=10, check=False)
        if rm.returncode != 0:
            log(f"could not remove {addr} from {attacker}: {rm.stderr.strip()}")
    key = ipaddress.ip_address
    res.update({"up": len(up), "port_answered": len(answered),
                "found_real": sorted((up | answered) & real, key=key),
                "up_list": sorted(up, key=key)[:50], "address_removed": rm.returncode == 0})
    return res


def true_targets(c, attacker, cpam):
    """The addresses that are really the hosts right now: current VIPs from the controller's DNS
    (asked from the attacker's namespace, as any client would), or the real addresses."""
    names = [h for h in c.hosts if h != attacker]
    if not cpam:
        return {c.hosts[h]["ip"] for h in names}
    # glibc's resolver inside the namespace: 'ip netns exec' bind-mounts the testbed's resolv.conf
    code = ("import socket, sys\n"
            "for n in sys.argv[2:]:\n"
            "    try: print(n, *socket.gethostbyname_ex(n + '.' + sys.argv[1])[2])\n"
            "    except OSError: print(n)\n")
    r = run(netns(c.ns(attacker), sys.executable, "-c", code, ZONE, *names), timeout=120)
    out = set()
    for line in r.stdout.splitlines():
        out.update(line.split()[1:])
    return out


def effect_config(cfg, out, label, interval_ms):
    cpam = interval_ms is not None
    tag = "static" if not cpam else f"cpam-{interval_ms}"
    d = os.path.join(out, "effect", tag)
    apps = ["topology", "cpam", "forwarding"] if cpam else ["topology", "forwarding"]
    c = Controller(cfg, d, apps, {"runtime": cfg.modes[0], "rotation_interval_ms": interval_ms} if cpam else {})
    res = {"label": label, "cpam": cpam, "interval_ms": interval_ms, "scans": [], "problems": []}
    try:
        c.up()
        c.start()
        attacker = c.manifest["hosts"][-1]["name"]
        res["attacker"] = attacker
        c.teach()
        if cpam:
            scan_range = VIP_RANGE
        else:   # the block the hosts' real addresses live in
            n = len(c.hosts)
            bits = max(8, math.ceil(math.log2(((n - 1) // 250 + 1) * 256)))
            scan_range = f"10.0.0.0/{32 - bits}"
        time.sleep(1.0)
        t_wall = time.time()
        own = c.hosts[attacker]["ip"]   # the attacker knows its own address
        static_s = 3 * min(cfg.effect_intervals or [10000]) / 1000

        def pubs_after(t):
            """Rotations published after monotonic time t, as monotonic times."""
            off = time.monotonic() - time.time()
            return [p for p in (t_wall + r["t_s"] + off for r in c.rotations(t_wall)) if p > t]

        def cycle(scanner):
            """One scanner: (CPAM) wait for a publish, scan, look up the truth, then re-probe what
            it found about once a second until 3 rotations after the scan have taken full effect
            (publish + the grace-accept window) or, static, as long as 3 of the shortest interval."""
            if cpam:   # start right after a rotation: the attacker's best case, a whole interval ahead
                t = time.monotonic()
                while not pubs_after(t):
                    if time.monotonic() - t > interval_ms / 1000 + 10:
                        raise EvalError("no rotation published")
                    time.sleep(0.1)
            log(f"[effect {tag}] attacker {attacker} scans {scan_range} with {scanner}")
            s = {"scanner": scanner, "range": scan_range, "_t0": time.time()}
            if scanner == "probe":
                found, took = probe_scan(c, attacker, d, "scan", cidr=scan_range)
            else:
                found, took, s["arp_up"] = nmap_scan(c, attacker, scan_range, d, "scan")
            end = time.monotonic()
            s["_t1"] = time.time()
            found = [a for a in found if a != own]
            s["_found"] = found
            truth = true_targets(c, attacker, cpam)
            s.update({"scan_s": round(took, 2), "found": len(found), "true_targets": len(truth),
                      "correct": len(set(found) & truth), "decay": [], "after": []})
            tgt = os.path.join(d, f"targets.{scanner}.txt")
            with open(tgt, "w") as f:
                f.write("\n".join(found) + "\n")
            listed, i, pubs = set(found), 0, []
            while found:
                a = time.monotonic()
                alive, _ = probe_scan(c, attacker, d, f"{scanner}.re{i}", targets=tgt)
                i += 1
                n = len(set(alive) & listed)
                s["decay"].append([round(a - end, 2), round(n / len(listed), 4), n])
                if cpam:
                    pubs = pubs_after(end)
                    done = len(pubs) >= 3 and a > pubs[2] + GRACE_ACCEPT_MS / 1000 + 0.5
                else:
                    done = a - end > static_s + 3
                if done or not c.alive():
                    break
                time.sleep(max(0.0, 1.0 - (time.monotonic() - a)))
            s["rotations_after_scan_s"] = [round(p - end, 2) for p in pubs]
            for k in (1, 2, 3):
                if cpam:
                    if len(pubs) < k:
                        continue
                    cut = pubs[k - 1] + GRACE_ACCEPT_MS / 1000
                else:   # static: at the same offsets as k rotations of the shortest interval
                    cut = end + k * static_s / 3
                pt = next((p for p in s["decay"] if end + p[0] >= cut), None)
                if pt:
                    s["after"].append({"rotations": k, "t_s": pt[0], "reachable": pt[2], "fraction": pt[1]})
            s["worthless_after_s"] = next((p[0] for p in s["decay"] if p[1] <= 0.01), None)
            s["decay"] = [p[:2] for p in s["decay"]]
            return s

        scans = [cycle("probe"), cycle("nmap")]
        res["scans"] = scans
        if cpam:
            log(f"[effect {tag}] attacker {attacker} adds {UNLISTED_SRC} and scans {UNLISTED_RANGE} from it")
            u = res["unlisted"] = unlisted_scan(c, attacker, d)
            log(f"[effect {tag}] unlisted source: {u['scan_s']} s, {u['up']} up, real addresses found: "
                f"{len(u['found_real'])}")
            if u["found_real"]:
                res["problems"].append(f"defense failed: from the unlisted source {u['source']} a scan of "
                                       f"{u['range']} found {len(u['found_real'])} real addresses of protected "
                                       f"hosts ({', '.join(u['found_real'][:10])}{' ...' if len(u['found_real']) > 10 else ''})")
            if not u["address_removed"]:
                res["problems"].append(f"could not remove {u['source']} from {attacker} after the unlisted-source scan")
        if not c.alive():
            res["problems"].append("sdnator died during the phase")
    except (EvalError, subprocess.TimeoutExpired) as e:
        res["problems"].append(str(e))
    finally:
        c.down()
    if cpam:
        live_vips_found(res["scans"], os.path.join(d, "archive.db"), attacker=res.get("attacker"))
    for s in res["scans"]:
        for k in ("_t0", "_t1", "_found"):
            s.pop(k, None)
    return res


def live_vips_found(scans, archive, attacker=None):
    """Per CPAM scan, "live": how many found addresses were VIPs in force while it ran, from the
    archived mappings (network/cpam/mapping/current): a VIP of an epoch current at any moment of
    the scan, or of the epoch before it while that one still accepted new sessions (retired less
    than GRACE_ACCEPT_MS before the scan began). `correct` counts only the VIPs current at the
    end; a scan that starts just after a publish also reaches the retiring epoch's VIPs."""
    try:
        db = sqlite3.connect(f"file:{archive}?mode=ro", uri=True)
        rows = db.execute("SELECT ts_ns, value FROM records WHERE key LIKE 'network/cpam/mapping/current%' "
                          "ORDER BY ts_ns").fetchall()
        db.close()
    except sqlite3.Error as e:
        for s in scans:
            s["live"] = None
            s["live_error"] = str(e)
        return
    maps = []   # (publish time s, {vip, ...}) in order
    for ts_ns, value in rows:
        try:
            m = json.loads(value)
        except (TypeError, ValueError):
            continue
        maps.append((ts_ns / 1e9, {v for h, v in m.get("hosts", {}).items() if h != attacker}))
    for s in scans:
        t0, t1 = s.get("_t0"), s.get("_t1")
        if t0 is None or t1 is None:
            continue
        live = set()
        for i, (t, vips) in enumerate(maps):
            until = maps[i + 1][0] if i + 1 < len(maps) else float("inf")
            if t <= t1 and until > t0:                      # current at some moment of the scan
                live |= vips
            elif until <= t0 and t0 - until < GRACE_ACCEPT_MS / 1000:   # retiring, still accepting
                live |= vips
        s["live"] = len(set(s.get("_found", [])) & live)


def effect_phase(cfg, out):
    configs = [("static (CPAM off)", None)] + [(f"CPAM, rotation every {iv / 1000:g} s", iv)
                                                for iv in cfg.effect_intervals]
    results = []
    for label, iv in configs:
        log(f"effect: {label}")
        results.append(effect_config(cfg, out, label, iv))
    attacker = next((r.get("attacker") for r in results if r.get("attacker")), None)
    doc = {"port": SCAN_PORT, "attacker": attacker, "vip_range": VIP_RANGE, "grace_accept_ms": GRACE_ACCEPT_MS,
           "mode": cfg.modes[0], "configs": results}
    with open(os.path.join(out, "effect.json"), "w") as f:
        json.dump(doc, f, indent=1)
    return doc


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description="sdnator's end-to-end evaluation (see eval/README.md)")
    ap.add_argument("--scale", choices=sorted(SCALES), default="small")
    ap.add_argument("--modes", default="sharded,cooperative")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--hosts", type=int)
    ap.add_argument("--interval-ms", type=int)
    ap.add_argument("--churn-s", type=int)
    ap.add_argument("--churn-rate", type=float, help="connections per second per pair")
    ap.add_argument("--udp-s", type=int)
    ap.add_argument("--udp-mbps", type=float)
    ap.add_argument("--settle-s", type=float)
    ap.add_argument("--effect-intervals", help="comma-separated rotation intervals (ms) for the effectiveness phase")
    ap.add_argument("--no-effect", action="store_true", help="skip the defense-effectiveness phase")
    ap.add_argument("--no-runs", action="store_true", help="only the effectiveness phase")
    ap.add_argument("--shards", type=int, default=0, help="sdnator --shards (0: its default)")
    ap.add_argument("--out", help="output directory (default eval/out/SCALE-TIMESTAMP)")
    ap.add_argument("--sdnator", default=os.environ.get("SDNATOR", os.path.join(ROOT, "build", "bin", "sdnator")))
    ap.add_argument("--session", default=os.environ.get("SDNATOR_SESSION", os.path.join(ROOT, "build", "bin", "sdnator-session")))
    cfg = ap.parse_args()
    for k, v in SCALES[cfg.scale].items():
        if getattr(cfg, k, None) is None:
            setattr(cfg, k, v)
    if isinstance(cfg.effect_intervals, str):
        cfg.effect_intervals = [int(x) for x in cfg.effect_intervals.split(",") if x]
    cfg.modes = [m for m in cfg.modes.split(",") if m]
    for m in cfg.modes:
        if m not in ("sharded", "cooperative"):
            ap.error(f"--modes: sharded and/or cooperative, not {m!r}")
    if cfg.hosts < 4 or cfg.hosts % 2 or cfg.runs < 1 or cfg.interval_ms < 1000:
        ap.error("need an even --hosts >= 4, --runs >= 1, --interval-ms >= 1000")
    cfg.cores, cfg.aggs, cfg.edges = (1, 2, 4) if cfg.hosts <= 16 else (1, 6, 12)
    if os.geteuid() != 0:
        sys.exit("eval: needs root (network namespaces, Open vSwitch); use eval/run.sh")
    for b in (cfg.sdnator, cfg.session):
        if not os.access(b, os.X_OK):
            sys.exit(f"eval: {b} is not built (scripts/setup.sh)")
    out = cfg.out or os.path.join(ROOT, "eval", "out", f"{cfg.scale}-{time.strftime('%Y%m%d-%H%M%S')}")
    os.makedirs(out, exist_ok=True)
    cfg.sdnator, cfg.session = os.path.abspath(cfg.sdnator), os.path.abspath(cfg.session)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # The kernel's ARP table is one table for every namespace, capped by gc_thresh3 (1024 by
    # default): 500 hosts with a few entries each, plus a scan of a /18, overflow it ("neighbor
    # table overflow": packets to unresolved addresses are dropped). Raise the caps for the run
    # and put them back afterwards.
    neigh = "/proc/sys/net/ipv4/neigh/default/gc_thresh{}"
    saved = {}
    try:
        for k, v in ((1, 1024), (2, 32768), (3, 65536)):
            with open(neigh.format(k)) as f:
                saved[k] = f.read().strip()
            if int(saved[k]) < v:
                with open(neigh.format(k), "w") as f:
                    f.write(str(v))
        log(f"neighbour table caps gc_thresh1-3 {'/'.join(saved.values())} -> 1024/32768/65536 for the run")
    except OSError as e:
        log(f"could not raise the neighbour table caps ({e}); a large fabric may see 'neighbor table overflow'")
    try:
        failed = run_all(cfg, out)
    finally:
        for k, v in saved.items():
            try:
                with open(neigh.format(k), "w") as f:
                    f.write(v)
            except OSError:
                pass
    sys.exit(1 if failed else 0)


def run_all(cfg, out):
    try:
        ovs = subprocess.run(["ovs-vswitchd", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        ovs = None
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    params = {"schema": 1, "command": " ".join(shlex.quote(a) for a in sys.argv), "scale": cfg.scale,
              "modes": cfg.modes, "runs": cfg.runs, "hosts": cfg.hosts, "pairs": cfg.hosts // 2,
              "campus": {"cores": cfg.cores, "aggs": cfg.aggs, "edges": cfg.edges, "dual_homed": True},
              "interval_ms": cfg.interval_ms,
              "phase": {k: getattr(cfg, k) for k in ("settle_s", "udp_s", "udp_spread_s", "udp_mbps", "icmp_count", "icmp_spread_s", "tcp_s", "tcp_single",
                                                     "tcp_single_s", "continuity_extra_s", "churn_s", "churn_rate")},
              "effect_intervals_ms": [] if cfg.no_effect else cfg.effect_intervals,
              "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "ovs": ovs,
                          "datapath": "netdev (userspace)"},
              "git": git, "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    with open(os.path.join(out, "params.json"), "w") as f:
        json.dump(params, f, indent=1)
    log(f"out {out}; modes {cfg.modes}, {cfg.runs} run(s), {cfg.hosts} hosts, rotation every {cfg.interval_ms} ms")
    failed = 0
    if not cfg.no_runs:
        for k in range(1, cfg.runs + 1):
            for m in cfg.modes:   # interleaved, so slow drift of the machine hits both modes alike
                r = run_once(cfg, m, k, out)
                ph = r.get("phases", {})
                log(f"[{m} run {k}] {'ok' if r['ok'] else 'PROBLEMS: ' + '; '.join(r['problems'])} "
                    f"({r['wall_s']} s; reactive RTT mean {ph.get('icmp', {}).get('first_rtt_ms', {}).get('mean')} ms, "
                    f"continuity {ph.get('continuity', {}).get('continuity_pct')} %, "
                    f"FSR {ph.get('churn', {}).get('fsr_flows_per_s')} fl/s)")
                failed += not r["ok"]
    if not cfg.no_effect:
        doc = effect_phase(cfg, out)
        for r in doc["configs"]:
            if r["problems"] or len(r["scans"]) != 2 or (r["cpam"] and "unlisted" not in r):
                failed += 1
                log(f"effect {r['label']}: PROBLEMS {r['problems']}")
            u = r.get("unlisted")
            if u:
                log(f"effect {r['label']} unlisted source {u['source']}: scan of {u['range']} {u.get('scan_s')} s, "
                    f"{u['up']} up, {len(u['found_real'])} real addresses found")
            for s in r["scans"]:
                log(f"effect {r['label']} {s['scanner']}: scan {s['scan_s']} s found {s['found']} "
                    f"({s['correct']} of {s['true_targets']} real), after {[(a['rotations'], a['fraction']) for a in s['after']]}, "
                    f"worthless after {s['worthless_after_s']} s")
    params["finished_at"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    with open(os.path.join(out, "params.json"), "w") as f:
        json.dump(params, f, indent=1)
    log(f"done: {failed} run(s)/config(s) with problems; results in {out}")
    return failed


if __name__ == "__main__":
    main()
