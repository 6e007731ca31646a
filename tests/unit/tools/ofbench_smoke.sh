#!/usr/bin/env bash
# ofbench against the real sdnator on loopback, at small scale (seconds). Asserts correctness
# only, never speed: every request answered, the flow tables hold what the controller meant
# (learning: each eth_dst flow outputs to that host's port; CPAM: every SYN reached the server
# it named), malformed messages answered with OFPT_ERROR and no session dropped, and the JSON
# of every mode has the documented fields and types.
#   ofbench_smoke.sh OFBENCH SDNATOR
set -euo pipefail
OFBENCH=${1:?ofbench binary}
SDNATOR=${2:?sdnator binary}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
source "$ROOT/scripts/lib/common.sh"
WORK=$(mktemp -d /tmp/ofbench-smoke.XXXXXX)
CTRL=""
cleanup() {
  [[ -z $CTRL ]] || { kill "$CTRL" 2>/dev/null || true; wait "$CTRL" 2>/dev/null || true; }
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { printf 'FAIL [ofbench_smoke]: %s\n' "$*" >&2; exit 1; }
step() { printf '[%s] ofbench_smoke: %s\n' "$(date +%H:%M:%S)" "$*"; }

start() {  # start CONFIG -> PORT in $PORT, pid in $CTRL
  PORT=$(free_port) || fail "no free port"
  "$SDNATOR" run -c "$1" --listen "127.0.0.1:$PORT" --log-level warn --stats-file "$WORK/stats.json" \
    >"$WORK/sdnator.log" 2>&1 &
  CTRL=$!
  local i
  for i in $(seq 1 100); do
    [[ -n $(ss -Hltn "( sport = :$PORT )") ]] && return 0
    kill -0 "$CTRL" 2>/dev/null || { cat "$WORK/sdnator.log" >&2; fail "sdnator exited at start-up"; }
    sleep 0.1
  done
  fail "sdnator not listening"
}
stop() {
  kill "$CTRL" 2>/dev/null || true
  wait "$CTRL" 2>/dev/null || true
  CTRL=""
}
# check JSON PYTHON-EXPR...: each expression (over j, the run's JSON) must be true.
check() {
  local file=$1; shift
  python3 - "$file" "$@" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
# The schema every run shares (README: ofbench JSON).
need = {"tool": str, "schema": int, "mode": str, "controller": str, "config": dict, "duration_s": (int, float),
        "requests": int, "answered": int, "lost": int, "rate_per_s": (int, float), "latency_us": dict,
        "timeline": list, "samples": dict, "rotations": list, "rfc8456": dict, "switches": dict}
for k, t in need.items():
    assert k in j, f"missing key {k}"
    assert isinstance(j[k], t), f"{k} is {type(j[k]).__name__}"
assert j["tool"] == "ofbench" and j["schema"] == 1
for k in ("count", "min", "mean", "p50", "p90", "p99", "p999", "max"):
    assert k in j["latency_us"], f"latency_us.{k} missing"
for k in ("t_s", "latency_us", "rotating"):
    assert isinstance(j["samples"][k], list), f"samples.{k}"
assert len(j["samples"]["t_s"]) == len(j["samples"]["latency_us"]) == len(j["samples"]["rotating"])
for e in j["timeline"]:
    for k in ("t_s", "sent", "answered", "p50_us", "p99_us", "max_us", "rotating"):
        assert k in e, f"timeline entry lacks {k}"
assert j["resources"] is None or ("samples" in j["resources"] and "rss_kib_max" in j["resources"])
for expr in sys.argv[2:]:
    ok = eval(expr, {"j": j})
    assert ok, f"not true: {expr}"
EOF
}

cat >"$WORK/learning.toml" <<EOF
[controller]
apps = ["forwarding"]
[forwarding]
mode = "learning"
EOF
cat >"$WORK/learning-buffered.toml" <<EOF
[controller]
apps = ["forwarding"]
[forwarding]
mode = "learning"
[southbound]
miss_send_len = 128
EOF
cat >"$WORK/fabric.toml" <<EOF
[controller]
apps = ["topology", "forwarding"]
EOF

step "bad input: a controller address that is not host:port, and one nothing listens on"
if "$OFBENCH" -c nonsense -d 0.5 -q >"$WORK/bad.out" 2>&1; then fail "ofbench accepted --controller nonsense"; fi
grep -q "bad --controller" "$WORK/bad.out" || fail "no clear error for a bad address: $(cat "$WORK/bad.out")"
DEAD=$(free_port)
if "$OFBENCH" -c "127.0.0.1:$DEAD" -d 0.5 -q --handshake-timeout-ms 1000 >"$WORK/dead.out" 2>&1; then fail "ofbench ran without a controller"; fi
grep -q "did not connect" "$WORK/dead.out" || fail "no clear error without a controller: $(cat "$WORK/dead.out")"

step "learning switch, latency and throughput (whole frames, no buffers)"
start "$WORK/learning.toml"
"$OFBENCH" -c "127.0.0.1:$PORT" --mode latency -s 2 -M 10 -d 1 -w 0.3 --pid "$CTRL" --json "$WORK/lat.json" -q >/dev/null
check "$WORK/lat.json" 'j["requests"] > 100' 'j["lost"] == 0' 'j["answered"] == j["requests"]' \
  'j["table_check"]["checked"] > 0' 'j["table_check"]["wrong_port"] == 0' 'j["switches"]["flow_mods_rejected"] == 0' \
  'j["switches"]["disconnects"] == 0' 'j["resources"]["rss_kib_max"] > 0' \
  '"async_message_processing_time_us" in j["rfc8456"]'
"$OFBENCH" -c "127.0.0.1:$PORT" --mode throughput -s 4 -M 10 --window 20 -d 1 -w 0.3 --json "$WORK/thr.json" -q >/dev/null
check "$WORK/thr.json" 'j["lost"] == 0' 'j["requests"] > 100' 'j["table_check"]["wrong_port"] == 0'

step "exception handling: 20% malformed messages mixed in"
"$OFBENCH" -c "127.0.0.1:$PORT" --mode throughput -s 2 -M 10 --window 10 -d 1 -w 0.3 --malformed 0.2 --json "$WORK/bad-msgs.json" -q >/dev/null
check "$WORK/bad-msgs.json" 'j["lost"] == 0' 'j["switches"]["malformed_sent"] > 0' \
  'j["switches"]["errors_received"] == j["switches"]["malformed_sent"]' 'j["switches"]["disconnects"] == 0' \
  'j["rfc8456"]["exception_handling"]["legit_answered_share"] == 1.0'
kill -0 "$CTRL" || fail "sdnator died on malformed input"

step "control sessions: 30 switches in steps of 10"
"$OFBENCH" -c "127.0.0.1:$PORT" --mode sessions -s 30 --session-step 10 --json "$WORK/sessions.json" -q >/dev/null
check "$WORK/sessions.json" 'j["rfc8456"]["control_sessions_capacity"] == 30' 'len(j["steps"]) == 3'
stop

step "learning switch with buffered PacketIns (miss_send_len 128)"
start "$WORK/learning-buffered.toml"
"$OFBENCH" -c "127.0.0.1:$PORT" --mode latency -s 2 -M 10 -d 1 -w 0.3 --json "$WORK/buf.json" -q >/dev/null
check "$WORK/buf.json" 'j["lost"] == 0' 'j["requests"] > 100' 'j["switches"]["buffer_unknown"] == 0' \
  'j["table_check"]["wrong_port"] == 0'
stop

step "fabric: topology discovery and reactive paths on a 40-host campus"
start "$WORK/fabric.toml"
"$OFBENCH" -c "127.0.0.1:$PORT" --mode path --topology campus --hosts 40 --aggs 2 --edges 4 -d 1.5 -w 0.3 \
  --json "$WORK/path.json" -q >/dev/null
check "$WORK/path.json" 'j["requests"] > 20' 'j["lost"] == 0' 'j["discovery"]["complete"]' \
  'j["rfc8456"]["reactive_path_provisioning_time_us"]["count"] == j["answered"]'
stop

step "cpam: 40 hosts, rotation every 2 s, Poisson 20 connections/s for 5 s"
"$OFBENCH" --mode cpam --topology campus --hosts 40 --aggs 2 --edges 4 --write-hosts "$WORK/hosts.txt" >/dev/null
cat >"$WORK/cpam.toml" <<EOF
[controller]
apps = ["topology", "cpam", "forwarding"]
[sqlite]
path = "$WORK/archive.db"
[cpam]
rotation_interval_ms = 2000
vip_range = "10.0.128.0/24"
vip_pool = 200
hosts_file = "$WORK/hosts.txt"
EOF
start "$WORK/cpam.toml"
"$OFBENCH" -c "127.0.0.1:$PORT" --mode cpam --topology campus --hosts 40 --aggs 2 --edges 4 --lambda 20 -d 5 -w 0.5 \
  --controller-stats "$WORK/stats.json" --json "$WORK/cpam.json" -q >/dev/null
check "$WORK/cpam.json" 'j["cpam"]["events"] > 40' 'j["cpam"]["failures"] == 0' \
  'j["cpam"]["established"] == j["cpam"]["events"]' 'j["cpam"]["misdelivered"] == 0' \
  'j["cpam"]["hosts_warmed"] == 40' 'len(j["rotations"]) >= 1' 'j["cpam"]["dns_changes"] > 0' \
  'j["lost"] == 0' 'j["controller_stats"]["rppt_us"]["all"]["count"] > 0' 'j["switches"]["flow_mods_rejected"] == 0'
stop
step "all checks passed"
