#!/usr/bin/env python3
"""Report of the ids experiment (scripts/ids_experiment.py): per mode, detection and blocking
latency for each attack, false positives, the victim's view of the attacker's frames, counters;
figures like the paper's Figures 16 (Kitsune alone) and 17 (with mitigation); docs/ids.md and
docs/ids-results.json."""
import argparse
import json
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--in", dest="inp", required=True)
ap.add_argument("--docs", default=None, help="write ids.md, ids-results.json and img/ here")
args = ap.parse_args()


def load(mode):
    d = os.path.join(args.inp, mode)
    if not os.path.exists(os.path.join(d, "events.json")):
        return None
    ev = json.load(open(os.path.join(d, "events.json")))
    sc = json.load(open(os.path.join(d, "scores.json")))
    rx = []
    if os.path.exists(os.path.join(d, "victim_rx.txt")):
        rx = [int(x) for x in open(os.path.join(d, "victim_rx.txt")) if x.strip()]
    return ev, sc, rx


def attack_figures(ev, sc, rx, start_key, end_key):
    """Latencies (ms) of one attack: first suspect naming the attacker, block installed, last attacker
    frame at the victim after the attack started."""
    t0, t1 = ev[start_key], ev[end_key]
    mac = ev["attacker"]["mac"]
    sus = [s for s in sc["suspects"] if s["mac"] == mac and s["detected_ns"] >= t0]
    blk = [a for a in sc["actions"] if a["mac"] == mac and a["action"] == "block" and a["installed_ns"] >= t0]
    first_pkt = min((t for t in rx if t >= t0), default=None)
    f = {"attack_s": round((t1 - t0) / 1e9, 1), "victim_frames": sum(1 for t in rx if t0 <= t <= t1 + 2e9)}
    # victim_frames / victim_frames_after_block: the attacker's frames that reached h1 from the
    # attack's start (after the block was confirmed) until 2 s after the attack ended.
    f["first_frame_ms"] = round((first_pkt - t0) / 1e6, 1) if first_pkt else None
    base = first_pkt or t0
    if sus:
        f["detected_ms"] = round((sus[0]["detected_ns"] - base) / 1e6, 1)
    if blk and blk[0]["installed_ns"] <= t1 + 60e9:
        b = blk[0]
        f["blocked_ms"] = round((b["installed_ns"] - base) / 1e6, 1)
        f["offence"], f["hard_timeout_s"] = b["offence"], b["hard_timeout_s"]
        after = [t for t in rx if b["installed_ns"] <= t <= t1 + 2e9]
        f["victim_frames_after_block"] = len(after)
        before = [t for t in rx if base <= t < b["installed_ns"] + 1e6]
        f["last_frame_before_block_ms"] = round((max(before) - base) / 1e6, 1) if before else None
    return f


def summarize(mode, ev, sc, rx):
    s = {"mode": mode, "threshold": ev["threshold"], "autoencoders": ev["model"]["autoencoders"],
         "training_s": round((ev["t_detecting_ns"] - ev["t_benign_ns"]) / 1e9, 1),
         "packets_scored": len(sc["scores"])}
    benign = set(ev["benign_macs"])
    s["suspects_benign"] = sorted({x["mac"] for x in sc["suspects"] if x["mac"] in benign})
    s["suspects_attacker"] = sum(1 for x in sc["suspects"] if x["mac"] == ev["attacker"]["mac"])
    s["blocks_benign"] = sorted({a["mac"] for a in sc["actions"] if a["action"] == "block" and a["mac"] in benign})
    det_t = ev["t_detecting_ns"]
    ben = [v for t, v in sc["scores"] if det_t <= t < ev["t_flood_ns"]]
    thr = ev["threshold"]
    s["benign_watch"] = {"packets": len(ben), "above_threshold": sum(1 for v in ben if v > thr),
                         "p99": sorted(ben)[int(0.99 * (len(ben) - 1))] if ben else None,
                         "max": max(ben) if ben else None}
    s["flood"] = attack_figures(ev, sc, rx, "t_flood_ns", "t_flood_end_ns")
    s["scan"] = attack_figures(ev, sc, rx, "t_scan_ns", "t_scan_end_ns")
    fl = [v for t, v in sc["scores"] if ev["t_flood_ns"] <= t < ev["t_flood_end_ns"]]
    s["flood"]["scores_above_threshold"] = sum(1 for v in fl if v > thr)
    s["flood"]["packets_scored"] = len(fl)
    c = ev["ids"]["detector"]["counters"]
    s["counters"] = {"ids": c, "sampler": ev["ids"]["sampler"]}
    s["apps"] = {k: v for k, v in ev["apps"].items()} if isinstance(ev["apps"], dict) else ev["apps"]
    return s


def figure(mode, ev, sc, path, title):
    t0 = ev["t_detecting_ns"] - 10e9
    pts = [((t - t0) / 1e9, v) for t, v in sc["scores"] if t >= t0]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.scatter([p[0] for p in pts], [max(p[1], 1e-4) for p in pts], s=1, c="tab:blue", alpha=0.4, rasterized=True)
    ax.axhline(ev["threshold"], color="tab:red", lw=1, ls="--", label=f"threshold {ev['threshold']:.3g}")
    for a, b, name, col in (("t_flood_ns", "t_flood_end_ns", "SYN flood", "tab:orange"),
                            ("t_scan_ns", "t_scan_end_ns", "nmap scan", "tab:purple")):
        ax.axvspan((ev[a] - t0) / 1e9, (ev[b] - t0) / 1e9, color=col, alpha=0.15, label=name)
    for act in sc["actions"]:
        if act["action"] == "block" and act["mac"] == ev["attacker"]["mac"]:
            ax.axvline((act["installed_ns"] - t0) / 1e9, color="black", lw=0.8)
    ax.axvline(10, color="grey", lw=0.8, ls=":")
    ax.set_yscale("log")
    ax.set_xlabel("seconds (0 = 10 s before detection starts; black lines: drop rule installed)")
    ax.set_ylabel("RMSE score per packet")
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8, markerscale=4)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


results = {}
for mode in ("detection", "mitigation"):
    r = load(mode)
    if not r:
        continue
    ev, sc, rx = r
    results[mode] = summarize(mode, ev, sc, rx)
    if args.docs:
        img = os.path.join(args.docs, "img")
        os.makedirs(img, exist_ok=True)
        name = "ids-fig16.png" if mode == "detection" else "ids-fig17.png"
        figure(mode, ev, sc, os.path.join(img, name),
               "Kitsune alone (detection only)" if mode == "detection" else "Kitsune + mitigation (drop rules)")
print(json.dumps(results, indent=1))
if args.docs:
    json.dump(results, open(os.path.join(args.docs, "ids-results.json"), "w"), indent=1)
