#!/usr/bin/python3
"""Turns an ofbench report (several labelled ofbench runs collected into one JSON) into figures,
a self-contained report.html (figures embedded) and a report.md to commit under docs/.

usage: /usr/bin/python3 scripts/ofbench_report.py REPORT.json OUTDIR
  writes OUTDIR/rppt_cdf.png, latency_timeline.png, learning.png, resources.png (each only when
  the runs it draws are present), report.html and report.md, and prints the paths written.
  exit 0 on success, 1 on unreadable or malformed input, 2 on usage errors.
(Debian's python3-matplotlib; a pyenv python3 earlier on PATH may not have matplotlib.)

REPORT.json: {"title", "generated_unix", "machine", "commit", "command",
              "runs": [{"label", "group", "controller", "result": <one ofbench --json output>}]}
Groups with figures: "cpam" (RPPT CDF, timeline), "learning-throughput" / "learning-latency"
(bar charts), and any run with result.resources.samples (CPU/RSS). Every field inside "result"
may be missing or null: what is absent shows as a dash, or its figure is left out.
"""
import base64
import datetime
import html
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from reportlib import as_dict, as_list, dig, num  # noqa: E402

# Imported up front but only required once the input has been validated, so a malformed report
# is reported as such even by a python3 without matplotlib.
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: E402
    from matplotlib.lines import Line2D  # noqa: E402
    from matplotlib import ticker  # noqa: E402
    import numpy as np  # noqa: E402

    IMPORT_ERROR = None
except ImportError as e:  # pragma: no cover - depends on the interpreter
    IMPORT_ERROR = e

PROG = "ofbench_report"
DASH = "–"
DPI = 110
# Above this many points a CDF is thinned (keeping the tail whole): the PNG looks the same and
# a long run's hundreds of thousands of samples do not make matplotlib crawl.
CDF_MAX_POINTS = 20000


class ReportError(Exception):
    pass


def warn(msg):
    print(f"{PROG}: warning: {msg}", file=sys.stderr)


# --- defensive access: every field of a run may be missing, null or of the wrong type ---------

def has_stats(s):
    """A STATS object with at least one value (count 0 means every value is null)."""
    s = as_dict(s)
    if num(s.get("count")) == 0:
        return False
    return any(num(s.get(k)) is not None for k in ("p50", "p99", "max", "mean"))


def stats_of(values):
    """STATS of a sample list with nearest-rank percentiles, as ofbench reports them."""
    vals = sorted(v for v in (num(x) for x in values) if v is not None)
    if not vals:
        return {"count": 0}
    n = len(vals)

    def rank(q):
        return vals[max(1, math.ceil(q * n)) - 1]

    return {"count": n, "min": vals[0], "mean": sum(vals) / n, "p50": rank(0.5),
            "p90": rank(0.9), "p99": rank(0.99), "p999": rank(0.999), "max": vals[-1]}


# --- number formats ------------------------------------------------------------------------------

def fmt_us(v):
    v = num(v)
    if v is None:
        return DASH
    return f"{v:.1f}" if abs(v) < 100 else f"{v:,.0f}"


def fmt_int(v):
    v = num(v)
    return DASH if v is None else f"{v:,.0f}"


def fmt_pct(v):
    v = num(v)
    return DASH if v is None else f"{v:.1f}"


def fmt_mib(kib):
    kib = num(kib)
    return DASH if kib is None else f"{kib / 1024:,.1f}"


def fmt_ratio(r):
    return DASH if r is None else f"{r:.1f}x"


def fmt_metric(v, name):
    """A free-form rfc8456 number: µs rules when the name says µs, else about 3 significant
    digits below 100 and integers above (a rate of 123456.7/s is '123,457')."""
    v = num(v)
    if v is None:
        return DASH
    lname = name.lower()
    if lname.endswith("_us") or "_us_" in lname or "µs" in lname:
        return fmt_us(v)
    if abs(v) >= 100 or float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:.3g}"


def fmt_stats3(s, fmt):
    """'p50 / p99 / max' of a STATS object."""
    if not has_stats(s):
        return DASH
    return " / ".join(fmt(s.get(k)) for k in ("p50", "p99", "max"))


def fmt_utc(ts):
    ts = num(ts)
    if ts is None:
        return DASH
    try:
        return datetime.datetime.fromtimestamp(ts, tz=datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(ts)


def text_of(v):
    """Free-form header fields (machine may be a string or an object) as one line of text."""
    if v is None or v == "":
        return DASH
    if isinstance(v, dict):
        return ", ".join(f"{k}={text_of(x)}" for k, x in v.items())
    if isinstance(v, list):
        return ", ".join(text_of(x) for x in v)
    return str(v)


# --- input ---------------------------------------------------------------------------------------

class Run:
    def __init__(self, index, raw):
        self.index = index
        self.res = as_dict(raw.get("result"))
        label = raw.get("label")
        self.label = str(label) if label not in (None, "") else f"run {index + 1}"
        group = raw.get("group")
        self.group = str(group) if group not in (None, "") else "other"
        ctrl = raw.get("controller")
        if ctrl in (None, ""):
            ctrl = self.res.get("controller")
        self.controller = text_of(ctrl)
        # Colour by position in the report, so one run has one colour in every figure.
        self.color = f"C{index % 10}"


def load_report(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise ReportError(f"cannot read {path}: {e.strerror or e}")
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise ReportError(f"{path}: not valid JSON: {e}")
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: the top level is a JSON {type(doc).__name__}, expected an "
                          'object with a "runs" list')
    runs = doc.get("runs")
    if not isinstance(runs, list):
        what = "missing" if "runs" not in doc else f"a {type(runs).__name__}, not a list"
        raise ReportError(f'{path}: "runs" is {what}; expected {{"title": ..., "runs": '
                          '[{"label": ..., "group": ..., "controller": ..., '
                          '"result": {...}}, ...]}')
    out = []
    for i, raw in enumerate(runs):
        if not isinstance(raw, dict):
            warn(f"runs[{i}] is not an object ({type(raw).__name__}); left out")
            continue
        run = Run(i, raw)
        tool, schema = run.res.get("tool"), run.res.get("schema")
        if (tool not in (None, "ofbench")) or (schema not in (None, 1)):
            warn(f"{run.label}: result is tool={tool!r} schema={schema!r} (this script reads "
                 "ofbench schema 1); fields may be misread")
        out.append(run)
    doc["runs"] = out
    return doc


# --- the document: blocks rendered both as HTML and as markdown ----------------------------------
# ("h", level, text) ("p", text) ("pre", text) ("kv", [(key, value)])
# ("table", headers, rows, numeric_columns) ("img", filename, alt)

def summary_table(runs):
    headers = ["label", "group", "controller", "mode", "requests", "answered", "lost", "rate/s",
               "p50 µs", "p99 µs", "max µs", "CPU mean %", "RSS max MiB"]
    rows = []
    for r in runs:
        lat = as_dict(r.res.get("latency_us"))
        res = as_dict(r.res.get("resources"))
        samples = [s for s in as_list(res.get("samples")) if isinstance(s, dict)]
        cpu = num(res.get("cpu_pct_mean"))
        if cpu is None and samples:
            cpu = stats_of(s.get("cpu_pct") for s in samples).get("mean")
        rss = num(res.get("rss_kib_max"))
        if rss is None and samples:
            rss = stats_of(s.get("rss_kib") for s in samples).get("max")
        rows.append([r.label, r.group, r.controller, text_of(r.res.get("mode")),
                     fmt_int(r.res.get("requests")), fmt_int(r.res.get("answered")),
                     fmt_int(r.res.get("lost")), fmt_int(r.res.get("rate_per_s")),
                     fmt_us(lat.get("p50")), fmt_us(lat.get("p99")), fmt_us(lat.get("max")),
                     fmt_pct(cpu), fmt_mib(rss)])
    return ("table", headers, rows, set(range(4, len(headers))))


def switch_rppt(run):
    """Switch-side RPPT STATS per class; computed from the raw samples when ofbench left the
    cpam.rppt_us summary out (the second value says so)."""
    given = as_dict(dig(run.res, "cpam", "rppt_us"))
    if any(has_stats(given.get(k)) for k in ("all", "rotating", "quiet")):
        return given, False
    samples = as_dict(run.res.get("samples"))
    lat = as_list(samples.get("latency_us"))
    rot = samples.get("rotating")
    if not lat:
        return given, False
    out = {"all": stats_of(lat)}
    if isinstance(rot, list) and len(rot) == len(lat):
        out["rotating"] = stats_of(v for v, f in zip(lat, rot) if num(f))
        out["quiet"] = stats_of(v for v, f in zip(lat, rot) if not num(f))
    return out, True


def cpam_blocks(run):
    blocks = [("h", 3, f"CPAM: {run.label}")]
    rppt, computed = switch_rppt(run)
    ctrl = as_dict(dig(run.res, "controller_stats", "rppt_us"))
    with_ctrl = any(has_stats(ctrl.get(k)) for k in ("all", "rotating", "quiet"))
    headers = ["RPPT", "samples", "p50 µs", "p99 µs", "max µs"]
    if with_ctrl:
        headers += ["controller p99 µs", "controller max µs"]
    rows = []
    for cls in ("all", "rotating", "quiet"):
        s = as_dict(rppt.get(cls))
        row = [cls, fmt_int(s.get("count")), fmt_us(s.get("p50")), fmt_us(s.get("p99")),
               fmt_us(s.get("max"))]
        if with_ctrl:
            c = as_dict(ctrl.get(cls))
            row += [fmt_us(c.get("p99")), fmt_us(c.get("max"))]
        rows.append(row)
    blocks.append(("table", headers, rows, set(range(1, len(headers)))))
    note = ("Switch side, as ofbench measured it: every step of a connection that goes to the controller as a "
            "PacketIn (the DNS query, the ARP for the VIP, the SYN), from the PacketIn to the reply it needed "
            "(the DNS answer, the ARP reply, the SYN delivered at the server through the emulated fabric)")
    note += " (computed here from the raw samples)." if computed else "."
    if with_ctrl:
        note += " Controller side: the controller's own RPPT (controller_stats)."
    blocks.append(("p", note))

    cp = as_dict(run.res.get("cpam"))
    rotations = [x for x in as_list(run.res.get("rotations")) if isinstance(x, dict)]
    fm = [num(x.get("flow_mods")) for x in rotations]
    # No rotations is 0 FlowMods; rotations that all lack the count are unknown.
    known = [v for v in fm if v is not None]
    fm_total = sum(known) if (known or not fm) else None
    if "rotations" not in run.res:
        fm_total = None
    blocks.append(("table",
                   ["events", "failures", "DNS changes", "rotations", "rotation FlowMods",
                    "DNS p50 / p99 / max µs", "ARP p50 / p99 / max µs"],
                   [[fmt_int(cp.get("events")), fmt_int(cp.get("failures")),
                     fmt_int(cp.get("dns_changes")),
                     fmt_int(len(rotations)) if "rotations" in run.res else DASH,
                     fmt_int(fm_total), fmt_stats3(cp.get("dns_us"), fmt_us),
                     fmt_stats3(cp.get("arp_us"), fmt_us)]],
                   set(range(7))))
    return blocks


def rfc8456_blocks(runs):
    cols = [r for r in runs if as_dict(r.res.get("rfc8456"))]
    if not cols:
        return []
    names = []
    for r in cols:
        for name in r.res["rfc8456"]:
            if name not in names:
                names.append(name)
    rows = []
    for name in names:
        row = [name]
        for r in cols:
            v = r.res["rfc8456"].get(name)
            if isinstance(v, dict) and not has_stats(v):
                # A composite figure (exception or DoS handling): its scalar parts, and any
                # distribution inside as p50 / p99 / max.
                parts = []
                for k, x in v.items():
                    if isinstance(x, dict):
                        parts.append(f"{k} {fmt_stats3(x, lambda y: fmt_metric(y, k))}")
                    else:
                        parts.append(f"{k} {fmt_metric(x, k)}")
                row.append("; ".join(parts))
            elif isinstance(v, dict):
                row.append(fmt_stats3(v, lambda x: fmt_metric(x, name)))
            elif v is None or num(v) is not None or isinstance(v, bool):
                row.append(fmt_metric(v, name))
            else:
                row.append(text_of(v))
        rows.append(row)
    return [("h", 2, "RFC 8456 metrics"),
            ("p", "Rows are the metrics the runs reported; a distribution reads p50 / p99 / max."),
            ("table", ["metric"] + [r.label for r in cols], rows, set(range(1, len(cols) + 1)))]


def learning_runs(runs):
    thr = [r for r in runs if r.group == "learning-throughput"]
    lat = [r for r in runs if r.group == "learning-latency"]
    return thr, lat


def slowest_rate(thr):
    rates = [v for v in (num(r.res.get("rate_per_s")) for r in thr) if v is not None and v > 0]
    return min(rates) if rates else None


def learning_blocks(runs):
    thr, lat = learning_runs(runs)
    if not thr and not lat:
        return []
    lo = slowest_rate(thr)
    rows = []
    for r in thr + lat:
        rate = num(r.res.get("rate_per_s"))
        ratio = rate / lo if (r in thr and rate is not None and lo) else None
        s = as_dict(r.res.get("latency_us"))
        rows.append([r.label, r.group, r.controller, fmt_int(rate), fmt_ratio(ratio),
                     fmt_us(s.get("mean")), fmt_us(s.get("p50")), fmt_us(s.get("p99")),
                     fmt_us(s.get("max"))])
    return [("h", 2, "Learning switch"),
            ("p", "Throughput runs keep many requests outstanding (rate/s is the answer rate; "
                  "'vs slowest' divides it by the lowest throughput rate); latency runs keep one "
                  "request outstanding, so their latency is the round trip."),
            ("table", ["label", "group", "controller", "rate/s", "vs slowest", "mean µs",
                       "p50 µs", "p99 µs", "max µs"], rows, set(range(3, 9)))]


# --- figures -------------------------------------------------------------------------------------

def ecdf_points(xs):
    """(x, y) of the empirical CDF of sorted values, thinned above CDF_MAX_POINTS while keeping
    the top 1% whole (the tail is what the figure is read for)."""
    n = xs.size
    ys = np.arange(1, n + 1) / n
    if n > CDF_MAX_POINTS:
        tail = max(n // 100, 1000)
        idx = np.unique(np.concatenate([np.linspace(0, n - 1, CDF_MAX_POINTS // 2).astype(int),
                                        np.arange(max(0, n - tail), n)]))
        xs, ys = xs[idx], ys[idx]
    return xs, ys


def float_array(values):
    return np.array([num(v) for v in values], dtype=float)  # None -> NaN


def log_ticks(axis):
    """Plain-number ticks at 1, 2, 5 x 10^k on a log axis: RPPT often spans under two decades,
    where matplotlib's defaults label a single 10^3 and nothing else."""
    lo, hi = axis.get_view_interval()
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 0
    subs = (1.0,) if decades > 4 else (1.0, 2.0, 5.0)
    axis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(ticker.NullFormatter())


def fig_rppt_cdf(runs, path):
    fig, ax = plt.subplots(figsize=(9, 5.5))
    drawn = 0
    for r in (r for r in runs if r.group == "cpam"):
        samples = as_dict(r.res.get("samples"))
        lat = float_array(as_list(samples.get("latency_us")))
        rot = samples.get("rotating")
        if lat.size == 0:
            continue
        if isinstance(rot, list) and len(rot) == lat.size:
            flags = np.array([bool(num(f)) for f in rot], dtype=bool)
            sets = [("rotating", "-", "o", lat[flags]), ("quiet", "--", "s", lat[~flags])]
        else:
            warn(f"{r.label}: samples.rotating missing or not one flag per sample; one CDF of all")
            sets = [("all", ":", "D", lat)]
        for name, ls, marker, vals in sets:
            vals = vals[np.isfinite(vals)]
            if vals.size == 0:
                continue
            vals = np.sort(vals)
            p99 = vals[max(1, math.ceil(0.99 * vals.size)) - 1]  # nearest rank, as in the tables
            xs, ys = ecdf_points(vals)
            pos = xs > 0  # a log axis cannot show zero; the fractions still count those samples
            if not pos.any():
                continue
            ax.step(xs[pos], ys[pos], where="post", ls=ls, lw=1.4, color=r.color,
                    label=f"{r.label} ({name})")
            if p99 > 0:
                ax.plot([p99], [0.99], ls="none", marker=marker, ms=5, color=r.color,
                        markeredgecolor="black", markeredgewidth=0.6)
            drawn += 1
    if not drawn:
        plt.close(fig)
        return False
    ax.set_xscale("log")
    log_ticks(ax.xaxis)
    ax.set_ylim(0, 1.01)
    ax.set_xlabel("RPPT, switch side: PacketIn (DNS query, ARP, SYN) sent -> the reply it needed (µs, log scale)")
    ax.set_ylabel("fraction of requests answered within x")
    ax.set_title("RPPT CDF per CPAM run (solid: during rotation, dashed: quiet)")
    ax.grid(True, which="both", alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], ls="none", marker="o", ms=5, color="gray",
                          markeredgecolor="black", markeredgewidth=0.6, label="p99 of each"))
    ax.legend(handles=handles, fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


def fig_latency_timeline(runs, path):
    rows = [r for r in runs if r.group == "cpam"
            and (as_list(r.res.get("timeline")) or as_list(r.res.get("rotations")))]
    if not rows:
        return False
    fig, axes = plt.subplots(len(rows), 1, sharex=True, squeeze=False,
                             figsize=(10, 1.0 + 2.6 * len(rows)))
    for ax, r in zip(axes[:, 0], rows):
        tl = [e for e in as_list(r.res.get("timeline")) if isinstance(e, dict)]
        t = float_array(e.get("t_s") for e in tl)
        plotted = False
        for key, name, color, ls in (("p50_us", "p50", "tab:blue", "-"),
                                     ("p99_us", "p99", "tab:orange", "-"),
                                     ("max_us", "max", "tab:red", ":")):
            y = float_array(e.get(key) for e in tl)
            y[~(y > 0)] = np.nan  # log axis; NaN leaves a gap for a second with no answer
            ok = np.isfinite(t)
            if np.isfinite(y[ok]).any():
                ax.plot(t[ok], y[ok], ls=ls, marker=".", ms=3, lw=1.1, color=color, label=name)
                plotted = True
        first = True
        for rot in as_list(r.res.get("rotations")):
            start, end = num(dig(rot, "start_s")), num(dig(rot, "end_s"))
            if start is None:
                continue
            label = "rotation" if first else None
            if end is None or end <= start:
                ax.axvline(start, color="tab:gray", lw=1, alpha=0.6, label=label)
            else:
                ax.axvspan(start, end, color="tab:gray", alpha=0.25, lw=0, label=label)
            first = False
        if plotted:
            ax.set_yscale("log")
            log_ticks(ax.yaxis)
        else:
            ax.text(0.5, 0.5, "no per-second latency in this run", transform=ax.transAxes,
                    ha="center", va="center", fontsize=8)
        ax.set_ylabel("µs (log)")
        ax.set_title(r.label, loc="left", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper right", ncol=4)
    axes[-1, 0].set_xlabel("time since the run started (s)")
    fig.suptitle("Per-second RPPT at the switch (p50, p99, max), rotations shaded")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


def value_axis(ax, lo, hi):
    """Linear from 0 with room above the annotations, unless the bars span more than 50x: then log,
    or the smallest bars would be invisible."""
    if lo and lo > 0 and hi / lo > 50:
        ax.set_yscale("log")
        ax.set_ylim(lo / 3, hi * 6)
    else:
        ax.set_ylim(0, hi * 1.25 if hi > 0 else 1)


def bar_labels(ax, labels):
    ax.set_xticks(range(len(labels)))
    long = len(labels) > 4 or max((len(s) for s in labels), default=0) > 12
    ax.set_xticklabels(labels, rotation=20 if long else 0, ha="right" if long else "center",
                       fontsize=8)


def panel_throughput(ax, thr):
    rates = [num(r.res.get("rate_per_s")) for r in thr]
    lo = slowest_rate(thr)
    bars = ax.bar(range(len(thr)), [v or 0 for v in rates], color=[r.color for r in thr])
    for b, v in zip(bars, rates):
        text = DASH if v is None else f"{fmt_int(v)}/s"
        if v is not None and lo:
            text += f"\n{fmt_ratio(v / lo)}"
        ax.annotate(text, (b.get_x() + b.get_width() / 2, v or 0), xytext=(0, 2),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8)
    known = [v for v in rates if v is not None]
    value_axis(ax, lo, max(known, default=0))
    bar_labels(ax, [r.label for r in thr])
    ax.set_ylabel("answers/s (rate_per_s)")
    ax.set_title("Learning switch throughput (x: vs the slowest)")
    ax.grid(True, axis="y", which="both", alpha=0.3)


def panel_latency(ax, lat):
    means = [num(dig(r.res, "latency_us", "mean")) for r in lat]
    p99s = [num(dig(r.res, "latency_us", "p99")) for r in lat]
    bars = ax.bar(range(len(lat)), [v or 0 for v in means], color=[r.color for r in lat])
    tops = []
    for i, (b, m, p) in enumerate(zip(bars, means, p99s)):
        top = m or 0
        if p is not None and m is not None and p >= m:
            # The whisker runs from the mean up to p99: not an error bar, a tail marker.
            ax.errorbar([i], [m], yerr=[[0], [p - m]], fmt="none", ecolor="black", capsize=6,
                        lw=1)
            top = p
        tops.append(top)
        text = DASH if m is None else f"mean {fmt_us(m)}"
        if p is not None:
            text += f"\np99 {fmt_us(p)}"
        ax.annotate(text, (b.get_x() + b.get_width() / 2, top), xytext=(0, 2),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8)
    known = [v for v in means if v is not None and v > 0]
    value_axis(ax, min(known, default=None), max(tops, default=0))
    bar_labels(ax, [r.label for r in lat])
    ax.set_ylabel("µs per request (bar: mean, whisker to p99)")
    ax.set_title("Learning switch latency (one request outstanding)")
    ax.grid(True, axis="y", which="both", alpha=0.3)


def fig_learning(runs, path):
    thr, lat = learning_runs(runs)
    panels = []
    if thr:
        panels.append(lambda ax: panel_throughput(ax, thr))
    if lat:
        panels.append(lambda ax: panel_latency(ax, lat))
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), squeeze=False, figsize=(6 * len(panels), 4.8))
    for ax, draw in zip(axes[0], panels):
        draw(ax)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


def fig_resources(runs, path):
    fig, (ax_cpu, ax_rss) = plt.subplots(2, 1, sharex=True, figsize=(10, 6.5))
    drawn = 0
    for r in runs:
        samples = [s for s in as_list(dig(r.res, "resources", "samples")) if isinstance(s, dict)]
        if not samples:
            continue
        t = float_array(s.get("t_s") for s in samples)
        cpu = float_array(s.get("cpu_pct") for s in samples)
        rss = float_array(s.get("rss_kib") for s in samples) / 1024
        ok = np.isfinite(t)
        line = False
        for ax, y in ((ax_cpu, cpu), (ax_rss, rss)):
            if np.isfinite(y[ok]).any():
                ax.plot(t[ok], y[ok], lw=1.2, marker=".", ms=3, color=r.color, label=r.label)
                line = True
        drawn += line
    if not drawn:
        plt.close(fig)
        return False
    ax_cpu.set_ylabel("controller CPU %")
    ax_rss.set_ylabel("controller RSS (MiB)")
    ax_rss.set_xlabel("time since the run started (s)")
    ax_cpu.set_title("Controller resources during each run (sampled by ofbench)")
    for ax in (ax_cpu, ax_rss):
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper right")
    ax_cpu.set_ylim(bottom=0)
    ax_rss.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


# (file, title, caption, drawing function)
FIGURES = [
    ("rppt_cdf.png", "RPPT CDF",
     "Empirical CDF of the switch-side RPPT of every CPAM run, during rotation (solid) and quiet "
     "(dashed); the markers sit at each p99.", fig_rppt_cdf),
    ("latency_timeline.png", "RPPT over time",
     "Per-second p50, p99 and max of each CPAM run; the shaded spans are the route rotations.",
     fig_latency_timeline),
    ("learning.png", "Learning switch",
     "Throughput (answers/s, with the ratio to the slowest) and latency (mean, whisker to p99).",
     fig_learning),
    ("resources.png", "Controller resources",
     "Controller CPU and RSS over each run that sampled them.", fig_resources),
]


# --- rendering -----------------------------------------------------------------------------------

CSS = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em;
       color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f0f0f0; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; white-space: pre-wrap; }
img { max-width: 100%; }
dl.kv { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dl.kv dt { font-weight: bold; }
dl.kv dd { margin: 0; }
"""


def render_html(title, blocks, images):
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>{e(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>"]
    for b in blocks:
        kind = b[0]
        if kind == "h":
            out.append(f"<h{b[1]}>{e(b[2])}</h{b[1]}>")
        elif kind == "p":
            out.append(f"<p>{e(b[1])}</p>")
        elif kind == "pre":
            out.append(f"<pre>{e(b[1])}</pre>")
        elif kind == "kv":
            out.append('<dl class="kv">')
            out += [f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in b[1]]
            out.append("</dl>")
        elif kind == "table":
            _, headers, rows, numeric = b
            out.append("<table>")
            out.append("<thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in headers) +
                       "</tr></thead>")
            out.append("<tbody>")
            for row in rows:
                out.append("<tr>" + "".join(
                    f'<td class="n">{e(c)}</td>' if i in numeric else f"<td>{e(c)}</td>"
                    for i, c in enumerate(row)) + "</tr>")
            out.append("</tbody></table>")
        elif kind == "img":
            data = base64.b64encode(images[b[1]]).decode("ascii")
            out.append(f'<p><img src="data:image/png;base64,{data}" alt="{e(b[2])}"></p>')
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


def md_escape(s):
    """Markdown-inert text: labels are free-form and may hold |, *, _ or <."""
    s = str(s).replace("\r", " ").replace("\n", " ")
    for ch in "\\`*_[]<>|#":
        s = s.replace(ch, "\\" + ch)
    return s


def md_fence(text):
    """A code fence longer than any backtick run in the text (the command may contain some)."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def render_md(blocks):
    out = []
    for b in blocks:
        kind = b[0]
        if kind == "h":
            out += ["#" * b[1] + " " + md_escape(b[2]), ""]
        elif kind == "p":
            out += [md_escape(b[1]), ""]
        elif kind == "pre":
            fence = md_fence(b[1])
            out += [fence, b[1], fence, ""]
        elif kind == "kv":
            out += [f"- **{md_escape(k)}:** {md_escape(v)}" for k, v in b[1]]
            out.append("")
        elif kind == "table":
            _, headers, rows, numeric = b
            out.append("| " + " | ".join(md_escape(h) for h in headers) + " |")
            out.append("|" + "|".join("---:" if i in numeric else "---"
                                      for i in range(len(headers))) + "|")
            out += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
            out.append("")
        elif kind == "img":
            out += [f"![{md_escape(b[2])}]({b[1]})", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def build_blocks(doc, runs, figures):
    title = text_of(doc.get("title")) if doc.get("title") else "ofbench report"
    blocks = [("h", 1, title),
              ("kv", [("Generated", fmt_utc(doc.get("generated_unix"))),
                      ("Machine", text_of(doc.get("machine"))),
                      ("Commit", text_of(doc.get("commit")))])]
    command = doc.get("command")
    if command not in (None, ""):
        blocks += [("p", "Command:"), ("pre", text_of(command))]
    blocks.append(("h", 2, "Runs"))
    if runs:
        blocks.append(summary_table(runs))
        blocks.append(("p", "Latency is ofbench's latency_us (µs); CPU is the controller's mean "
                            "CPU % and RSS its peak, when ofbench sampled them."))
    else:
        blocks.append(("p", "The report holds no runs."))
    cpam = [r for r in runs if r.group == "cpam"]
    if cpam:
        blocks.append(("h", 2, "CPAM"))
        for r in cpam:
            blocks += cpam_blocks(r)
    blocks += rfc8456_blocks(runs)
    blocks += learning_blocks(runs)
    if figures:
        blocks.append(("h", 2, "Figures"))
        for name, fig_title, caption in figures:
            blocks += [("h", 3, fig_title), ("p", caption), ("img", name, fig_title)]
    return title, blocks


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, outdir = argv[1], argv[2]
    try:
        doc = load_report(src)
    except ReportError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    if IMPORT_ERROR is not None:
        print(f"{PROG}: {sys.executable} lacks matplotlib/numpy ({IMPORT_ERROR}); try "
              "/usr/bin/python3 with Debian's python3-matplotlib", file=sys.stderr)
        return 1
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        print(f"{PROG}: cannot create {outdir}: {e.strerror or e}", file=sys.stderr)
        return 1
    runs = doc["runs"]
    written, figures, images = [], [], {}
    for name, fig_title, caption, draw in FIGURES:
        path = os.path.join(outdir, name)
        if draw(runs, path):
            with open(path, "rb") as f:
                images[name] = f.read()
            figures.append((name, fig_title, caption))
            written.append(path)
        elif os.path.exists(path):
            # A figure from an earlier report in the same directory would otherwise sit next to
            # a report.md that no longer shows it (and be committed with it).
            os.remove(path)
            warn(f"removed {path}: this report has no runs for it")
    title, blocks = build_blocks(doc, runs, figures)
    for name, text in (("report.html", render_html(title, blocks, images)),
                       ("report.md", render_md(blocks))):
        path = os.path.join(outdir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
