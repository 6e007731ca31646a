#!/usr/bin/env python3
"""Report of the fleet experiments (scripts/fleet_experiment.sh): mean makespans per scheduler,
scenario and fleet size over the seeds, normalised like the paper's Figures 11-14 (by the largest
mean of the worst scheduler at each fleet size), as bar charts and a Markdown report with the
targets checked.

usage: fleet_report.py results.json [--md docs/fleet.md] [--img docs/img]
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ALGS = ["decentralized", "baseline", "fcfs", "dynamic"]
LABEL = {"decentralized": "Decentralized", "baseline": "Centralized-Baseline",
         "fcfs": "Centralized-FCFS", "dynamic": "Centralized-Dynamic"}
FIGS = [  # (file, scenario, metric, title)
    ("fleet-fig11.png", "normal", "makespan_min", "Normal orders: makespan"),
    ("fleet-fig12.png", "anomalies", "makespan_min", "With anomalies: makespan"),
    ("fleet-fig13.png", "ppe", "ppe_makespan_min", "PPE orders: PPE makespan"),
    ("fleet-fig14.png", "ppe", "makespan_min", "With PPE: final makespan"),
]


def load(path):
    runs = json.loads(Path(path).read_text())["runs"]
    table = defaultdict(list)  # (scenario, size, alg, metric) -> values
    failed = [r for r in runs if not r.get("ok")]
    for r in runs:
        if not r.get("ok"):
            continue
        for m in ("makespan_min", "ppe_makespan_min", "solve_ms_max", "anomalies", "real_s"):
            table[(r["scenario"], r["printers"], r["algorithm"], m)].append(r[m])
    return runs, table, failed


def mean(v):
    return statistics.fmean(v) if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--md")
    ap.add_argument("--img")
    a = ap.parse_args()
    runs, table, failed = load(a.results)
    sizes = sorted({r["printers"] for r in runs})
    seeds = sorted({r["seed"] for r in runs})
    lines = []
    out = lines.append
    checks = []
    for fname, scn, metric, title in FIGS:
        out(f"### {title} ({scn})\n")
        out("| printers | " + " | ".join(LABEL[x] for x in ALGS) + " | normalised (D / B / F / Dyn) |")
        out("|---|" + "---|" * len(ALGS) + "---|")
        norm = {}
        for n in sizes:
            means = {x: mean(table[(scn, n, x, metric)]) for x in ALGS}
            top = max(v for v in means.values() if v == v) if any(v == v for v in means.values()) else 1
            norm[n] = {x: means[x] / top for x in ALGS}
            cells = []
            for x in ALGS:
                v = table[(scn, n, x, metric)]
                cells.append(f"{mean(v):.0f} ± {statistics.pstdev(v):.0f}" if v else "—")
            out(f"| {n} | " + " | ".join(cells) + " | " +
                " / ".join(f"{norm[n][x]:.2f}" for x in ALGS) + " |")
        out("")
        if a.img:
            try:
                import matplotlib
                matplotlib.use("Agg")
                import matplotlib.pyplot as plt
                fig, ax = plt.subplots(figsize=(7, 3.6))
                w = 0.2
                for i, x in enumerate(ALGS):
                    ax.bar([k + (i - 1.5) * w for k in range(len(sizes))],
                           [norm[n][x] for n in sizes], w, label=LABEL[x])
                ax.set_xticks(range(len(sizes)), [f"{n} printers" for n in sizes])
                ax.set_ylabel("normalised makespan")
                ax.set_ylim(0, 1.1)
                ax.set_title(title)
                ax.legend(fontsize=7, ncol=2)
                fig.tight_layout()
                Path(a.img).mkdir(parents=True, exist_ok=True)
                fig.savefig(Path(a.img) / fname, dpi=110)
                plt.close(fig)
                out(f"![{title}](img/{fname})\n")
            except ImportError:
                out("(matplotlib missing: no chart)\n")
    # Targets.
    out("### Targets\n")
    out("| fleet size | Dynamic / Decentralized (normal) | PPE speed-up vs Decentralized | "
        "final makespan with PPE, Dynamic / Decentralized | max ILP decision (ms) |")
    out("|---|---|---|---|---|")
    ok_all = True
    for n in sizes:
        d_norm = mean(table[("normal", n, "decentralized", "makespan_min")])
        y_norm = mean(table[("normal", n, "dynamic", "makespan_min")])
        d_ppe = mean(table[("ppe", n, "decentralized", "ppe_makespan_min")])
        y_ppe = mean(table[("ppe", n, "dynamic", "ppe_makespan_min")])
        d_fin = mean(table[("ppe", n, "decentralized", "makespan_min")])
        y_fin = mean(table[("ppe", n, "dynamic", "makespan_min")])
        solve = max([v for s in ("normal", "anomalies", "ppe")
                     for v in table[(s, n, "dynamic", "solve_ms_max")]] or [float("nan")])
        r1, r2, r3 = y_norm / d_norm, d_ppe / y_ppe, y_fin / d_fin
        ok = r1 <= 0.65 and r2 >= 2 and r3 <= 1
        ok_all &= ok
        out(f"| {n} | {r1:.2f} ({'met' if r1 <= 0.65 else 'NOT met'}) | {r2:.2f}x "
            f"({'met' if r2 >= 2 else 'NOT met'}) | {r3:.2f} ({'met' if r3 <= 1 else 'NOT met'}) | {solve:.1f} |")
    out("")
    total_s = sum(r.get("real_s", 0) for r in runs)
    out(f"{len(runs)} runs ({len(failed)} failed), seeds {seeds}, {total_s:.0f} s of wall time.\n")
    for r in failed:
        out(f"- failed: {r['algorithm']} {r['scenario']} {r['printers']} seed {r['seed']}: {r.get('error')}")
    text = "\n".join(lines)
    if a.md:
        md = Path(a.md)
        head = md.read_text().split("<!-- results -->")[0] if md.exists() else "# Fleet experiments\n\n"
        md.write_text(head.rstrip() + "\n\n<!-- results -->\n\n" + text + "\n")
    print(text)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
