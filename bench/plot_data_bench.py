#!/usr/bin/python3
"""Turns data_bench's JSON (bench/data_bench.cpp) into one PNG with a panel per section.

usage: /usr/bin/python3 bench/plot_data_bench.py docs/data-bench.json docs/data-bench.png
(Debian's python3-matplotlib; a pyenv python3 earlier on PATH may not have matplotlib.)
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def size_label(s):
    return f"{s // 1024} KB" if s >= 1024 and s % 1024 == 0 else f"{s} B"


def panel_latency(ax, rows):
    styles = {"raw-hiredis": "tab:blue", "due-redis": "tab:orange", "due-inproc": "tab:green"}
    series = {}
    for r in rows:
        series.setdefault((r["impl"], r["mode"]), []).append(r)
    for (impl, mode), rs in sorted(series.items()):
        rs.sort(key=lambda r: r["size"])
        xs = [r["size"] for r in rs]
        ls = "-" if r["batch"] == 1 else "--"
        ax.plot(xs, [r["p50_us"] for r in rs], ls, marker="o", color=styles.get(impl, "gray"),
                label=f"{impl}, {mode} (p50)")
        ax.fill_between(xs, [r["p50_us"] for r in rs], [r["p99_us"] for r in rs],
                        color=styles.get(impl, "gray"), alpha=0.08)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sorted({r["size"] for r in rows}))
    ax.set_xticklabels([size_label(s) for s in sorted({r["size"] for r in rows})])
    ax.set_xlabel("message size")
    ax.set_ylabel("write -> receipt latency (µs)")
    ax.set_title("1. End-to-end latency (line p50, band to p99)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6.5)


def panel_throughput(ax, rows):
    points = []
    for r in rows:
        p = (r["batch"], r["size"])
        if p not in points:
            points.append(p)
    impls = ["raw-hiredis", "due-redis"]
    colors = {"raw-hiredis": "tab:blue", "due-redis": "tab:orange"}
    width = 0.38
    for i, impl in enumerate(impls):
        vals = []
        for p in points:
            m = [r for r in rows if r["impl"] == impl and (r["batch"], r["size"]) == p]
            vals.append(m[0]["msgs_per_s"] if m else 0)
        xs = [k + (i - 0.5) * width for k in range(len(points))]
        bars = ax.bar(xs, vals, width, label=impl, color=colors[impl])
        for b, v in zip(bars, vals):
            if v:
                ax.annotate(f"{v / 1e3:.0f}k", (b.get_x() + b.get_width() / 2, v), ha="center",
                            va="bottom", fontsize=6.5)
    ax.set_xticks(range(len(points)))
    ax.set_xticklabels([f"batch {b}\n{size_label(s)}" for b, s in points], fontsize=7.5)
    ax.set_yscale("log")
    ax.set_ylabel("msgs/s at the consumer")
    ax.set_title("2. Throughput over Redis")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7)


def panel_inproc(ax, rows):
    labels = [f"{r['path']}\n[{r['value']}]" for r in rows]
    vals = [r["msgs_per_s"] / 1e6 for r in rows]
    colors = ["tab:green" if v >= 5 else "tab:red" for v in vals]
    ax.barh(range(len(rows)), vals, color=colors)
    ax.axvline(5, color="black", ls="--", lw=1, label="target 5 M/s")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("M msgs/s on one core (thread CPU time)")
    ax.set_title("2b. In-process bus")
    ax.legend(fontsize=7)
    ax.grid(True, axis="x", alpha=0.3)


def panel_archive(ax, rows):
    backends = [b for b in ["sqlite", "postgres"] if any(r["backend"] == b for r in rows)]
    batches = sorted({r["batch"] for r in rows})
    width = 0.38
    colors = {"sqlite": "tab:purple", "postgres": "tab:brown"}
    for i, be in enumerate(backends):
        vals = []
        for b in batches:
            m = [r for r in rows if r["backend"] == be and r["batch"] == b]
            vals.append(m[0]["records_per_s"] if m else 0)
        xs = [k + (i - 0.5) * width for k in range(len(batches))]
        bars = ax.bar(xs, vals, width, label=be, color=colors[be])
        for bar, v in zip(bars, vals):
            if v:
                ax.annotate(f"{v / 1e3:.1f}k", (bar.get_x() + bar.get_width() / 2, v),
                            ha="center", va="bottom", fontsize=6.5)
    ax.axhline(200e3, color="black", ls="--", lw=1, label="SQLite target 200 k/s")
    ax.set_xticks(range(len(batches)))
    ax.set_xticklabels([f"batch {b:,}" for b in batches])
    ax.set_yscale("log")
    ax.set_ylabel("records/s committed")
    ax.set_title("3. Data Archives batching")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7)


def panel_scale(ax, rows, nproc):
    colors = {"raw-hiredis": "tab:blue", "due-redis": "tab:orange"}
    for impl in ["raw-hiredis", "due-redis"]:
        rs = sorted([r for r in rows if r["impl"] == impl], key=lambda r: r["pairs"])
        if not rs:
            continue
        xs = [r["pairs"] for r in rs]
        ax.plot(xs, [r["aggregate"] / 1e3 for r in rs], "-o", color=colors[impl],
                label=f"{impl} aggregate")
        mean = [r["mean"] / 1e3 for r in rs]
        lo = [(r["mean"] - r["min"]) / 1e3 for r in rs]
        hi = [(r["max"] - r["mean"]) / 1e3 for r in rs]
        ax.errorbar(xs, mean, yerr=[lo, hi], fmt="--s", color=colors[impl], capsize=3,
                    markersize=4, label=f"{impl} per pair (mean, min-max)")
    ax.set_xlabel("producer/consumer pairs")
    ax.set_ylabel("k msgs/s (1 KB, batch 100)")
    ax.set_title(f"4. Scalability on {nproc} cores (CPU-bound)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6.5)


def panel_codec(ax, rows):
    for value, color in [("JSON string", "tab:orange"), ("bytes (b64)", "tab:red")]:
        rs = sorted([r for r in rows if r["value"] == value], key=lambda r: r["size"])
        if not rs:
            continue
        xs = [r["size"] for r in rs]
        ax.plot(xs, [r["encode_ns"] / 1e3 for r in rs], "--o", color=color,
                label=f"encode, {value}")
        ax.plot(xs, [r["decode_ns"] / 1e3 for r in rs], "-o", color=color,
                label=f"decode, {value}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    sizes = sorted({r["size"] for r in rows})
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_label(s) for s in sizes])
    ax.set_xlabel("value size")
    ax.set_ylabel("µs per envelope (one thread)")
    ax.set_title("2c. Envelope codec cost")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        d = json.load(f)
    m = d.get("machine", {})
    fig, axes = plt.subplots(2, 3, figsize=(18, 10))
    panels = [
        ("latency", lambda ax: panel_latency(ax, d["latency"])),
        ("throughput", lambda ax: panel_throughput(ax, d["throughput"])),
        ("inproc", lambda ax: panel_inproc(ax, d["inproc"])),
        ("archive", lambda ax: panel_archive(ax, d["archive"])),
        ("scale", lambda ax: panel_scale(ax, d["scale"], m.get("nproc", "?"))),
        ("codec", lambda ax: panel_codec(ax, d["codec"])),
    ]
    for ax, (name, draw) in zip(axes.flat, panels):
        if d.get(name):
            draw(ax)
        else:
            ax.set_axis_off()
            ax.text(0.5, 0.5, f"{name}: not run", ha="center", va="center")
    per_section = list(m.get("loadavg_at_section", {}).values())
    load = (f"{min(per_section):.1f} to {max(per_section):.1f}" if per_section
            else m.get("loadavg_start", ["?"])[0])
    fig.suptitle(f"sdnator data_bench: {m.get('nproc', '?')} cores ({m.get('cpu', '?')}), "
                 f"Redis {m.get('redis', '?')}, hiredis {m.get('hiredis', '?')}, "
                 f"1-min load avg {load} (other work on the machine){' [--quick]' if m.get('quick') else ''}")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
