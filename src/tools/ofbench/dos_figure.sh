#!/usr/bin/env bash
# The RFC 8456 denial-of-service figure (5.5.1) for sdnator, as in docs/dos.md: ofbench latency
# mode on 16 emulated switches x 100 MACs (the learning switch); switch 1 floods fresh PacketIns
# while the other 15 are measured. Runs, each against a fresh controller:
#   baseline          no flood (limiter on, defaults)
#   baseline-off      no flood, [southbound] pin_limit = false
#   port-off          flood from one port (--dos-port 1), limiter off
#   port-on           flood from one port, limiter defaults (20,000/s per port)
#   spread-off        flood over ports 1..100 of switch 1, limiter off
#   spread-on         flood over ports 1..100, pin_switch_pps = 10,000 (the per-switch bucket)
# and, to show the defaults do not cap the throughput figure, throughput mode (window 100)
# with the limiter off and on. Writes each run's JSON and summary.json to OUT.
# usage: src/tools/ofbench/dos_figure.sh [--out DIR] [--rate R] [--duration S]
set -Eeuo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
source "$ROOT/scripts/lib/common.sh"
OUT=$ROOT/docs/dos RATE=100000 DUR=5
while (($#)); do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --duration) DUR=$2; shift 2 ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    *) die "unknown option $1" ;;
  esac
done
BIN=${BIN:-$ROOT/build/bin}
[[ -x $BIN/ofbench && -x $BIN/sdnator ]] || die "build sdnator and ofbench first"
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/ofbench-dos.XXXXXX)
CTRL_PID=""
cleanup() {
  [[ -z $CTRL_PID ]] || { kill "$CTRL_PID" 2>/dev/null || true; wait "$CTRL_PID" 2>/dev/null || true; }
  rm -rf "$WORK"
}
trap cleanup EXIT

# run LABEL SOUTHBOUND_TOML OFBENCH_ARGS...
run() {
  local label=$1 sb=$2; shift 2
  local port; port=$(free_port)
  printf '[controller]\napps = ["forwarding"]\n[forwarding]\nmode = "learning"\n[southbound]\n%b\n' "$sb" >"$WORK/$label.toml"
  "$BIN/sdnator" run -c "$WORK/$label.toml" --listen "127.0.0.1:$port" --stats-file "$WORK/stats-$label.json" \
    --log-level warn >"$WORK/$label.log" 2>&1 &
  CTRL_PID=$!
  local t0; t0=$(now_ms)
  until [[ -n $(ss -Hltn "( sport = :$port )") ]]; do
    kill -0 "$CTRL_PID" 2>/dev/null || { tail -5 "$WORK/$label.log" >&2; die "sdnator exited at start-up"; }
    (($(now_ms) - t0 < 10000)) || die "sdnator not listening after 10 s"
    sleep 0.1
  done
  "$BIN/ofbench" -c "127.0.0.1:$port" -s 16 -M 100 -w 1 -d "$DUR" --pid "$CTRL_PID" --max-samples 200 \
    --json "$OUT/$label.json" -q "$@" | sed "s/^/  [$label] /"
  sleep 1.2  # one more stats write
  kill "$CTRL_PID"; wait "$CTRL_PID" 2>/dev/null || true; CTRL_PID=""
  cp "$WORK/stats-$label.json" "$OUT/stats-$label.json"
}

run baseline "" --mode latency
run baseline-off "pin_limit = false" --mode latency
run port-off "pin_limit = false" --mode latency --dos-rate "$RATE" --dos-port 1
run port-on "" --mode latency --dos-rate "$RATE" --dos-port 1
run spread-off "pin_limit = false" --mode latency --dos-rate "$RATE"
run spread-on "pin_switch_pps = 10000\npin_switch_burst = 2000" --mode latency --dos-rate "$RATE"
run throughput-off "pin_limit = false" --mode throughput --window 100
run throughput-on "" --mode throughput --window 100

python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
rows = {}
for label in ["baseline", "baseline-off", "port-off", "port-on", "spread-off", "spread-on", "throughput-off", "throughput-on"]:
    j = json.load(open(os.path.join(out, label + ".json")))
    s = json.load(open(os.path.join(out, "stats-" + label + ".json")))
    c = s.get("metrics", {}).get("counters", s.get("counters", {}))
    def ctr(name):
        def find(o):
            if isinstance(o, dict):
                for k, v in o.items():
                    if k == name and isinstance(v, (int, float)):
                        return v
                    r = find(v)
                    if r is not None:
                        return r
            return None
        return find(s) or 0
    d = j.get("rfc8456", {}).get("dos_handling", {})
    lat = j["latency_us"]
    rows[label] = {
        "mode": j["mode"], "legit_requests": j["requests"], "legit_answered": j["answered"], "lost": j["lost"],
        "rate_per_s": j["rate_per_s"], "p50_us": lat.get("p50"), "p99_us": lat.get("p99"), "max_us": lat.get("max"),
        "flood_sent": d.get("flood_sent"), "flood_sent_per_s": d.get("flood_sent_per_s"), "flood_answered": d.get("flood_answered"),
        "dropped_port": ctr("southbound.packet_in.dropped.port"), "dropped_switch": ctr("southbound.packet_in.dropped.switch"),
        "controller_cpu_pct_mean": (j.get("resources") or {}).get("cpu_pct_mean"),
    }
json.dump(rows, open(os.path.join(out, "summary.json"), "w"), indent=1)
print(f"{'run':15} {'legit p50 us':>12} {'p99 us':>9} {'max us':>9} {'answered':>12} {'flood sent/s':>12} {'flood answered':>14} {'dropped':>9} {'ctl cpu%':>8}")
for k, r in rows.items():
    print(f"{k:15} {r['p50_us'] or 0:12.0f} {r['p99_us'] or 0:9.0f} {r['max_us'] or 0:9.0f} {r['legit_answered']:>6}/{r['legit_requests']:<6}"
          f" {r['flood_sent_per_s'] or 0:12.0f} {r['flood_answered'] or 0:14} {r['dropped_port'] + r['dropped_switch']:9} {r['controller_cpu_pct_mean'] or 0:8.1f}")
PY
