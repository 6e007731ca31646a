#!/usr/bin/env bash
# Test of scripts/ofbench_report.py on a synthetic report (no ofbench, no controller): a full
# report (two CPAM runs, learning throughput/latency, RFC 8456 metrics, resources, a run with a
# null result, a non-object run, labels needing HTML/markdown escaping) must give the four
# figures, a self-contained report.html and a report.md with the tables; a sparse report in the
# same directory must drop the figures it has no runs for; malformed input must exit non-zero
# with a message on stderr.
# usage: ofbench_report_test.sh [PATH/TO/ofbench_report.py]
#   PYTHON=... picks the interpreter (it needs matplotlib and numpy); else python3, then
#   /usr/bin/python3 (a pyenv python3 first on PATH often lacks matplotlib). Exit 77 (skip) if none has.
set -euo pipefail

SCRIPT=${1:-$(dirname "${BASH_SOURCE[0]}")/../../../scripts/ofbench_report.py}
[[ -f $SCRIPT ]] || { echo "FAIL: no such script: $SCRIPT" >&2; exit 1; }

if [[ -n ${PYTHON:-} ]]; then
  CANDIDATES=("$PYTHON")
else
  CANDIDATES=(python3 /usr/bin/python3)
fi
PY=""
for c in "${CANDIDATES[@]}"; do
  if "$c" -c 'import matplotlib, numpy' 2>/dev/null; then PY=$c; break; fi
done
[[ -n $PY ]] || { echo "SKIP: no python3 with matplotlib and numpy among: ${CANDIDATES[*]}" >&2; exit 77; }

WORK=$(mktemp -d /tmp/ofbench-report-test.XXXXXX)
FAILS=0

cleanup() {
  local rc=$?
  if ((rc == 0)); then rm -rf "$WORK"; else echo "(work dir kept: $WORK)" >&2; fi
  exit $rc
}
trap cleanup EXIT

step() { printf '[ofbench_report_test] %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; FAILS=$((FAILS + 1)); }

step "python: $PY"

# has FILE TEXT [WHY]: FILE contains TEXT literally.
has() { grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks '$2'${3:+ ($3)}"; }
lacks() { ! grep -qF -- "$2" "$1" || fail "$(basename "$1") contains '$2'${3:+ ($3)}"; }
count() { { grep -oF -- "$2" "$1" || true; } | wc -l; }
is_png() { [[ -s $1 && $(head -c 4 "$1" | od -An -c | tr -d ' ') == '211PNG' ]]; }

# The fixture: the runs have the shapes ofbench writes, with fixed seeds so values are stable.
# Numbers chosen to test formatting: 53000/10000 is "5.3x", 123456.7/s is "123,457", a mean of
# 42.34 µs is "42.3" and a p99 of 1234.6 µs is "1,235".
"$PY" - "$WORK/full.json" "$WORK/sparse.json" <<'PY'
import json, math, random, sys

rng = random.Random(7)

def stats(vals):
    vals = sorted(vals)
    if not vals:
        return {"count": 0, "min": None, "mean": None, "p50": None, "p90": None, "p99": None,
                "p999": None, "max": None}
    n = len(vals)
    rank = lambda q: vals[max(1, math.ceil(q * n)) - 1]  # nearest rank
    return {"count": n, "min": vals[0], "mean": sum(vals) / n, "p50": rank(0.5), "p90": rank(0.9),
            "p99": rank(0.99), "p999": rank(0.999), "max": vals[-1]}

def resources(base_mib):
    return {"pid": 4242, "cpu_pct_mean": 37.5, "cpu_pct_max": 91.0, "rss_kib_max": int(base_mib * 1024 + 900),
            "ctxt_switches": 1000,
            "samples": [{"t_s": t * 0.5, "cpu_pct": 20 + rng.random() * 60, "rss_kib": int(base_mib * 1024 + t * 30),
                         "voluntary_ctxt": t * 10, "nonvoluntary_ctxt": t, "threads": {"1:sdnator": 10.0}}
                        for t in range(30)]}

def cpam_run(rotating_share, with_ctrl):
    lat, rot = [], []
    for i in range(6000):
        r = 1 if rng.random() < rotating_share else 0
        lat.append(rng.lognormvariate(5.5 + 0.6 * r, 0.5))
        rot.append(r)
    t = sorted(rng.uniform(0, 30) for _ in lat)
    rotations = [{"start_s": 5.0, "end_s": 7.5, "flow_mods": 400}, {"start_s": 15.0, "end_s": 17.0, "flow_mods": 380},
                 {"start_s": 25.0, "end_s": 25.0, "flow_mods": 0}] if rotating_share else []
    timeline = [{"t_s": float(s), "sent": 200, "answered": 199, "p50_us": 250.0 + s, "p99_us": 900.0 + 10 * s,
                 "max_us": None if s == 12 else 3000.0, "rotating": 5 <= s < 8} for s in range(30)]
    res = {"tool": "ofbench", "schema": 1, "mode": "cpam", "controller": "127.0.0.1:6653",
           "config": {"hosts": 16}, "duration_s": 30.0, "requests": 6000, "answered": 5990, "lost": 10,
           "rate_per_s": 199.7, "latency_us": stats(lat), "timeline": timeline,
           "samples": {"t_s": t, "latency_us": lat, "rotating": rot}, "rotations": rotations,
           "cpam": {"rppt_us": {"all": stats(lat), "rotating": stats([v for v, r in zip(lat, rot) if r]),
                                "quiet": stats([v for v, r in zip(lat, rot) if not r])},
                    "dns_us": stats([80.0, 95.5, 120.0]), "arp_us": stats([]), "events": 6000,
                    "failures": 2, "dns_changes": 1},
           "switches": {"count": 8, "connected": 8}, "resources": resources(40)}
    if with_ctrl:
        res["controller_stats"] = {"rppt_us": {"all": stats([30.0, 45.0, 800.0]), "rotating": stats([]),
                                               "quiet": stats([30.0, 45.0])}}
    return res

full = {
    "title": "ofbench synthetic report", "generated_unix": 1700000000.0, "machine": "2 cores, test box",
    "commit": "abc1234", "command": "ofbench --mode cpam --json out.json --note '```' | tee log",
    "runs": [
        {"label": "cpam sharded", "group": "cpam", "controller": "sdnator", "result": cpam_run(0.3, True)},
        {"label": "cpam quiet-only", "group": "cpam", "controller": "sdnator", "result": cpam_run(0.0, False)},
        {"label": "sdnator_learning", "group": "learning-throughput", "controller": "sdnator",
         "result": {"mode": "throughput", "requests": 530000, "answered": 530000, "lost": 0, "rate_per_s": 53000.0,
                    "latency_us": stats([100.0, 150.0, 2000.0]), "resources": resources(30)}},
        {"label": "ryu <v4.34>", "group": "learning-throughput", "controller": "ryu",
         "result": {"mode": "throughput", "requests": 100000, "answered": 99000, "lost": 1000, "rate_per_s": 10000.0}},
        {"label": "sdnator latency", "group": "learning-latency", "controller": "sdnator",
         "result": {"mode": "latency", "requests": 1000, "answered": 1000, "lost": 0, "rate_per_s": 9000.0,
                    "latency_us": {"count": 1000, "min": 20.0, "mean": 42.34, "p50": 40.0, "p90": 60.0,
                                   "p99": 1234.6, "p999": 2000.0, "max": 2500.0}}},
        {"label": "ryu & co latency", "group": "learning-latency", "controller": "ryu",
         "result": {"mode": "latency", "latency_us": None}},
        {"label": "rfc8456 sdnator", "group": "rfc8456", "controller": "sdnator",
         "result": {"mode": "discovery", "rfc8456": {"setup_rate_per_s": 123456.7,
                                                     "path_setup_us": stats([50.0, 70.0, 300.0]),
                                                     "recovery_time_ms": None, "loss_free_ratio": 0.987}}},
        {"label": "broken run", "group": "other", "controller": "x", "result": None},
        42,
    ],
}
sparse = {"title": "sparse", "runs": [full["runs"][6]]}
for path, doc in zip(sys.argv[1:], (full, sparse)):
    with open(path, "w") as f:
        json.dump(doc, f)
PY

step "full report"
OUT=$WORK/out
rc=0
"$PY" "$SCRIPT" "$WORK/full.json" "$OUT" >"$WORK/full.stdout" 2>"$WORK/full.stderr" || rc=$?
if ((rc != 0)); then
  fail "full report: exit $rc"; cat "$WORK/full.stderr" >&2
fi
for f in rppt_cdf.png latency_timeline.png learning.png resources.png; do
  is_png "$OUT/$f" || fail "$f missing or not a PNG"
done
for f in rppt_cdf.png latency_timeline.png learning.png resources.png report.html report.md; do
  [[ -s $OUT/$f ]] || fail "$f missing or empty"
  grep -qxF -- "$OUT/$f" "$WORK/full.stdout" || fail "stdout does not list $OUT/$f"
done
grep -qF 'runs[8]' "$WORK/full.stderr" || fail "no warning about the non-object run"

HTML=$OUT/report.html MD=$OUT/report.md
for label in "cpam sharded" "cpam quiet-only" "sdnator_learning" "ryu &lt;v4.34&gt;" "sdnator latency" \
             "ryu &amp; co latency" "rfc8456 sdnator" "broken run"; do
  has "$HTML" "$label" "run label"
done
lacks "$HTML" "<v4.34>" "unescaped label"
n=$(count "$HTML" '<img src="data:image/png;base64,')
((n == 4)) || fail "report.html embeds $n images, expected 4"
lacks "$HTML" 'src="rppt_cdf.png"' "the HTML must not depend on the PNG files"
has "$HTML" "ofbench synthetic report"
has "$HTML" "2023-11-14 22:13:20 UTC" "generated time"
has "$HTML" "abc1234"

step "report.md"
has "$MD" "| label | group | controller | mode | requests | answered | lost | rate/s | p50 µs | p99 µs | max µs | CPU mean % | RSS max MiB |" "summary header"
has "$MD" "| RPPT | samples | p50 µs | p99 µs | max µs | controller p99 µs | controller max µs |" "CPAM header with controller columns"
has "$MD" "| RPPT | samples | p50 µs | p99 µs | max µs |" "CPAM header"
has "$MD" "| events | failures | DNS changes | rotations | rotation FlowMods |" "CPAM counters header"
has "$MD" "| metric | rfc8456 sdnator |" "RFC 8456 header"
has "$MD" "| label | group | controller | rate/s | vs slowest | mean µs | p50 µs | p99 µs | max µs |" "learning header"
for f in rppt_cdf.png latency_timeline.png learning.png resources.png; do
  grep -qE "^!\[[^]]*\]\($f\)$" "$MD" || fail "report.md has no image link to $f"
done
lacks "$MD" "data:image" "the markdown links the PNGs"
has "$MD" "5.3x" "throughput ratio"
has "$MD" "| 123,457 |" "a rate with thousands separators"
has "$MD" "| 42.3 |" "µs below 100: one decimal"
has "$MD" "| 1,235 |" "µs from 100: integer"
has "$MD" "| 3 | 780 |" "3 rotations, 780 FlowMods"
has "$MD" "ryu \\<v4.34\\>" "markdown-escaped label"
has "$MD" '````' "the command contains a backtick run: a longer fence"

step "sparse report in the same directory: figures without runs are dropped"
rc=0
"$PY" "$SCRIPT" "$WORK/sparse.json" "$OUT" >"$WORK/sparse.stdout" 2>"$WORK/sparse.stderr" || rc=$?
((rc == 0)) || { fail "sparse report: exit $rc"; cat "$WORK/sparse.stderr" >&2; }
for f in rppt_cdf.png latency_timeline.png learning.png resources.png; do
  [[ ! -e $OUT/$f ]] || fail "sparse report left $f"
done
[[ $(wc -l <"$WORK/sparse.stdout") -eq 2 ]] || fail "sparse report printed $(wc -l <"$WORK/sparse.stdout") paths, expected 2"
lacks "$HTML" "<img" "no figures, no images"
lacks "$MD" "![" "no figures, no links"
lacks "$MD" "## CPAM" "no CPAM runs, no CPAM section"
has "$MD" "| metric | rfc8456 sdnator |"

step "malformed input"
# bad NAME RC_WANT STDERR_TEXT JSON_TEXT: the script must exit RC_WANT (or any non-zero for "nz")
# and say STDERR_TEXT on stderr.
bad() {
  local name=$1 want=$2 text=$3 rc=0
  if [[ $name != missing-file ]]; then printf '%s' "$4" >"$WORK/$name.json"; fi
  "$PY" "$SCRIPT" "$WORK/$name.json" "$WORK/out-$name" >"$WORK/$name.stdout" 2>"$WORK/$name.stderr" || rc=$?
  if [[ $want == nz ]]; then ((rc != 0)) || fail "$name: exit 0"; else ((rc == want)) || fail "$name: exit $rc, expected $want"; fi
  grep -qF -- "$text" "$WORK/$name.stderr" || fail "$name: stderr lacks '$text': $(cat "$WORK/$name.stderr")"
  [[ ! -e $WORK/out-$name/report.html ]] || fail "$name: wrote a report anyway"
}
bad no-runs nz '"runs" is missing' '{"title": "no runs here"}'
bad runs-not-list nz '"runs" is a dict' '{"runs": {"label": "x"}}'
bad not-object nz 'expected an object' '[1, 2]'
bad not-json nz 'not valid JSON' '{"runs": ['
bad missing-file nz 'cannot read' ''
rc=0; "$PY" "$SCRIPT" >/dev/null 2>"$WORK/usage.stderr" || rc=$?
((rc == 2)) || fail "no arguments: exit $rc, expected 2"
grep -qF usage "$WORK/usage.stderr" || fail "no arguments: no usage on stderr"

if ((FAILS)); then echo "ofbench_report_test: $FAILS check(s) failed" >&2; exit 1; fi
echo "ofbench_report_test: all checks passed"
