#!/usr/bin/env bash
# What OpenFlow over TLS costs: sdnator's learning switch measured by ofbench (cbench latency and
# throughput modes, 16 switches x 100 MACs) over plain TCP and over TLS (ofbench --tls-cert),
# runs interleaved TCP, TLS, TCP, TLS ... so drift on a shared machine hits both alike. Prints a
# markdown table (median over the repetitions) and writes every run's JSON to --out.
#
# usage: scripts/tls_bench.sh [--reps N (3)] [--duration S (5)] [--switches N (16)] [--out DIR]
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/build/bin}
REPS=3; DUR=5; SW=16; OUT=""
while (($#)); do
  case $1 in
    --reps) REPS=$2; shift 2 ;;
    --duration) DUR=$2; shift 2 ;;
    --switches) SW=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
WORK=$(mktemp -d /tmp/sdnator-tls-bench.XXXXXX)
OUT=${OUT:-$WORK/runs}
mkdir -p "$OUT"
CTRL_PID=""
cleanup() { [[ -n $CTRL_PID ]] && kill "$CTRL_PID" 2>/dev/null; rm -rf "$WORK/pki"; }
trap cleanup EXIT

bash "$ROOT/scripts/pki.sh" --dir "$WORK/pki" --switches 1 >/dev/null
P=$WORK/pki
for t in tcp tls; do
  {
    printf '[controller]\napps = ["forwarding"]\nlog_level = "warn"\n[forwarding]\nmode = "learning"\n[northbound]\nenabled = false\n'
    [[ $t == tls ]] && printf '[southbound]\ntls = true\ntls_cert = "%s"\ntls_key = "%s"\ntls_ca = "%s"\n' \
      "$P/controller-cert.pem" "$P/controller-privkey.pem" "$P/switchca.pem"
  } >"$WORK/$t.toml"
done

for rep in $(seq 1 "$REPS"); do
  for mode in latency throughput; do
    for t in tcp tls; do
      port=$(free_port)
      "$BIN/sdnator" run -c "$WORK/$t.toml" --listen "127.0.0.1:$port" --archive-path "$WORK/a-$t.db" \
        --stats-file "$WORK/stats-$t.json" >"$WORK/ctl-$t.log" 2>&1 &
      CTRL_PID=$!
      for _ in $(seq 1 100); do [[ -n $(ss -Hltn "( sport = :$port )") ]] && break; sleep 0.05; done
      extra=()
      [[ $t == tls ]] && extra=(--tls-cert "$P/sw1-cert.pem" --tls-key "$P/sw1-privkey.pem" --tls-ca "$P/controllerca.pem")
      "$BIN/ofbench" --mode "$mode" -c "127.0.0.1:$port" -s "$SW" -M 100 -d "$DUR" -w 1 --pid "$CTRL_PID" \
        --max-samples 2000 --controller-stats "$WORK/stats-$t.json" "${extra[@]}" --json "$OUT/$mode-$t-$rep.json" -q >/dev/null
      kill "$CTRL_PID"; wait "$CTRL_PID" 2>/dev/null || true; CTRL_PID=""
      cp "$WORK/stats-$t.json" "$OUT/stats-$mode-$t-$rep.json" 2>/dev/null || true
      log "rep $rep $mode $t: $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); l=j["latency_us"]; print("%.0f/s p50 %.0f us p99 %.0f us" % (j["rate_per_s"], l["p50"], l["p99"]))' "$OUT/$mode-$t-$rep.json")"
    done
  done
done

python3 - "$OUT" "$REPS" "$SW" "$DUR" <<'EOF'
import json, statistics, sys
out, reps, sw, dur = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def med(mode, t, f):
    return statistics.median(f(json.load(open(f"{out}/{mode}-{t}-{r}.json"))) for r in range(1, reps + 1))
print(f"\n{sw} switches x 100 MACs, {dur} s per run, median of {reps} interleaved runs\n")
print("| mode | transport | responses/s | p50 us | p99 us |")
print("|---|---|---:|---:|---:|")
for mode in ("latency", "throughput"):
    for t in ("tcp", "tls"):
        rate = med(mode, t, lambda j: j["rate_per_s"])
        p50 = med(mode, t, lambda j: j["latency_us"]["p50"])
        p99 = med(mode, t, lambda j: j["latency_us"]["p99"])
        print(f"| {mode} | {t} | {rate:,.0f} | {p50:,.0f} | {p99:,.0f} |")
hs = []
for mode in ("latency", "throughput"):
    for r in range(1, reps + 1):
        try:
            h = json.load(open(f"{out}/stats-{mode}-tls-{r}.json"))["metrics"]["histograms"]["southbound.tls.handshake_time"]
            hs.append((h["count"], h["p50_us"], h["max_us"]))
        except (OSError, KeyError, ValueError):
            pass
if hs:
    print(f"\nTLS handshakes (controller side, accept -> done; {hs[0][0]} per TLS run): "
          f"p50 {statistics.median(x[1] for x in hs) / 1000:.1f} ms, max {max(x[2] for x in hs) / 1000:.1f} ms")
EOF
