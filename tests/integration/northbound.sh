#!/usr/bin/env bash
# The northbound layer against a real Open vSwitch fabric (a small dual-homed campus: 1 core,
# 2 aggregation, 4 edge switches, 16 hosts) with topology + cpam + forwarding and a bearer token:
#   - every REST endpoint, including bad input (malformed JSON, unknown fields, invalid matches
#     -> 400 naming the field; no or wrong token -> 401) and flows added/deleted through the API
#     checked with ovs-ofctl (northbound_check.py);
#   - /metrics parsed by the Prometheus text-format parser (python3-prometheus-client);
#   - Server-Sent Events: ticks, and a rotation event after rotate-now;
#   - `sdnator ctl`: tables, --json, flow add/delete, errors and exit codes;
#   - the dashboard in headless Chromium: the topology renders with every switch and host, and a
#     screenshot is saved under the build directory (northbound-dashboard.png).
source "$(dirname "$0")/lib.sh" "$@"
SESSION=${SDNATOR_SESSION:-$(dirname "$SDNATOR")/sdnator-session}
[[ -x $SESSION ]] || fail "sdnator-session not found: $SESSION"
BUILD_DIR=$(cd "$(dirname "$SDNATOR")/.." && pwd)
TOKEN="it-$RANDOM$RANDOM"
API_PORT=$(free_port) || fail "no free TCP port"
API="http://127.0.0.1:$API_PORT"

# A non-loopback API without a token is refused before anything starts.
set +e
timeout 10 "$SDNATOR" run --listen "127.0.0.1:$(free_port)" --api "0.0.0.0:$(free_port)" --archive-path "$IT_WORK/refused.db" \
  >"$IT_WORK/refused.log" 2>&1
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "a non-loopback API without a token should exit 1 (got $rc)"
grep -q "needs \[northbound\] token" "$IT_WORK/refused.log" || fail "no clear error for a non-loopback API without token: $(cat "$IT_WORK/refused.log")"
step "a non-loopback API without a token is refused: $(grep -o 'northbound: .*' "$IT_WORK/refused.log")"

# The default address taken (by another instance, or here by a socket with SO_REUSEPORT, as
# cpp-httplib's default options set it in another sdnator before 2026-12-06): the controller
# runs without its API, and says so; an address the user chose is not given up on.
python3 -c 'import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
try:
    s.bind(("127.0.0.1", 8080)); s.listen()
except OSError:
    pass  # already taken by someone else: the same situation
time.sleep(60)' &
HOLDER=$!; track_pid $HOLDER; BG_PIDS+=($HOLDER)
# Wait until 8080 is really taken rather than a fixed 0.5 s, which races python's start-up
# when the machine is loaded.
for _ in $(seq 100); do [[ -n $(ss -Hltn '( sport = :8080 )') ]] && break; sleep 0.1; done
[[ -n $(ss -Hltn '( sport = :8080 )') ]] || fail "127.0.0.1:8080 is not taken after 10 s (the holder did not bind)"
"$SDNATOR" run --listen "127.0.0.1:$(free_port)" --archive-path "$IT_WORK/default.db" >"$IT_WORK/default.log" 2>&1 &
DEF_PID=$!; track_pid $DEF_PID; BG_PIDS+=($DEF_PID)
# The warning comes once the API's bind was tried; wait for it (or for the controller to exit).
for _ in $(seq 100); do
  grep -q "the API and dashboard are off" "$IT_WORK/default.log" && break
  kill -0 "$DEF_PID" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$DEF_PID" 2>/dev/null || fail "the controller exited when the default API address was taken: $(cat "$IT_WORK/default.log")"
grep -q "the API and dashboard are off" "$IT_WORK/default.log" || fail "no warning that the API is off: $(cat "$IT_WORK/default.log")"
kill "$DEF_PID"; wait "$DEF_PID" 2>/dev/null || true
set +e
timeout 10 "$SDNATOR" run --listen "127.0.0.1:$(free_port)" --api 127.0.0.1:8080 --archive-path "$IT_WORK/default2.db" \
  >"$IT_WORK/explicit.log" 2>&1
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "an explicit API address that is taken should exit 1 (got $rc): $(cat "$IT_WORK/explicit.log")"
kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null || true
step "default API address taken: the controller runs without the API (warned); an explicit one taken: exit 1"

up_cpam_campus
cat >"$IT_WORK/sdnator.toml" <<EOF
[controller]
apps = ["topology", "cpam", "forwarding"]
[northbound]
listen = "127.0.0.1:$API_PORT"
token = "$TOKEN"
[cpam]
rotation_interval_ms = 30000
rotation_batch = 4
vip_range = "10.0.128.0/24"
vip_pool = 250
stats_interval_ms = 500
hosts_file = "$IT_WORK/hosts.txt"
EOF
start_controller -c "$IT_WORK/sdnator.toml"
"${TB[@]}" wait-connected 20 || fail "switches did not connect"
wait_stats_switches 7 20
wait_topology 10 20
hx() { "${TB[@]}" exec "$@"; }
for n in $(seq 1 16); do
  hx "h$n" "$SESSION" serve --tcp 5000 >"$IT_WORK/serve$n.log" 2>&1 &
  BG_PIDS+=($!); track_pid $!
done
# Each host's DNS query teaches topology where it is; one TCP session gives CPAM a binding.
for n in $(seq 1 16); do
  hx "h$n" "$SESSION" resolve "h$(((n % 16) + 1)).cpam.lan" >/dev/null || fail "h$n cannot resolve a peer"
done
hx h1 "$SESSION" hold h9.cpam.lan 5000 --duration 120 --interval-ms 200 >"$IT_WORK/hold.log" 2>&1 &
BG_PIDS+=($!); track_pid $!
step "campus up, discovered, 16 hosts resolved; API on $API with a token"

export SDNATOR_URL=$API SDNATOR_TOKEN=$TOKEN
/usr/bin/python3 "$IT_ROOT/tests/integration/northbound_check.py" --url "$API" --token "$TOKEN" --manifest "$MANIFEST" \
  --prefix "$IT_PREFIX" --session "$SESSION" --testbed "$TESTBED" --work "$IT_WORK" \
  || fail "REST API checks failed"
step "REST API, /metrics and events checks passed"

# ---- sdnator ctl ----
ctl() { "$SDNATOR" ctl "$@"; }
out=$(ctl switches) || fail "ctl switches failed"
[[ $(grep -c '^0000' <<<"$out") -eq 7 ]] || fail "ctl switches does not list 7 switches: $out"
ctl --json switches | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d)==7, d' || fail "ctl --json switches"
ctl topology >"$IT_WORK/ctl-topology.txt" || fail "ctl topology failed"
[[ $(grep -c '00:00:00:00:00:' "$IT_WORK/ctl-topology.txt") -ge 16 ]] || fail "ctl topology lacks hosts: $(cat "$IT_WORK/ctl-topology.txt")"
ctl cpam status | grep -i epoch >/dev/null || fail "ctl cpam status has no epoch"
ctl cluster | grep '^cluster: not enabled' >/dev/null || fail "ctl cluster on a lone controller does not say so"
ctl cpam mapping | grep '^h1 ' >/dev/null || fail "ctl cpam mapping lacks h1"
EDGE=$(ctl --json switches | python3 -c 'import json,sys; print(sorted(s["dpid"] for s in json.load(sys.stdin))[-1])')
BR=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(next(s["name"] for s in m["switches"] if int(s["dpid"],16)==int(sys.argv[2],16)))' "$MANIFEST" "$EDGE")
ctl flow-add "$EDGE" --match "udp,nw_dst=10.9.9.9,tp_dst=4242" --actions drop --priority 4321 >/dev/null || fail "ctl flow-add failed"
ovs-ofctl -O OpenFlow13 dump-flows "$BR" | grep "priority=4321,udp,nw_dst=10.9.9.9,tp_dst=4242" >/dev/null || fail "ctl flow-add: the flow is not on $BR"
ctl flows "$EDGE" --match "udp,nw_dst=10.9.9.9" | grep "tp_dst=4242" >/dev/null || fail "ctl flows does not show the added flow"
ctl flow-del "$EDGE" --match "udp,nw_dst=10.9.9.9" >/dev/null || fail "ctl flow-del failed"
! ovs-ofctl -O OpenFlow13 dump-flows "$BR" | grep "nw_dst=10.9.9.9" >/dev/null || fail "ctl flow-del: the flow is still on $BR"
set +e
ctl flow-add "$EDGE" --match "tp_dst=80" --actions drop >"$IT_WORK/ctl-bad.txt" 2>&1; rc=$?
ctl --token wrong switches >"$IT_WORK/ctl-401.txt" 2>&1; rc401=$?
ctl --url "http://127.0.0.1:$(free_port)" switches >"$IT_WORK/ctl-down.txt" 2>&1; rcdown=$?
set -e
[[ $rc -eq 1 ]] && grep -q "field: match" "$IT_WORK/ctl-bad.txt" || fail "ctl: a bad match should exit 1 naming the field (rc $rc): $(cat "$IT_WORK/ctl-bad.txt")"
[[ $rc401 -eq 1 ]] && grep -q "401" "$IT_WORK/ctl-401.txt" || fail "ctl: a wrong token should exit 1 with 401 (rc $rc401)"
[[ $rcdown -eq 2 ]] || fail "ctl: an unreachable controller should exit 2 (rc $rcdown)"
step "sdnator ctl: switches, topology, cpam, flow add/list/delete, errors (exit 1 / 2)"

# ---- the dashboard in headless Chromium ----
command -v chromium >/dev/null || fail "chromium is not installed (scripts/setup.sh installs it)"
SHOT="$BUILD_DIR/northbound-dashboard.png"
# The dashboard's files are public; the API needs the token, which the page reads from the URL
# fragment (never sent to the server in the request line).
URL="$API/?poll=1#token=$TOKEN"
chrome() {
  timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$IT_WORK/chrome" --window-size=1600,1300 --virtual-time-budget=8000 "$@" "$URL" 2>>"$IT_WORK/chrome.log"
}
chrome --dump-dom >"$IT_WORK/dom.html" || fail "chromium --dump-dom failed: $(tail -5 "$IT_WORK/chrome.log")"
python3 - "$IT_WORK/dom.html" <<'PY' || fail "the dashboard did not render the topology"
import re, sys
dom = open(sys.argv[1]).read()
assert 'data-topology="ready"' in dom, "body has no data-topology=ready"
switches = set(re.findall(r'class="switch[^"]*"[^>]*data-dpid="([0-9a-f]+)"', dom)) | set(re.findall(r'data-dpid="([0-9a-f]+)"[^>]*class="switch', dom))
hosts = set(re.findall(r'class="host[^"]*"[^>]*data-mac="([0-9a-f:]+)"', dom)) | set(re.findall(r'data-mac="([0-9a-f:]+)"[^>]*class="host', dom))
summary = re.search(r'id="topology-summary"[^>]*>([^<]*)<', dom)
print(f"dashboard: {len(switches)} switches, {len(hosts)} hosts; summary: {summary.group(1) if summary else None}")
assert len(switches) == 7, switches
assert len(hosts) >= 16, hosts
PY
chrome --screenshot="$SHOT" >/dev/null || fail "chromium --screenshot failed"
[[ -s $SHOT ]] || fail "no screenshot at $SHOT"
step "dashboard rendered 7 switches and the hosts; screenshot $SHOT"

stop_controller
step "PASS"
