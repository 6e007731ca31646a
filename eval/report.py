#!/usr/bin/python3
"""Turns an eval output directory (eval/SCHEMA.md, schema 1) into a report in the shape of the
paper's Table 2 (pooled RPPT percentiles) and Table 3 (data plane, control plane, resource cost),
with the paper's OpenDaylight / Ryu / ONOS figures as reference columns.

usage: /usr/bin/python3 eval/report.py OUT_DIR [--title TEXT]
  writes OUT_DIR/report.json, OUT_DIR/report.md and the figures rppt_cdf.png, per_run.png,
  resources.png, timeline.png and effect.png (each only when there is something to draw; effect.png
  only with effect.json), and prints the paths written.
  exit 0 when the report was written, 1 when OUT_DIR is not a directory or cannot be written,
  2 on usage errors.
Standard library + matplotlib (Debian's python3-matplotlib: a pyenv python3 earlier on PATH may
not have it). Without matplotlib the figures are left out with a warning; report.json and
report.md are still written.

Every field of the inputs may be missing or null: a missing value is left out of the means
(n counts the runs that had it) and renders as "-"; a mode without runs is left out.
"""
import argparse
import datetime
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "lib"))
from reportlib import as_dict, as_list, dig, num, summary as pooled_stats  # noqa: E402

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: E402

    IMPORT_ERROR = None
except ImportError as e:  # pragma: no cover - depends on the interpreter
    IMPORT_ERROR = e

PROG = "eval/report.py"
DASH = "-"
DPI = 110
PM = "\u00b1"
# Above this many points a CDF is thinned (the top 1 % is kept whole): same picture, faster.
CDF_MAX_POINTS = 20000
KNOWN_MODES = ("sharded", "cooperative")
FIGURES = ("rppt_cdf.png", "per_run.png", "resources.png", "timeline.png", "effect.png")
PHASE_ORDER = ("udp", "icmp", "tcp", "continuity", "churn")


def warn(msg):
    print(f"{PROG}: warning: {msg}", file=sys.stderr)


# --- defensive access ----------------------------------------------------------------------------

def finite(obj):
    """obj with every non-finite float replaced by None (report.json is strict JSON)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def read_json(path):
    """(document, error text); (None, None) when the file does not exist."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f), None
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"cannot read {path}: {e.strerror or e}"
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        return None, f"{path}: not valid JSON: {e}"


# --- statistics ----------------------------------------------------------------------------------

def mean_sd(values):
    """{"mean", "sd", "n"} with the sample standard deviation (0 for one value)."""
    vals = [v for v in (num(x) for x in values) if v is not None]
    n = len(vals)
    if n == 0:
        return {"mean": None, "sd": None, "n": 0}
    m = sum(vals) / n
    sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (n - 1)) if n > 1 else 0.0
    return {"mean": m, "sd": sd, "n": n}


# --- number formats (all None-safe) --------------------------------------------------------------

def fmt_num(v, decimals=2, sep=","):
    """A number with `decimals` decimals; thousands separated by `sep`; None -> '-'."""
    v = num(v)
    if v is None:
        return DASH
    s = f"{v:,.{max(0, decimals)}f}"
    return s.replace(",", sep) if sep != "," else s


def fmt_int(v):
    return fmt_num(v, 0)


def fmt_pm(m, sd, decimals=2, sep=","):
    """'mean ± sd' ('mean' alone without sd; '-' without mean)."""
    if num(m) is None:
        return DASH
    if num(sd) is None:
        return fmt_num(m, decimals, sep)
    return f"{fmt_num(m, decimals, sep)} {PM} {fmt_num(sd, decimals, sep)}"


def fmt_pct_frac(f, decimals=1):
    """A fraction 0..1 as a percentage."""
    f = num(f)
    return DASH if f is None else f"{f * 100:.{decimals}f} %"


def fmt_s(v):
    v = num(v)
    if v is None:
        return DASH
    return f"{v:.1f}" if abs(v) < 1000 else f"{v:,.0f}"


def text_of(v):
    """Free-form header fields (strings, objects, lists) as one line of text."""
    if v is None or v == "":
        return DASH
    if isinstance(v, dict):
        return ", ".join(f"{k} {text_of(x)}" for k, x in v.items()) or DASH
    if isinstance(v, list):
        return ", ".join(text_of(x) for x in v) or DASH
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def md_cell(s):
    """Text safe inside a markdown table cell (no pipes, no line breaks)."""
    return str(s).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def md_table(headers, rows, right=()):
    """A markdown table; columns whose index is in `right` are right-aligned."""
    out = ["| " + " | ".join(md_cell(h) for h in headers) + " |",
           "|" + "|".join("---:" if i in right else "---" for i in range(len(headers))) + "|"]
    for r in rows:
        cells = list(r) + [""] * (len(headers) - len(r))
        out.append("| " + " | ".join(md_cell(c) for c in cells[:len(headers)]) + " |")
    return out


# --- the paper's figures (other hardware, Mininet; measured by its authors) -----------------------

PAPER_CONTROLLERS = ("OpenDaylight", "Ryu", "ONOS")
PAPER_T3 = {
    "udp_loss_pct": ("0.011 \u00b1 0.001", "0.000 \u00b1 0.000", "0.002 \u00b1 0.001"),
    "udp_jitter_ms": ("0.63 \u00b1 0.32", "0.73 \u00b1 0.24", "0.93 \u00b1 0.41"),
    "tcp_single_mbps": ("617", "639", "673"),
    "reactive_rtt_ms": ("0.131 \u00b1 0.014", "15.98 \u00b1 8.41", "0.159 \u00b1 0.014"),
    "rppt_mean_ms": ("0.44 \u00b1 0.06", "4.86 \u00b1 1.36", "0.42 \u00b1 0.04"),
    "continuity_pct": ("100.0\u2021", "99.9", "100.0\u2021"),
    "fsr_flows_per_s": ("355 \u00b1 54", "441 \u00b1 115", "393 \u00b1 56"),
    "table_peak": ("10 829 \u00b1 2 793", "13 048 \u00b1 3 070", "26 717 \u00b1 10 479"),
    "cpu_pct": ("28.2 \u00b1 1.5", "18.8 \u00b1 4.3", "12.1 \u00b1 1.6"),
    "rss_mb": ("2.4 GB (\u2248 1 GB live heap)", "107 \u00b1 17 MB",
               "1.8 GB (\u2248 0.4 GB live heap)"),
}
# For the resource figure: (value, sd or None, label). GB taken as 1024 MB, like rss_mb.
PAPER_CPU = {"OpenDaylight": (28.2, 1.5), "Ryu": (18.8, 4.3), "ONOS": (12.1, 1.6)}
PAPER_MEM_MB = {"OpenDaylight": (2.4 * 1024, None, "2.4 GB"), "Ryu": (107.0, 17.0, "107 MB"),
                "ONOS": (1.8 * 1024, None, "1.8 GB")}
# Table 2: pooled RPPT p50 / p90 / p95 / p99 (ms).
PAPER_T2 = (
    ("OpenDaylight", "idle", (0.34, 0.74, 0.93, 1.43)),
    ("OpenDaylight", "churn", (0.32, 0.72, 0.91, 1.97)),
    ("ONOS", "idle", (0.35, 0.68, 0.83, 1.22)),
    ("ONOS", "churn", (0.32, 0.74, 1.01, 2.09)),
    ("Ryu", "idle", (3.48, 7.66, 9.03, 15.39)),
    ("Ryu", "churn", (3.86, 7.35, 11.83, 20.92)),
)

# --- metrics -------------------------------------------------------------------------------------


def _sum_present(*vals):
    present = [v for v in (num(x) for x in vals) if v is not None]
    return sum(present) if present else None


def _kb_to_mb(v):
    v = num(v)
    return None if v is None else v / 1024.0


METRICS = {
    "udp_loss_pct": lambda r: dig(r, "phases", "udp", "loss_pct_mean"),
    "udp_jitter_ms": lambda r: dig(r, "phases", "udp", "jitter_ms_mean"),
    "reactive_rtt_ms": lambda r: dig(r, "phases", "icmp", "first_rtt_ms", "mean"),
    "steady_rtt_ms": lambda r: dig(r, "phases", "icmp", "steady_rtt_ms", "mean"),
    "tcp_single_mbps": lambda r: dig(r, "phases", "tcp", "single", "mbps_mean"),
    "tcp_concurrent_aggregate_mbps": lambda r: dig(r, "phases", "tcp", "concurrent", "aggregate_mbps"),
    "rppt_mean_ms": lambda r: dig(r, "rppt", "all", "mean"),
    "continuity_pct": lambda r: dig(r, "phases", "continuity", "continuity_pct"),
    "setup_failures": lambda r: _sum_present(dig(r, "phases", "continuity", "setup_failures"),
                                             dig(r, "phases", "churn", "failed")),
    "mid_session_breaks": lambda r: dig(r, "phases", "continuity", "mid_session_breaks"),
    "fsr_flows_per_s": lambda r: dig(r, "phases", "churn", "fsr_flows_per_s"),
    "table_peak": lambda r: dig(r, "phases", "churn", "table_peak"),
    "churn_conn_per_s": lambda r: dig(r, "phases", "churn", "conn_per_s"),
    "cpu_pct": lambda r: dig(r, "controller", "cpu_pct_mean"),
    "rss_mb": lambda r: _kb_to_mb(dig(r, "controller", "rss_kb_peak")),
    "threads": lambda r: dig(r, "controller", "threads"),
}


class Run:
    def __init__(self, mode, k, path):
        self.mode, self.k, self.path = mode, k, path
        self.res = {}
        self.problems = []
        self.rppt = None  # {"idle": [...], "churn": [...]} or None when rppt.json is missing
        doc, err = read_json(os.path.join(path, "result.json"))
        if err:
            warn(err)
            self.problems.append("result.json unreadable")
        elif doc is None:
            self.problems.append("no result.json")
        elif not isinstance(doc, dict):
            self.problems.append("result.json is not an object")
        else:
            self.res = doc
            self.problems += [text_of(p) for p in as_list(doc.get("problems"))]
        self.ok = self.res.get("ok") is True
        doc, err = read_json(os.path.join(path, "rppt.json"))
        if err:
            warn(err)
        if isinstance(doc, dict):
            self.rppt = {k: [v for v in as_list(doc.get(k)) if num(v) is not None]
                         for k in ("idle", "churn")}
        elif doc is not None:
            warn(f"{path}/rppt.json is not an object; left out of the pooled RPPT")

    def metric(self, name):
        v = num(METRICS[name](self.res))
        if v is None and name == "rppt_mean_ms" and self.rppt is not None:
            # rppt.all missing from result.json: the mean of the run's own samples
            v = pooled_stats(self.rppt["idle"] + self.rppt["churn"])["mean"]
        return v


def discover(out_dir, params):
    """{mode: [Run, ...] sorted by K}: params' modes first (in their order), then the known
    modes, then any other directory holding run-K directories."""
    order = [m for m in as_list(params.get("modes")) if isinstance(m, str) and m]
    for m in KNOWN_MODES:
        if m not in order:
            order.append(m)
    try:
        entries = sorted(os.listdir(out_dir))
    except OSError:
        entries = []
    for m in entries:
        if m not in order and os.path.isdir(os.path.join(out_dir, m)):
            order.append(m)
    modes = {}
    for m in order:
        mdir = os.path.join(out_dir, m)
        if not os.path.isdir(mdir):
            continue
        runs = []
        for e in os.listdir(mdir):
            mt = re.fullmatch(r"run-(\d+)", e)
            if mt and os.path.isdir(os.path.join(mdir, e)):
                runs.append(Run(m, int(mt.group(1)), os.path.join(mdir, e)))
        if runs:
            modes[m] = sorted(runs, key=lambda r: r.k)
    return modes


def summarise_mode(runs):
    metrics = {}
    for name in METRICS:
        pairs = [(r.k, r.metric(name)) for r in runs]
        pairs = [(k, v) for k, v in pairs if v is not None]
        s = mean_sd(v for _, v in pairs)
        s["values"] = [v for _, v in pairs]
        s["run_ids"] = [k for k, _ in pairs]
        metrics[name] = s
    with_samples = [r for r in runs if r.rppt is not None]
    pooled = {cls: pooled_stats(x for r in with_samples for x in r.rppt[cls])
              for cls in ("idle", "churn")}
    return {"runs": len(runs), "ok_runs": sum(1 for r in runs if r.ok), "metrics": metrics,
            "rppt_pooled": pooled,
            "rppt_pooled_runs": [r.k for r in with_samples],
            "run_status": [{"run": r.k, "ok": r.ok, "problems": r.problems} for r in runs]}


# --- effect.json ---------------------------------------------------------------------------------

def interval_s(cfg):
    v = num(cfg.get("interval_ms"))
    return None if v is None else v / 1000.0


def after_entry(scan, rotations):
    for a in as_list(scan.get("after")):
        if isinstance(a, dict) and num(a.get("rotations")) == rotations:
            return a
    return None


def decay_points(scan):
    pts = []
    for p in as_list(scan.get("decay")):
        if isinstance(p, (list, tuple)) and len(p) >= 2 and num(p[0]) is not None \
                and num(p[1]) is not None:
            pts.append((p[0], p[1]))
    return sorted(pts)


def effect_configs(effect):
    return [c for c in as_list(as_dict(effect).get("configs")) if isinstance(c, dict)]


def scans_of(cfg):
    return [s for s in as_list(cfg.get("scans")) if isinstance(s, dict)]


def summarise_effect(effect):
    if not isinstance(effect, dict):
        return None
    out = {k: effect.get(k) for k in ("port", "attacker", "vip_range", "grace_accept_ms")}
    out["configs"] = []
    for cfg in effect_configs(effect):
        iv = interval_s(cfg)
        c = {"label": cfg.get("label"), "cpam": cfg.get("cpam"), "interval_ms": cfg.get("interval_ms"),
             "problems": [text_of(x) for x in as_list(cfg.get("problems"))], "scans": []}
        for s in scans_of(cfg):
            scan_s = num(s.get("scan_s"))
            pts = decay_points(s)
            c["scans"].append({
                "scanner": s.get("scanner"), "range": s.get("range"), "scan_s": s.get("scan_s"),
                "found": s.get("found"), "true_targets": s.get("true_targets"),
                "correct": s.get("correct"), "live": s.get("live"),
                "after": [a for a in as_list(s.get("after")) if isinstance(a, dict)],
                "worthless_after_s": s.get("worthless_after_s"),
                # null in effect.json means "never within the phase"; a missing key is unknown
                "worthless_never": "worthless_after_s" in s and s["worthless_after_s"] is None,
                "scan_over_interval": (scan_s / iv) if (scan_s is not None and iv) else None,
                "decay_points": len(pts),
                "final_fraction": pts[-1][1] if pts else None,
                "final_t_s": pts[-1][0] if pts else None,
            })
        u = cfg.get("unlisted")
        if isinstance(u, dict):   # CPAM configs: the scan of the real /16 from an unlisted source
            fr = u.get("found_real")
            c["unlisted"] = {k: u.get(k) for k in ("source", "range", "scanner", "scan_s", "up")}
            c["unlisted"]["found_real"] = [text_of(x) for x in fr] if isinstance(fr, list) else None
            c["unlisted"]["found_real_n"] = len(fr) if isinstance(fr, list) else None
        out["configs"].append(c)
    return out


def unlisted_of(summary):
    """(config, its unlisted-source summary) for every config that has one."""
    return [(c, c["unlisted"]) for c in (summary or {}).get("configs", []) if isinstance(c.get("unlisted"), dict)]


def fmt_worthless(s):
    w = num(s.get("worthless_after_s"))
    if w is not None:
        return fmt_s(w)
    return "never (within the phase)" if s.get("worthless_never") else DASH


def effect_sentences(summary):
    """What the effectiveness figures show, computed from the data."""
    if not summary or not summary.get("configs"):
        return []
    static = [(c, s) for c in summary["configs"] if c.get("cpam") is False for s in c["scans"]]
    cpam = [(c, s) for c in summary["configs"] if c.get("cpam") is True for s in c["scans"]]
    parts = []
    fin = [(s["final_fraction"], s["final_t_s"]) for _, s in static
           if num(s["final_fraction"]) is not None]
    if fin:
        lo = min(fin, key=lambda t: t[0])
        parts.append(f"without CPAM, at least {fmt_pct_frac(lo[0])} of a scan's results were "
                     f"still reachable at the end of the phase ({fmt_s(lo[1])} s after the scan)")
    f1 = [(num(dig(after_entry(s, 1) or {}, "fraction")), c, s) for c, s in cpam]
    f1 = [t for t in f1 if t[0] is not None]
    if f1:
        hi = max(f1, key=lambda t: t[0])
        parts.append(f"with CPAM, at most {fmt_pct_frac(hi[0])} were still reachable after one "
                     f"rotation ({text_of(hi[1].get('label'))}, {text_of(hi[2].get('scanner'))})")
    known = [s for _, s in cpam if num(s["worthless_after_s"]) is not None or s.get("worthless_never")]
    if known:
        done = [num(s["worthless_after_s"]) for s in known if num(s["worthless_after_s"]) is not None]
        txt = (f"{len(done)} of {len(known)} CPAM scans became worthless (at most 1 % reachable) "
               "within the phase")
        if done:
            txt += f", the latest {fmt_s(max(done))} s after the scan"
        parts.append(txt)
    un = [(c, u) for c, u in unlisted_of(summary) if num(u.get("found_real_n")) is not None]
    if un:
        leaked = [(c, u) for c, u in un if u["found_real_n"]]
        rng = text_of(un[0][1].get("range"))
        if leaked:
            parts.append("a scan of the real " + rng + " from an unlisted source found real addresses in "
                         + ", ".join(f"{text_of(c.get('label'))} ({fmt_int(u['found_real_n'])})" for c, u in leaked)
                         + ": the defense failed there")
        else:
            parts.append(f"a scan of the real {rng} from an unlisted source found no real address "
                         f"in any of the {len(un)} CPAM configurations")
    sentences = []
    if parts:
        text = "; ".join(parts)
        sentences.append(text[0].upper() + text[1:] + ".")
    ratios = [(s["scan_over_interval"], s["scanner"]) for _, s in cpam
              if num(s["scan_over_interval"]) is not None]
    if ratios:
        lo, hi = min(ratios, key=lambda t: t[0]), max(ratios, key=lambda t: t[0])
        sentences.append(f"A scan took between {lo[0]:.2f} ({text_of(lo[1])}) and {hi[0]:.2f} "
                         f"({text_of(hi[1])}) rotation intervals.")
    return sentences


# --- report.md -----------------------------------------------------------------------------------

def mode_label(m):
    return f"sdnator {m}"


def phase_seconds(modes, phase, *path):
    """The first value of phases.PHASE.<path> over all runs (the configured duration)."""
    for runs in modes.values():
        for r in runs:
            v = num(dig(r.res, "phases", phase, *path))
            if v is not None:
                return v
    return None


def first_of(modes, *path):
    for runs in modes.values():
        for r in runs:
            v = dig(r.res, *path)
            if v is not None:
                return v
    return None


def method_paragraph(params, modes, effect):
    def sec(phase, *path):
        v = phase_seconds(modes, phase, *path)
        return f" for {fmt_s(v)} s" if v is not None else ""

    hosts = num(params.get("hosts")) or num(first_of(modes, "fabric", "hosts"))
    pairs = num(params.get("pairs")) or num(first_of(modes, "fabric", "pairs"))
    sw = num(first_of(modes, "fabric", "switches"))
    rate = num(phase_seconds(modes, "udp", "rate_mbps"))
    single = num(phase_seconds(modes, "tcp", "single", "pairs"))
    fabric = f"the {fmt_int(hosts)}-host fabric" if hosts is not None else "the fabric"
    if sw is not None:
        fabric += f" ({fmt_int(sw)} switches)"
    p = f"{fmt_int(pairs)} host pairs" if pairs is not None else "the host pairs"
    text = (
        f"Each run drives {fabric} through five phases in order, each after a settling pause: "
        f"(1) UDP: {p} send a constant-rate stream"
        + (f" of {rate:g} Mbit/s" if rate is not None else "") + sec("udp", "seconds")
        + ", loss and jitter are the means over the pairs; "
        "(2) ICMP: each pair pings a freshly resolved VIP, the first echo is the reactive RTT "
        "(it includes setting up the flow), the later ones the steady RTT; "
        "(3) TCP: every pair at once" + sec("tcp", "concurrent", "seconds")
        + " (aggregate throughput), then "
        + (f"{fmt_int(single)} single sessions" if single is not None else "single sessions")
        + " one at a time" + sec("tcp", "single", "seconds") + " (single-session throughput); "
        "(4) continuity: long-lived TCP sessions held" + sec("continuity", "seconds")
        + " across address rotations, counting setup failures and mid-session breaks; "
        "(5) churn: short TCP connections" + sec("churn", "seconds")
        + ", giving the connection rate, the flow-setup rate (new flows per second from "
        "flow-table snapshots) and the forwarding-table peak. "
        "RPPT is recorded for every PacketIn event of the run; the controller's CPU and RSS are "
        "sampled every 0.5 s. Per-run figures are averaged over the runs (mean "
        f"{PM} sample standard deviation; a run without a value is left out of its mean).")
    if effect is not None:
        text += (" A separate effectiveness phase then scans the VIP range from an attacker host, "
                 "once per configuration (static addresses and CPAM at several rotation intervals), "
                 "and re-probes what each scan found as the addresses rotate; with CPAM the attacker "
                 "also adds an address of its own choosing and scans the hosts' real addresses from it.")
    return text


def header_lines(title, params, modes, effect, out_dir):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    started, finished = params.get("started_at"), params.get("finished_at")
    date = text_of(started) + (f" to {text_of(finished)}" if finished else "")
    interval = num(params.get("interval_ms"))
    phase = params.get("phase")
    kv = [
        ("Date", f"{date} (report generated {now})"),
        ("Command", f"`{text_of(params.get('command'))}`" if params.get("command") else DASH),
        ("Machine", text_of(params.get("machine"))),
        ("Commit", text_of(params.get("git"))),
        ("Scale", text_of(params.get("scale"))),
        ("Hosts", fmt_int(params.get("hosts"))),
        ("Pairs", fmt_int(params.get("pairs"))),
        ("Rotation interval", f"{interval / 1000:g} s" if interval is not None else DASH),
        ("Runs per mode", fmt_int(params.get("runs"))),
        ("Modes measured", ", ".join(f"{m} ({len(r)} runs)" for m, r in modes.items()) or "none"),
        ("Phase settings", text_of(phase)),
        ("Output", os.path.abspath(out_dir)),
    ]
    lines = [f"# {title}", ""]
    lines += [f"- **{k}:** {v}" for k, v in kv]
    missing = [m for m in as_list(params.get("modes")) if isinstance(m, str) and m not in modes]
    if missing:
        lines.append(f"- **Not measured (no runs found):** {', '.join(missing)}")
    lines += ["", "## Method", "", method_paragraph(params, modes, effect), ""]
    return lines


T3_ROWS = (
    # (section, label, metric, decimals, thousands separator, unit suffix for ours)
    ("Data plane", "UDP loss (%)", "udp_loss_pct", 3, ",", ""),
    ("", "UDP jitter (ms)", "udp_jitter_ms", 3, ",", ""),
    ("", "TCP throughput (Mbit/s, single session) \u2020", "tcp_single_mbps", 0, ",", ""),
    ("Control plane", "Reactive RTT (ms)", "reactive_rtt_ms", 3, ",", ""),
    ("", "RPPT mean (ms)", "rppt_mean_ms", 3, ",", ""),
    ("", "Session continuity (%)", "continuity_pct", 2, ",", ""),
    ("", "Flow-setup rate (fl/s)", "fsr_flows_per_s", 0, ",", ""),
    ("", "Forwarding-table peak \u00a7", "table_peak", 0, " ", ""),
    ("Resource cost", "Controller CPU (%)", "cpu_pct", 1, ",", ""),
    ("", "Memory", "rss_mb", 1, ",", " MB"),
)
EXTRA_ROWS = (
    ("Steady RTT (ms)", "steady_rtt_ms", 3, ",", ""),
    ("Setup failures (continuity + churn)", "setup_failures", 1, ",", ""),
    ("Mid-session breaks", "mid_session_breaks", 1, ",", ""),
    ("Churn connections/s", "churn_conn_per_s", 1, ",", ""),
    ("TCP throughput, all pairs at once (Mbit/s, aggregate)", "tcp_concurrent_aggregate_mbps", 0, ",", ""),
    ("Controller threads", "threads", 1, ",", ""),
)


def metric_cell(summary, name, decimals, sep, suffix):
    s = as_dict(summary["metrics"].get(name))
    if num(s.get("mean")) is None:
        return DASH
    cell = fmt_pm(s["mean"], s.get("sd"), decimals, sep) + suffix
    if s.get("n", 0) < summary["runs"]:
        cell += f" (n={s['n']})"
    return cell


def table3_lines(report_modes):
    names = list(report_modes)
    headers = ["", "Metric"] + [mode_label(m) for m in names] + \
        [f"{c} (paper, other hardware)" for c in PAPER_CONTROLLERS]
    rows = []
    for section, label, metric, dec, sep, suffix in T3_ROWS:
        rows.append([f"**{section}**" if section else "", label]
                    + [metric_cell(report_modes[m], metric, dec, sep, suffix) for m in names]
                    + list(PAPER_T3[metric]))
    right = set(range(2, len(headers)))
    lines = ["## Table 3: data plane, control plane and resource cost", ""]
    lines += md_table(headers, rows, right)
    lines += [
        "",
        "\u2020 Host-bound: single-session TCP throughput is limited by the hosts' network stack "
        "(here the one machine that runs the whole fabric), not by the controller.  ",
        "\u2021 The paper measured continuity with a dedicated continuity workload; ours is the "
        "continuity phase (long-lived sessions across rotations).  ",
        "\u00a7 Peak concurrent flows: ours is the largest total flow-entry count seen in the churn "
        "phase's flow-table snapshots.  ",
        "Memory: ours is the controller's peak RSS (MB = 1024 kB).  ",
        "**The OpenDaylight, Ryu and ONOS columns are the paper's published figures, measured by its "
        "authors on other hardware with Mininet. They were not measured here and are not directly "
        "comparable; they show the shape of the comparison only.**",
        "",
        "Further measurements (no paper counterpart):",
        "",
    ]
    headers = ["Metric"] + [mode_label(m) for m in names]
    rows = [[label] + [metric_cell(report_modes[m], metric, dec, sep, suffix) for m in names]
            for label, metric, dec, sep, suffix in EXTRA_ROWS]
    lines += md_table(headers, rows, set(range(1, len(headers))))
    lines.append("")
    return lines


def table2_lines(report_modes):
    headers = ["Controller", "Load", "p50 (ms)", "p90 (ms)", "p95 (ms)", "p99 (ms)", "max (ms)",
               "samples"]
    rows = []
    for m, s in report_modes.items():
        for cls, load in (("idle", "idle"), ("churn", "churn load")):
            p = as_dict(s["rppt_pooled"].get(cls))
            rows.append([mode_label(m), load] + [fmt_num(p.get(k), 3) for k in
                                                 ("p50", "p90", "p95", "p99", "max")]
                        + [fmt_int(p.get("n"))])
    for ctrl, cls, vals in PAPER_T2:
        rows.append([f"{ctrl} (paper)", "idle" if cls == "idle" else "churn load"]
                    + [f"{v:.2f}" for v in vals] + [DASH, DASH])
    lines = ["## Table 2: RPPT percentiles, idle and under churn", ""]
    lines += md_table(headers, rows, set(range(2, len(headers))))
    lines += [
        "",
        "Percentiles are exact (nearest rank) over every RPPT sample of every run of a mode pooled "
        "together (each run's rppt.json), as in the paper. Idle: PacketIns that arrived outside the "
        "churn phase (UDP, ICMP, TCP and continuity phases); churn load: during the churn phase.  ",
        "Our RPPT runs from the PacketIn read off the socket until the last FlowMod/PacketOut of "
        "that event is queued for the shard's write (docs/cpam.md); the paper's ends at the "
        "FlowMod's transmission. The paper's rows were measured on other hardware with Mininet.",
    ]
    gaps = []
    for m, s in report_modes.items():
        missing = [str(r["run"]) for r in s["run_status"] if r["run"] not in s["rppt_pooled_runs"]]
        if missing:
            gaps.append(f"{m}: run{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    if gaps:
        lines.append("")
        lines.append("Runs without a usable rppt.json (not in the pooled figures): " + "; ".join(gaps) + ".")
    lines.append("")
    return lines


def per_run_lines(modes):
    headers = ["Mode", "Run", "ok", "Reactive RTT (ms)", "RPPT mean (ms)", "Continuity (%)",
               "FSR (fl/s)", "Table peak", "CPU (%)", "RSS (MB)", "Problems"]
    rows = []
    for m, runs in modes.items():
        for r in runs:
            rows.append([m, str(r.k), "yes" if r.ok else "**no**",
                         fmt_num(r.metric("reactive_rtt_ms"), 3), fmt_num(r.metric("rppt_mean_ms"), 3),
                         fmt_num(r.metric("continuity_pct"), 2), fmt_num(r.metric("fsr_flows_per_s"), 0),
                         fmt_num(r.metric("table_peak"), 0, " "), fmt_num(r.metric("cpu_pct"), 1),
                         fmt_num(r.metric("rss_mb"), 1), "; ".join(r.problems) or DASH])
    lines = ["## Per run", ""]
    lines += md_table(headers, rows, set(range(3, 10)))
    lines.append("")
    return lines


def effect_lines(effect, summary):
    if summary is None:
        return []
    lines = ["## Defense effectiveness", ""]
    info = [f"attacker {text_of(summary.get('attacker'))}",
            f"port {text_of(summary.get('port'))}",
            f"VIP range {text_of(summary.get('vip_range'))}"]
    if num(summary.get("grace_accept_ms")) is not None:
        info.append(f"grace accept {summary['grace_accept_ms'] / 1000:g} s")
    lines += ["Setup: " + ", ".join(info) + ". Reachable after k rotations: the share of the "
              "scan's results still answering, k rotations after the scan ended (time since the "
              "scan's end). Worthless: the first time at most 1 % were reachable.", ""]
    headers = ["Config", "Scanner", "Range", "Scan (s)", "Found / true (correct)",
               "After 1 rotation", "After 2 rotations", "After 3 rotations", "Worthless after (s)"]
    rows = []
    for c in summary["configs"]:
        for s in c["scans"]:
            row = [text_of(c.get("label")), text_of(s.get("scanner")), text_of(s.get("range")),
                   fmt_s(s.get("scan_s")),
                   f"{fmt_int(s.get('found'))} / {fmt_int(s.get('true_targets'))} "
                   f"({fmt_int(s.get('correct'))})"]
            for k in (1, 2, 3):
                a = after_entry(s, k)
                if a is None or (num(a.get("fraction")) is None and num(a.get("reachable")) is None):
                    row.append(DASH)
                else:
                    row.append(f"{fmt_pct_frac(a.get('fraction'))} ({fmt_int(a.get('reachable'))}) "
                               f"at {fmt_s(a.get('t_s'))} s")
            row.append(fmt_worthless(s))
            rows.append(row)
    lines += md_table(headers, rows, {3})
    lines.append("")
    if any(s["after"] for c in summary["configs"] if c.get("cpam") is False for s in c["scans"]):
        lines += ["Without CPAM no address rotates: its \"after k rotations\" entries are the points "
                  "effect.json reports for that k, for comparison with the CPAM rows.", ""]
    un = unlisted_of(summary)
    if un:
        src = text_of(un[0][1].get("source"))
        lines += [f"Scan of the real {text_of(un[0][1].get('range'))} from an unlisted source: the attacker "
                  f"adds {src} (an address in no protected list) to its interface and scans the block of "
                  "the hosts' real addresses from it (" + text_of(un[0][1].get("scanner")) + "). Up: "
                  "addresses that answered other than the attacker's own; real addresses found: any "
                  "protected host's real address that answered (any at all means the defense failed).", ""]
        rows = []
        for c, u in un:
            n = u.get("found_real_n")
            found = DASH if n is None else (f"{n} found" if not n else
                                            f"{n} found: {', '.join(u['found_real'][:10])}"
                                            + (" ..." if n > 10 else ""))
            rows.append([text_of(c.get("label")), text_of(u.get("source")), text_of(u.get("range")),
                         fmt_s(u.get("scan_s")), fmt_int(u.get("up")), found])
        lines += md_table(["Config", "Source", "Range", "Scan (s)", "Up",
                           "Real addresses found"], rows, {3, 4})
        lines.append("")
    probs = [f"{text_of(c.get('label'))}: {'; '.join(c['problems'])}"
             for c in summary["configs"] if c.get("problems")]
    if probs:
        lines += ["Problems: " + " | ".join(probs), ""]
    # trade-off: rotation interval vs scan time
    scanners = []
    for c in summary["configs"]:
        for s in c["scans"]:
            if s.get("scanner") not in scanners:
                scanners.append(s.get("scanner"))
    headers = ["Config", "Rotation interval (s)"]
    for sc in scanners:
        n = text_of(sc)
        headers += [f"{n} scan (s)", f"{n} scan / interval", f"{n} worthless after (s)"]
    rows = []
    for c in summary["configs"]:
        iv = num(c.get("interval_ms"))
        row = [text_of(c.get("label")), f"{iv / 1000:g}" if iv is not None else
               ("- (static)" if c.get("cpam") is False else DASH)]
        for sc in scanners:
            s = next((x for x in c["scans"] if x.get("scanner") == sc), None)
            if s is None:
                row += [DASH, DASH, DASH]
                continue
            r = num(s.get("scan_over_interval"))
            row += [fmt_s(s.get("scan_s")), f"{r:.2f}" if r is not None else DASH,
                    fmt_worthless(s)]
        rows.append(row)
    lines += ["Trade-off: rotation interval against scan time.", ""]
    lines += md_table(headers, rows, set(range(1, len(headers))))
    lines.append("")
    lines += [" ".join(effect_sentences(summary)) or "No scan produced figures to compare.", ""]
    return lines


def figure_lines(written, skipped_reason):
    desc = {
        "rppt_cdf.png": "pooled RPPT CDF per mode, idle and under churn (log x), with the paper's "
                        "percentiles as markers",
        "per_run.png": "per-run distributions: reactive RTT, RPPT mean, flow-setup rate, table peak",
        "resources.png": "controller CPU and peak RSS per mode (mean \u00b1 sd), the paper's "
                         "figures hatched",
        "timeline.png": "run 1 of each mode: controller CPU and RSS over time, phases shaded, "
                        "rotations marked",
        "effect.png": "share of each scan's results still reachable against time since the scan",
    }
    lines = ["## Figures", ""]
    if skipped_reason:
        lines.append(f"Figures not drawn: {skipped_reason}.")
    elif not written:
        lines.append("No figures (nothing to draw).")
    for f in written:
        lines.append(f"- [{f}]({f}): {desc.get(f, '')}")
    lines.append("")
    return lines


# --- figures -------------------------------------------------------------------------------------

def mode_colors(modes):
    return {m: f"C{i % 10}" for i, m in enumerate(modes)}


def ecdf(vals):
    """(xs, ys) of the empirical CDF, thinned above CDF_MAX_POINTS keeping the top 1 % whole."""
    xs = sorted(vals)
    n = len(xs)
    idx = range(n)
    if n > CDF_MAX_POINTS:
        step = max(1, n // (CDF_MAX_POINTS // 2))
        tail = max(n // 100, 1000)
        idx = sorted(set(range(0, n, step)) | set(range(max(0, n - tail), n)))
    return [xs[i] for i in idx], [(i + 1) / n for i in idx]


def fig_rppt_cdf(modes, report_modes, colors, path):
    fig, ax = plt.subplots(figsize=(9, 5.5))
    drawn = 0
    # A 0.0 sample cannot sit on a log axis: it is drawn at the smallest positive sample.
    positive = [x for runs in modes.values() for r in runs if r.rppt is not None
                for cls in ("idle", "churn") for x in r.rppt[cls] if x > 0]
    floor = min(positive) if positive else 1e-3
    for m, runs in modes.items():
        for cls, style, load in (("idle", "-", "idle"), ("churn", "--", "churn load")):
            vals = [max(floor, x) for r in runs if r.rppt is not None for x in r.rppt[cls]]
            if not vals:
                continue
            xs, ys = ecdf(vals)
            ax.step(xs, ys, where="post", color=colors[m], linestyle=style, linewidth=1.6,
                    label=f"{mode_label(m)}, {load} (n={len(vals):,})")
            drawn += 1
    if not drawn:
        plt.close(fig)
        return False
    markers = {"OpenDaylight": "s", "ONOS": "^", "Ryu": "D"}
    qs = (0.5, 0.9, 0.95, 0.99)
    for ctrl, cls, vals in PAPER_T2:
        filled = cls == "idle"
        ax.plot(vals, qs, linestyle="none", marker=markers[ctrl], markersize=6, color="0.35",
                markerfacecolor="0.35" if filled else "none",
                label=f"{ctrl} (paper), {'idle' if filled else 'churn load'}: p50/p90/p95/p99")
    ax.set_xscale("log")
    ax.set_xlabel("RPPT (ms, log scale)")
    ax.set_ylabel("fraction of events")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title("Rule-programming processing time, pooled over runs")
    ax.legend(fontsize=7.5, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


def fig_per_run(modes, colors, path):
    panels = (("reactive_rtt_ms", "Reactive RTT (ms)"), ("rppt_mean_ms", "RPPT mean (ms)"),
              ("fsr_flows_per_s", "Flow-setup rate (fl/s)"), ("table_peak", "Forwarding-table peak"))
    names = list(modes)
    if not any(r.metric(p) is not None for p, _ in panels for runs in modes.values() for r in runs):
        return False
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for ax, (metric, title) in zip(axes.flat, panels):
        data = []
        for i, m in enumerate(names):
            pts = [(r.k, r.metric(metric)) for r in modes[m]]
            pts = [(k, v) for k, v in pts if v is not None]
            data.append([v for _, v in pts])
            if len(pts) >= 2:
                ax.boxplot([v for _, v in pts], positions=[i], widths=0.5, showfliers=False,
                           medianprops={"color": colors[m]})
            n = len(pts)
            for j, (k, v) in enumerate(pts):
                dx = (j - (n - 1) / 2) * (0.3 / max(1, n - 1)) if n > 1 else 0.0
                ax.plot(i + dx, v, "o", color=colors[m], alpha=0.8, markersize=5)
                if n <= 12:
                    ax.annotate(str(k), (i + dx, v), textcoords="offset points", xytext=(4, 2),
                                fontsize=6.5, color="0.3")
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels([mode_label(m) for m in names])
        ax.set_xlim(-0.6, len(names) - 0.4)
        ax.set_title(title, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        if not any(data):
            ax.text(0.5, 0.5, "no values", ha="center", va="center", transform=ax.transAxes,
                    color="0.5")
    fig.suptitle("Per-run values (points = runs, labelled by run number)")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


def fig_resources(report_modes, colors, path):
    names = list(report_modes)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.8))

    def bars(ax, ours, paper, fmt):
        labels, x = [], 0
        for m in names:
            s = ours(m)
            if num(s.get("mean")) is not None:
                ax.bar(x, s["mean"], yerr=s.get("sd") or 0, color=colors[m], capsize=4)
                ax.annotate(fmt(s["mean"]), (x, s["mean"]), textcoords="offset points",
                            xytext=(0, 3), ha="center", fontsize=7.5)
            labels.append(mode_label(m).replace(" ", "\n", 1))
            x += 1
        for c in PAPER_CONTROLLERS:
            v, sd, txt = paper[c]
            ax.bar(x, v, yerr=sd or 0, color="white", edgecolor="0.4", hatch="//", capsize=4)
            ax.annotate(txt, (x, v), textcoords="offset points", xytext=(0, 3), ha="center",
                        fontsize=7.5)
            labels.append(f"{c}\n(paper)")
            x += 1
        ax.set_xticks(range(x))
        ax.set_xticklabels(labels, fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)

    bars(ax1, lambda m: report_modes[m]["metrics"]["cpu_pct"],
         {c: (v, sd, f"{v:.1f}") for c, (v, sd) in PAPER_CPU.items()}, lambda v: f"{v:.1f}")
    ax1.set_ylabel("controller CPU (%, mean over the run)")
    ax1.set_title("Controller CPU", fontsize=10)
    bars(ax2, lambda m: report_modes[m]["metrics"]["rss_mb"], PAPER_MEM_MB, lambda v: f"{v:.1f} MB")
    ax2.set_yscale("log")
    ax2.set_ylabel("memory (MB, log scale; ours: peak RSS)")
    ax2.set_title("Controller memory", fontsize=10)
    fig.suptitle("Resource cost (paper: other hardware, Mininet; hatched)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


def samples_of(res):
    out = []
    for s in as_list(dig(res, "controller", "samples")):
        if isinstance(s, (list, tuple)) and len(s) >= 3 and num(s[0]) is not None:
            out.append((s[0], num(s[1]), num(s[2])))
    return sorted(out, key=lambda t: t[0])


def fig_timeline(modes, colors, path):
    chosen = []
    for m, runs in modes.items():
        r = next((x for x in runs if x.k == 1 and samples_of(x.res)), None) or \
            next((x for x in runs if samples_of(x.res)), None)
        if r is not None:
            chosen.append((m, r))
    if not chosen:
        return False
    fig, axes = plt.subplots(len(chosen), 1, figsize=(11, 3.4 * len(chosen)), squeeze=False)
    for ax, (m, r) in zip(axes[:, 0], chosen):
        smp = samples_of(r.res)
        t = [s[0] for s in smp]
        ax.plot(t, [s[1] if s[1] is not None else float("nan") for s in smp], color=colors[m],
                linewidth=1.2, label="CPU %")
        ax.set_ylabel("controller CPU (%)")
        ax2 = ax.twinx()
        ax2.plot(t, [s[2] / 1024 if s[2] is not None else float("nan") for s in smp], color="0.3",
                 linewidth=1.0, linestyle="--", label="RSS MB")
        ax2.set_ylabel("RSS (MB)")
        windows = as_dict(r.res.get("phase_windows"))
        names = [p for p in PHASE_ORDER if p in windows] + [p for p in windows if p not in PHASE_ORDER]
        for i, p in enumerate(names):
            w = windows[p]
            if isinstance(w, (list, tuple)) and len(w) >= 2 and num(w[0]) is not None \
                    and num(w[1]) is not None:
                ax.axvspan(w[0], w[1], color=f"C{(i + 2) % 10}", alpha=0.12, linewidth=0)
                ax.text((w[0] + w[1]) / 2, 0.98, p, transform=ax.get_xaxis_transform(),
                        ha="center", va="top", fontsize=8, color="0.25")
        rot = [num(x.get("t_s")) for x in as_list(r.res.get("rotations")) if isinstance(x, dict)]
        rot = [x for x in rot if x is not None]
        for j, x in enumerate(rot):
            ax.axvline(x, color="red", linewidth=0.9, alpha=0.7,
                       label="rotation" if j == 0 else None)
        ax.set_title(f"{mode_label(m)}, run {r.k}", fontsize=10, loc="right")
        ax.set_xlabel("time since the first phase started (s)")
        ax.grid(True, alpha=0.3)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=7.5, loc="lower left", bbox_to_anchor=(0, 1.0),
                  ncol=3, frameon=False, borderaxespad=0.2)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


def fig_effect(effect, path):
    lines = []
    for c in effect_configs(effect):
        for s in scans_of(c):
            pts = decay_points(s)
            if pts:
                lines.append((c, s, pts))
    if not lines:
        return False
    fig, ax = plt.subplots(figsize=(10, 5.5))
    styles = {}
    for i, (c, s, pts) in enumerate(lines):
        color = f"C{i % 10}"
        sc = text_of(s.get("scanner"))
        ls = styles.setdefault(sc, ("-", "--", ":", "-.")[len(styles) % 4])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, linestyle=ls,
                linewidth=1.5, label=f"{text_of(c.get('label'))}, {sc}")
        for a in as_list(s.get("after")):
            t, f = num(dig(a, "t_s")), num(dig(a, "fraction"))
            if t is None:
                continue
            ax.axvline(t, color=color, linestyle=":", linewidth=0.8, alpha=0.5)
            if f is not None:
                ax.plot(t, f, "o", color=color, markersize=4)
                rk = num(dig(a, "rotations"))
                if rk is not None:
                    ax.annotate(f"r{rk:g}", (t, f), textcoords="offset points", xytext=(3, 3),
                                fontsize=7, color=color)
    ax.set_xlabel("time since the scan ended (s)")
    ax.set_ylabel("fraction of the scan's results still reachable")
    ax.set_ylim(-0.02, 1.05)
    ax.grid(True, alpha=0.3)
    ax.set_title("Decay of scan results (points: after k rotations)", fontsize=10)
    ax.legend(fontsize=7.5, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return True


def draw_figures(out_dir, modes, report_modes, effect):
    colors = mode_colors(modes)
    jobs = [("rppt_cdf.png", lambda p: fig_rppt_cdf(modes, report_modes, colors, p)),
            ("per_run.png", lambda p: fig_per_run(modes, colors, p)),
            ("resources.png", lambda p: fig_resources(report_modes, colors, p)),
            ("timeline.png", lambda p: fig_timeline(modes, colors, p)),
            ("effect.png", lambda p: effect is not None and fig_effect(effect, p))]
    written = []
    for name, job in jobs:
        path = os.path.join(out_dir, name)
        try:
            ok = bool(job(path)) if (modes or name == "effect.png") else False
        except Exception as e:  # a figure must not cost the report
            warn(f"{name}: not drawn: {type(e).__name__}: {e}")
            plt.close("all")
            ok = False
        if ok:
            written.append(name)
    return written


# --- main ----------------------------------------------------------------------------------------

def remove_stale(out_dir, keep):
    """Our own figures from an earlier report that this one did not redraw."""
    for name in FIGURES:
        if name not in keep:
            try:
                os.remove(os.path.join(out_dir, name))
            except OSError:
                pass


def main(argv):
    ap = argparse.ArgumentParser(prog=PROG, description="Report of an eval output directory "
                                 "(eval/SCHEMA.md): report.json, report.md and PNG figures.")
    ap.add_argument("out_dir", metavar="OUT_DIR")
    ap.add_argument("--title", default=None, help="report title")
    args = ap.parse_args(argv[1:])
    out_dir = args.out_dir
    if not os.path.isdir(out_dir):
        print(f"{PROG}: {out_dir}: not a directory", file=sys.stderr)
        return 1

    params, err = read_json(os.path.join(out_dir, "params.json"))
    if err:
        warn(err)
    elif params is None:
        warn(f"{out_dir}: no params.json; the header will be mostly empty")
    if not isinstance(params, dict):
        params = {}
    if params.get("schema") not in (None, 1):
        warn(f"params.json is schema {params.get('schema')!r}; this script reads schema 1")

    modes = discover(out_dir, params)
    if not modes:
        warn(f"{out_dir}: no MODE/run-K directories; the report has no measurements")
    report_modes = {m: summarise_mode(runs) for m, runs in modes.items()}

    effect, err = read_json(os.path.join(out_dir, "effect.json"))
    if err:
        warn(err)
    if effect is not None and not isinstance(effect, dict):
        warn("effect.json is not an object; left out")
        effect = None
    effect_summary = summarise_effect(effect)

    title = args.title or "sdnator: continuity-preserving address mutation, evaluation"

    if IMPORT_ERROR is not None:
        skipped = f"matplotlib unavailable ({IMPORT_ERROR}); use /usr/bin/python3"
        warn(f"figures not drawn: {skipped}")
        written = []
    else:
        skipped = None
        written = draw_figures(out_dir, modes, report_modes, effect)
        remove_stale(out_dir, written)

    report = {"schema": 1, "title": title,
              "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "params": params, "modes": report_modes, "effect": effect_summary,
              "figures": written}
    md = header_lines(title, params, modes, effect, out_dir)
    if report_modes:
        md += table3_lines(report_modes) + table2_lines(report_modes) + per_run_lines(modes)
    else:
        md += ["## Measurements", "", "No runs found.", ""]
    md += effect_lines(effect, effect_summary)
    md += figure_lines(written, skipped)

    paths = []
    try:
        p = os.path.join(out_dir, "report.json")
        with open(p + ".tmp", "w", encoding="utf-8") as f:
            json.dump(finite(report), f, indent=1, allow_nan=False, default=str)
            f.write("\n")
        os.replace(p + ".tmp", p)
        paths.append(p)
        p = os.path.join(out_dir, "report.md")
        with open(p + ".tmp", "w", encoding="utf-8") as f:
            f.write("\n".join(md).rstrip("\n") + "\n")
        os.replace(p + ".tmp", p)
        paths.append(p)
    except (OSError, ValueError) as e:
        print(f"{PROG}: cannot write the report: {e}", file=sys.stderr)
        return 1
    for p in paths + [os.path.join(out_dir, f) for f in written]:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
