#!/usr/bin/env bash
# The CPAM scaling table: sdnator (sharded runtime) under ofbench's cpam mode, one run per
# cell of hosts x rotation interval T. Each cell reports the switch-side RPPT (SYN's PacketIn
# -> SYN at the server) and the controller's own, connections set up per second, the
# controller's CPU and RSS, and failures. Writes OUT/scale.json and OUT/scale.md.
#
#   bash scripts/ofbench_scale.sh [--out DIR] [--hosts "500 10000 100000"] [--intervals "60000 1000"]
#        [--lambda L] [--duration S] [--runtimes "sharded cooperative cooperative-yield"]
# Campus: 1 core, 6 aggregation switches, one edge per 42 hosts (12 edges at 500 hosts, as the
# paper). Rotation pacing is the controller's default (derived from T and the host count: Table
# 1's 20 hosts per batch, 150 ms apart, at 500 hosts and T = 60 s); quarantine is kept under the
# time the VIP pool lasts. Duration: T + 10 s (at least 30 s), so every cell sees a rotation.
# --runtimes runs every cell in each runtime mode (sharded, cooperative, cooperative-yield) and
# draws OUT/scale.png (RPPT p99 and rotation duration against the host count, one line a mode)
# when python3-matplotlib is installed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

OUT="$SDN_ROOT/docs/ofbench"
HOSTS_LIST="500 10000 100000"
INTERVALS="60000 1000"
LAMBDA=50 DURATION=""
RUNTIMES="sharded"
while (($#)); do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --hosts) HOSTS_LIST=$2; shift 2 ;;
    --intervals) INTERVALS=$2; shift 2 ;;
    --lambda) LAMBDA=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --runtimes) RUNTIMES=$2; shift 2 ;;
    -h|--help) sed -n 2,17p "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
BIN="$SDN_ROOT/build/bin"
[[ -x $BIN/ofbench && -x $BIN/sdnator ]] || die "build first (scripts/setup.sh)"
PY=/usr/bin/python3
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/ofbench-scale.XXXXXX)
CTRL_PID=""
cleanup() {
  [[ -z $CTRL_PID ]] || { kill "$CTRL_PID" 2>/dev/null || true; wait "$CTRL_PID" 2>/dev/null || true; }
  rm -rf "$WORK"
}
trap cleanup EXIT
CELLS="$WORK/cells.jsonl"
: >"$CELLS"

for hosts in $HOSTS_LIST; do
  edges=$(((hosts + 41) / 42)); ((edges >= 12)) || edges=12
  for t in $INTERVALS; do
   for variant in $RUNTIMES; do
    runtime=${variant%-yield}
    yield=false; [[ $variant == *-yield ]] && yield=true
    case $runtime in sharded|cooperative) ;; *) die "unknown runtime $variant (sharded, cooperative, cooperative-yield)" ;; esac
    # Pacing: the controller's own (rotation_batch = 0: batches sized from T and the host count,
    # switch_flowmod_budget per switch); recorded as batch 0.
    batch=0 delay=150
    # VIP pool: every host needs a new VIP per rotation; grace (5 s) and quarantine hold old ones.
    quarantine=30000; ((t >= 10000)) || quarantine=$((t * 3))
    held=$(( (5000 + quarantine) / t + 2 ))
    pool=$((hosts * (held + 1))); ((pool >= 6000)) || pool=6000
    dur=${DURATION:-$((t / 1000 + 10))}; ((dur >= 30)) || dur=30
    "$BIN/ofbench" --mode cpam --topology campus --hosts "$hosts" --edges "$edges" --write-hosts "$WORK/hosts.txt" >/dev/null
    port=$(free_port)
    cat >"$WORK/cell.toml" <<EOF
[controller]
apps = ["topology", "cpam", "forwarding"]
[sqlite]
path = "$WORK/archive-$variant-$hosts-$t.db"
[cpam]
runtime = "$runtime"
yield_between_batches = $yield
rotation_interval_ms = $t
quarantine_ms = $quarantine
vip_range = "10.128.0.0/9"
vip_pool = $pool
hosts_file = "$WORK/hosts.txt"
EOF
    log "ofbench_scale: $variant, $hosts hosts ($((7 + edges)) switches), T = $t ms, derived pacing, pool $pool, $dur s"
    "$BIN/sdnator" run -c "$WORK/cell.toml" --listen "127.0.0.1:$port" --stats-file "$WORK/stats.json" --log-level warn \
      >"$WORK/sdnator-$variant-$hosts-$t.log" 2>&1 &
    CTRL_PID=$!
    for _ in $(seq 1 100); do [[ -n $(ss -Hltn "( sport = :$port )") ]] && break; sleep 0.1; done
    if "$BIN/ofbench" --mode cpam --topology campus --hosts "$hosts" --edges "$edges" -c "127.0.0.1:$port" \
        --lambda "$LAMBDA" -d "$dur" -w 1 --pid "$CTRL_PID" --controller-stats "$WORK/stats.json" \
        --rotation-gap-ms "$((t / 4 < 1000 ? t / 4 : 1000))" --handshake-timeout-ms 60000 --max-samples 2000 --json "$WORK/cell.json" -q | sed 's/^/  /'; then
      "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); j.pop("samples", None); j.pop("timeline", None); j["cell"]={"hosts": int(sys.argv[2]), "interval_ms": int(sys.argv[3]), "batch": int(sys.argv[4]), "batch_delay_ms": int(sys.argv[5]), "pool": int(sys.argv[6]), "runtime": sys.argv[7]}; print(json.dumps(j))' \
        "$WORK/cell.json" "$hosts" "$t" "$batch" "$delay" "$pool" "$variant" >>"$CELLS"
    else
      warn "cell $variant $hosts x $t ms failed; controller log:"
      tail -5 "$WORK/sdnator-$variant-$hosts-$t.log" >&2 || true
      printf '{"cell": {"hosts": %d, "interval_ms": %d, "runtime": "%s"}, "error": "ofbench failed"}\n' "$hosts" "$t" "$variant" >>"$CELLS"
    fi
    kill "$CTRL_PID" 2>/dev/null || true; wait "$CTRL_PID" 2>/dev/null || true; CTRL_PID=""
   done
  done
done

"$PY" - "$CELLS" "$OUT/scale.json" "$OUT/scale.md" "$(git -C "$SDN_ROOT" rev-parse --short HEAD 2>/dev/null || echo ?)" "$LAMBDA" "$OUT/scale.png" <<'EOF'
import json, statistics, sys, time
cells = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump({"generated_unix": time.time(), "commit": sys.argv[4], "cells": cells}, open(sys.argv[2], "w"), indent=1)
def f(v, d=0):
    return "–" if v is None else (f"{v:,.{d}f}")
def rotation_ms(c):
    # the switches' view: from a rotation's first FlowMod to its last (ofbench's rotation windows)
    d = [(r["end_s"] - r["start_s"]) * 1000 for r in c.get("rotations", []) if r.get("end_s") is not None]
    return statistics.median(d) if d else None
def p99(c):
    return c["cpam"]["rppt_us"]["all"]["p99"]
rows = ["| runtime | hosts | switches | T | rotations seen | rotation p50 ms | RPPT p99 switch side µs (rotating) | RPPT max µs | controller RPPT p99 / max µs | set-ups/s | failures | disconnects | CPU % mean | RSS MiB max |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for c in cells:
    cell = c["cell"]
    rt = cell.get("runtime", "sharded")
    if "error" in c:
        rows.append(f"| {rt} | {cell['hosts']:,} | | {cell['interval_ms']/1000:g} s | ofbench failed | | | | | | | | | |")
        continue
    r = c["cpam"]["rppt_us"]
    cs = (c.get("controller_stats") or {}).get("rppt_us", {}).get("all") or {}
    res = c.get("resources") or {}
    rows.append(f"| {rt} | {cell['hosts']:,} | {c['switches']['count']} | {cell['interval_ms']/1000:g} s | {len(c['rotations'])} | {f(rotation_ms(c))} | "
                f"{f(r['all']['p99'])} ({f(r['rotating']['p99'])}) | {f(r['all']['max'])} | {f(cs.get('p99'))} / {f(cs.get('max'))} | "
                f"{f(c['cpam']['established'] / max(c['duration_s'], 1e-9), 1)} | {c['cpam']['failures']} | {c['switches'].get('disconnects', '–')} | "
                f"{f(res.get('cpu_pct_mean'), 1)} | {f((res.get('rss_kib_max') or 0) / 1024, 1)} |")
open(sys.argv[3], "w").write(f"Scaling table (Poisson {sys.argv[5]} connections/s, commit {sys.argv[4]}):\n\n" + "\n".join(rows) + "\n")
print("\n".join(rows))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("(no python3-matplotlib: scale.png not drawn)")
    sys.exit(0)
ok = [c for c in cells if "error" not in c]
fig, ax = plt.subplots(1, 2, figsize=(11, 4))
for rt, t in sorted({(c["cell"].get("runtime", "sharded"), c["cell"]["interval_ms"]) for c in ok}):
    pts = sorted(((c["cell"]["hosts"], c) for c in ok
                  if c["cell"].get("runtime", "sharded") == rt and c["cell"]["interval_ms"] == t), key=lambda x: x[0])
    label = f"{rt}, T = {t / 1000:g} s"
    xy = [(h, p99(c) / 1000) for h, c in pts if p99(c) is not None]
    ax[0].plot([h for h, _ in xy], [v for _, v in xy], "o-", label=label)
    xy = [(h, rotation_ms(c)) for h, c in pts if rotation_ms(c) is not None]
    ax[1].plot([h for h, _ in xy], [v for _, v in xy], "o-", label=label)
for a, title in ((ax[0], "RPPT p99, switch side (ms)"), (ax[1], "rotation duration, median (ms)")):
    a.set_xscale("log"); a.set_yscale("log"); a.set_xlabel("protected hosts"); a.set_title(title)
    a.grid(True, which="both", alpha=0.3)
ax[0].legend(fontsize=8)
fig.tight_layout()
fig.savefig(sys.argv[6], dpi=110)
print(f"plot: {sys.argv[6]}")
EOF
log "ofbench_scale: $OUT/scale.md"
