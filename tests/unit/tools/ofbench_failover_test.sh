#!/usr/bin/env bash
# ofbench's multi-controller roles and failover mode against two fake role-aware controllers on
# loopback (ofbench_fake_controller.py): A masters every switch, B is slave, ofbench kills A a
# second into the run, B takes over 300 ms after A's port closes. Checks the switch-side role rules
# as the controllers saw them (a slave's FLOW_MOD refused with OFPBRC_IS_SLAVE, a stale generation
# with OFPRRFC_STALE, PacketIns only to the master) and the failover figures' plausibility.
#   ofbench_failover_test.sh OFBENCH
set -euo pipefail
OFBENCH=${1:?ofbench binary}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
source "$ROOT/scripts/lib/common.sh"
WORK=$(mktemp -d /tmp/ofbench-failover.XXXXXX)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { printf 'FAIL [ofbench_failover]: %s\n' "$*" >&2; exit 1; }
step() { printf '[%s] ofbench_failover: %s\n' "$(date +%H:%M:%S)" "$*"; }

PA=$(free_port) || fail "no free port"
PB=$(free_port) || fail "no free port"
[[ $PA != "$PB" ]] || PB=$(free_port)
python3 "$HERE/ofbench_fake_controller.py" --port "$PA" --role master --report "$WORK/a.json" &
A=$!; PIDS+=("$A")
python3 "$HERE/ofbench_fake_controller.py" --port "$PB" --role slave --watch "$PA" --takeover-ms 300 \
  --report "$WORK/b.json" &
B=$!; PIDS+=("$B")
for _ in $(seq 50); do
  [[ -n $(ss -Hltn "( sport = :$PA )") && -n $(ss -Hltn "( sport = :$PB )") ]] && break
  sleep 0.1
done

step "ofbench --failover against A 127.0.0.1:$PA (master) and B 127.0.0.1:$PB (slave)"
"$OFBENCH" --failover --controllers "127.0.0.1:$PA,127.0.0.1:$PB" -s 4 -M 4 -w 0.5 -d 3 --rate 400 \
  --kill-at 1 --kill-cmd "kill -9 $A" --timeout-ms 500 --json "$WORK/run.json" >"$WORK/out.txt" 2>&1 \
  || { cat "$WORK/out.txt" >&2; fail "ofbench exited with an error"; }
cat "$WORK/out.txt"
kill -TERM "$B"
wait "$B" 2>/dev/null || true
wait "$A" 2>/dev/null || true

python3 - "$WORK/run.json" "$WORK/b.json" "127.0.0.1:$PA" "127.0.0.1:$PB" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
A, B = sys.argv[3], sys.argv[4]
f = j["failover"]
s = j["switches"]
def check(cond, what):
    if not cond:
        print("FAIL [ofbench_failover]:", what, file=sys.stderr)
        print(json.dumps(f, indent=1)[:3000], file=sys.stderr)
        sys.exit(1)
check(f["roles_in_use"], "roles seen")
check(f["mastership_before"] == {A: 4, B: 0}, f"A masters all 4 before the kill: {f['mastership_before']}")
check(f["kill"]["target"] == A, "ofbench picked the controller mastering most switches")
check(f["mastership_end"] == {A: 0, B: 4}, f"B masters all 4 after: {f['mastership_end']}")
check(f["switches_affected"] == 4 and f["failed_over"] == 4 and f["reprovisioned"] == 4, "4 switches failed over and re-provisioned")
fo, rp = f["failover_ms"], f["reprovisioning_ms"]
# B polls A's port every 20 ms, then waits 300 ms: failover about 300..500 ms.
check(250 <= fo["min"] and fo["max"] <= 1500, f"failover time plausible: {fo}")
check(rp["min"] >= fo["min"] and rp["max"] <= fo["max"] + 500, f"re-provisioning follows failover: {rp} vs {fo}")
check(f["packet_ins"]["undelivered_in_gap"] > 0, "PacketIns during the gap had no controller to go to")
check(f["unexpected_channel_losses"] == 0, "no channel to B was lost")
check(f["masters_gained"][B] == 4, "B's MASTER requests accepted on 4 switches")
# The switch-side rules, as the slave saw them.
check(b["is_slave_errors"] == 4, f"a slave's FLOW_MOD refused with OFPBRC_IS_SLAVE on each switch: {b}")
check(b["stale_errors"] == 4, f"a stale generation refused with OFPRRFC_STALE on each switch: {b}")
check(s["role_stale_refused"] == 4 and s["slave_writes_refused"] == 4, f"switch counters: {s}")
check(b["took_over"], "B took over")
ep = f["episodes"]
check(all(e["lost_controller"] == A and e["new_controller"] == B and e["generation"] == 2 for e in ep), "episodes name A -> B, generation 2")
print(f"ofbench_failover: failover min {fo['min']:.1f} / median {fo['p50']:.1f} / max {fo['max']:.1f} ms, "
      f"re-provisioning median {rp['p50']:.1f} ms, {f['packet_ins']['unanswered_in_gap']} PacketIns unanswered in the gap")
EOF
step "PASS"
