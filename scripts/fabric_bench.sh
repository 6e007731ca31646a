#!/usr/bin/env bash
# The campus-fabric figures of the [fabric] issue, on real Open vSwitch: build the three-tier
# campus (1 core, 6 aggregation, 12 edge switches, HOSTS hosts in HOSTS/2 pairs) with
# scripts/testbed.sh, run sdnator (topology + fabric forwarding) against it, and measure:
# build and teardown time, RFC 8456 topology discovery time, controller RSS/CPU/threads at idle,
# reachability and first-packet vs steady RTT of every pair, reactive path provisioning time
# (controller histogram) and rate (a burst of fresh paths), and topology change detection time
# (a link cut by PORT_STATUS and a silent one by LLDP timeout). Prints a report; --json writes it.
#
# usage: scripts/fabric_bench.sh [--hosts N] [--single-homed] [--shards N] [--count C]
#                                [--parallel P] [--idle S] [--json FILE] [--no-setup]
#   defaults: 500 hosts, dual-homed edges, 5 pings per pair, 25 pairs at a time, 10 s idle sample
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$SDN_ROOT"

HOSTS=500 DUAL=1 SHARDS="" COUNT=5 PARALLEL=25 IDLE_S=10 JSON_OUT="" SETUP=1
while (($#)); do
  case $1 in
    --hosts) HOSTS=$2; shift 2 ;;
    --single-homed) DUAL=0; shift ;;
    --shards) SHARDS=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --parallel) PARALLEL=$2; shift 2 ;;
    --idle) IDLE_S=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    --no-setup) SETUP=0; shift ;;
    -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
need_root "fabric_bench.sh"
((SETUP)) && bash scripts/setup.sh
SDNATOR=${SDNATOR:-$SDN_ROOT/build/bin/sdnator}
[[ -x $SDNATOR ]] || die "$SDNATOR not built (scripts/setup.sh)"
bash scripts/ovs.sh start >/dev/null

PREFIX=fb-
WORK=$(mktemp -d /tmp/sdnator-fabric-bench.XXXXXX)
STATS="$WORK/stats.json"
PORT=$(free_port) || die "no free port"
TB=(bash scripts/testbed.sh --prefix "$PREFIX" --port "$PORT")
CTRL_PID=""
cleanup() {
  set +e
  "${TB[@]}" down >/dev/null 2>&1
  [[ -n $CTRL_PID ]] && kill -TERM "$CTRL_PID" 2>/dev/null && wait "$CTRL_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
stat_get() { python3 scripts/lib/stats.py get "$STATS" "$1" 2>/dev/null || echo ""; }
declare -A R=()

cat >"$WORK/sdnator.toml" <<EOF
[sqlite]
path = "$WORK/archive.db"
EOF
args=(run -c "$WORK/sdnator.toml" --listen "127.0.0.1:$PORT" --stats-file "$STATS" --log-level warn)
[[ -z $SHARDS ]] || args+=(--shards "$SHARDS")
"$SDNATOR" "${args[@]}" >"$WORK/sdnator.log" 2>&1 &
CTRL_PID=$!
until [[ -n $(ss -Hltn "( sport = :$PORT )") ]]; do kill -0 "$CTRL_PID" || die "sdnator exited"; sleep 0.05; done

# ---- build
shape=(up campus "$HOSTS")
((DUAL)) && shape+=(--dual-homed)
t0=$(now_ms)
"${TB[@]}" "${shape[@]}" 2>&1 | tee "$WORK/up.log"
R[build_ms]=$(($(now_ms) - t0))
MANIFEST=/run/sdnator-testbed/$PREFIX/manifest.json
read -r NSW NLINKS NPAIRS < <(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))
print(len(m["switches"]), m["expected_links"], len(m["pairs"]))' "$MANIFEST")

# ---- discovery
t1=$(now_ms)
while :; do
  links=$(stat_get apps.topology.links) pending=$(stat_get apps.topology.pending_ports) nsw=$(stat_get apps.topology.switches)
  [[ $nsw == "$NSW" && $links == "$NLINKS" && $pending == 0 ]] && break
  (($(now_ms) - t1 < 120000)) || die "discovery incomplete after 120 s: $nsw/$NSW switches, $links/$NLINKS links, $pending pending"
  sleep 0.2
done
R[settled_after_up_ms]=$(($(now_ms) - t0))
R[discovery_ms]=$(awk -v u="$(stat_get apps.topology.discovery_us)" 'BEGIN { printf "%.1f", u / 1000 }')
log "fabric_bench: $NSW switches, $NLINKS links discovered in ${R[discovery_ms]} ms (first switch up -> last link)"

# ---- idle resources (hosts silent, LLDP running)
sleep 2
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$CTRL_PID/stat"; }
HZ=$(getconf CLK_TCK)
c0=$(cpu_ticks); w0=$(now_ms); sleep "$IDLE_S"; c1=$(cpu_ticks); w1=$(now_ms)
R[idle_cpu_pct]=$(awk -v c=$((c1 - c0)) -v hz="$HZ" -v ms=$((w1 - w0)) 'BEGIN { printf "%.2f", 100 * c / hz / (ms / 1000) }')
R[idle_rss_kb]=$(awk '/^VmRSS:/ { print $2 }' "/proc/$CTRL_PID/status")
R[threads]=$(awk '/^Threads:/ { print $2 }' "/proc/$CTRL_PID/status")
log "fabric_bench: idle controller: ${R[idle_cpu_pct]} % CPU over ${IDLE_S}s, RSS ${R[idle_rss_kb]} kB, ${R[threads]} threads"

# ---- reachability + RTT of every pair
"${TB[@]}" pingpairs --count "$COUNT" --parallel "$PARALLEL" --json "$WORK/pairs.json" | tee "$WORK/pairs.txt" || true
read -r R[pairs_ok] R[pairs] R[first_mean] R[first_p50] R[first_p95] R[steady_mean] R[steady_p50] R[steady_p95] < <(
  python3 - "$WORK/pairs.json" <<'PY'
import json, sys, statistics as st
j = json.load(open(sys.argv[1]))
res = j.get("results", [])
ok = sum(1 for r in res if r.get("received", 0) > 0)
def q(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")
f = [r["first_rtt_ms"] for r in res if r.get("first_rtt_ms") is not None]
s = [r["steady_rtt_ms"] for r in res if r.get("steady_rtt_ms") is not None]
m = lambda v: st.mean(v) if v else float("nan")
print(ok, len(res), "%.3f %.3f %.3f %.3f %.3f %.3f" % (m(f), q(f, .5), q(f, .95), m(s), q(s, .5), q(s, .95)))
PY
)
sleep 1.2
hist() {   # hist NAME: a histogram of the stats file in one line
  python3 -c 'import json,sys; h=json.load(open(sys.argv[1]))["metrics"]["histograms"].get(sys.argv[2],{})
print("count %d, p50 %.0f us, p90 %.0f us, p99 %.0f us, max %.0f us" % (h.get("count",0), h.get("p50_us",0), h.get("p90_us",0), h.get("p99_us",0), h.get("max_us",0)))' "$STATS" "$1"
}
R[path_setup]=$(hist forwarding.path_setup)
R[packet_in_service]=$(hist southbound.packet_in.service)

# ---- provisioning rate: delete our flows everywhere, then every pair pings once, all at once
for sw in $(python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(open(sys.argv[1]))["switches"]))' "$MANIFEST"); do
  ovs-ofctl -O OpenFlow13 del-flows "$sw" "cookie=0x0100000000000000/0xff00000000000000"
done
sleep 0.5
p0=$(stat_get apps.forwarding.paths_installed)
mapfile -t PAIRS < <(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); hs={h["name"]:h for h in m["hosts"]}
[print(hs[p["a"]]["netns"], hs[p["b"]]["ip"]) for p in m["pairs"]]' "$MANIFEST")
tb=$(now_ms)
pids=()
for pr in "${PAIRS[@]}"; do
  read -r ns ip <<<"$pr"
  ip netns exec "$ns" ping -n -c 1 -W 5 "$ip" >/dev/null 2>&1 &
  pids+=($!)
done
wait "${pids[@]}" || true   # (not a bare wait: the controller is our child too)
R[burst_ms]=$(($(now_ms) - tb))
sleep 1.2
p1=$(stat_get apps.forwarding.paths_installed)
R[burst_paths]=$((p1 - p0))
R[burst_rate]=$(awk -v n="${R[burst_paths]}" -v ms="${R[burst_ms]}" 'BEGIN { printf "%.0f", n / (ms / 1000) }')
log "fabric_bench: burst: ${R[burst_paths]} paths in ${R[burst_ms]} ms of ${#PAIRS[@]} concurrent pings (${R[burst_rate]} paths/s)"

# ---- change detection: an edge uplink cut with PORT_STATUS, another one silently (LLDP timeout)
read -r E1 A1 E2 A2 < <(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); e=m["tiers"]["edge"]; a=set(m["tiers"]["aggregation"])
ls=[(l["a"],l["b"]) if l["a"] in e else (l["b"],l["a"]) for l in m["links"] if (l["a"] in e and l["b"] in a) or (l["b"] in e and l["a"] in a)]
print(*ls[0], *ls[-1])' "$MANIFEST")
detect() {   # detect REASON START_NS: ms from START_NS to the archived link-down record
  local reason=$1 start=$2 t0 rec; t0=$(now_ms)
  while (($(now_ms) - t0 < 15000)); do
    rec=$("$SDNATOR" data get -c "$WORK/sdnator.toml" 'network/topology/link/**' --from-ns "$start" --log-level off 2>/dev/null \
          | python3 -c 'import json,sys
for l in sys.stdin:
    r=json.loads(l); v=r["v"]
    if v.get("state")=="down" and v.get("reason")==sys.argv[1]: print((r["t"]-int(sys.argv[2]))/1e6); break' "$reason" "$start")
    [[ -n $rec ]] && { echo "$rec"; return; }
    sleep 0.2
  done
  echo "none"
}
s0=$(date +%s%N); "${TB[@]}" link-down "${E1#"$PREFIX"}" "${A1#"$PREFIX"}" >/dev/null
R[detect_port_status_ms]=$(detect port_status "$s0")
s0=$(date +%s%N); "${TB[@]}" link-down --silent "${E2#"$PREFIX"}" "${A2#"$PREFIX"}" >/dev/null
R[detect_lldp_timeout_ms]=$(detect lldp_timeout "$s0")
log "fabric_bench: change detection: port_status ${R[detect_port_status_ms]} ms, silent cut ${R[detect_lldp_timeout_ms]} ms"

# ---- teardown
kill -TERM "$CTRL_PID"; wait "$CTRL_PID" || true; CTRL_PID=""
t2=$(now_ms); "${TB[@]}" down >/dev/null; R[teardown_ms]=$(($(now_ms) - t2))

echo
echo "== fabric_bench: campus $HOSTS hosts, $NSW switches, $NLINKS links, $([[ $DUAL == 1 ]] && echo dual || echo single)-homed"
printf '%-34s %s\n' "build (testbed up)" "$(fmt_ms "${R[build_ms]}")" \
  "discovery (first switch -> last link)" "${R[discovery_ms]} ms" \
  "up -> every port settled" "$(fmt_ms "${R[settled_after_up_ms]}")" \
  "idle controller CPU / RSS / threads" "${R[idle_cpu_pct]} % / ${R[idle_rss_kb]} kB / ${R[threads]}" \
  "pairs reachable" "${R[pairs_ok]}/${R[pairs]}" \
  "first-packet RTT mean/p50/p95" "${R[first_mean]} / ${R[first_p50]} / ${R[first_p95]} ms" \
  "steady RTT mean/p50/p95" "${R[steady_mean]} / ${R[steady_p50]} / ${R[steady_p95]} ms" \
  "path provisioning time (controller)" "${R[path_setup]}" \
  "PacketIn service time (read -> reply written)" "${R[packet_in_service]}" \
  "burst of fresh paths" "${R[burst_paths]} in ${R[burst_ms]} ms = ${R[burst_rate]} paths/s" \
  "change detection: port down" "${R[detect_port_status_ms]} ms" \
  "change detection: silent cut" "${R[detect_lldp_timeout_ms]} ms" \
  "teardown" "$(fmt_ms "${R[teardown_ms]}")"
if [[ -n $JSON_OUT ]]; then
  {
    printf '{"hosts": %d, "switches": %d, "links": %d, "dual_homed": %s' "$HOSTS" "$NSW" "$NLINKS" "$([[ $DUAL == 1 ]] && echo true || echo false)"
    for k in "${!R[@]}"; do printf ', "%s": "%s"' "$k" "${R[$k]}"; done
    printf '}\n'
  } >"$JSON_OUT"
  log "fabric_bench: wrote $JSON_OUT"
fi
((R[pairs_ok] == R[pairs]))
