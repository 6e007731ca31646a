#!/usr/bin/env bash
# sdnator (topology + fabric forwarding) on a small dual-homed campus: 1 core, 2 aggregation,
# 4 edge switches, 16 hosts; the fabric has loops. Discovery must find exactly the manifest's
# links, every host pair must reach every other without a storm, flows must cover whole paths,
# a cable pulled (PORT_STATUS) and one that dies silently (LLDP timeout) must each be published
# as a link-down record in the archive and traffic must reroute, and a restored link must be
# rediscovered.
source "$(dirname "$0")/lib.sh" "$@"

cat >"$IT_WORK/sdnator.toml" <<EOF
[sqlite]
path = "$IT_WORK/archive.db"
EOF
start_controller -c "$IT_WORK/sdnator.toml"
"${TB[@]}" up campus 16 --cores 1 --aggs 2 --edges 4 --dual-homed || fail "testbed up failed"
MANIFEST=/run/sdnator-testbed/$IT_PREFIX/manifest.json
read -r NSW NLINKS < <(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(len(m["switches"]), m["expected_links"])' "$MANIFEST")
((NSW == 7 && NLINKS == 10)) || fail "manifest: $NSW switches, $NLINKS links (want 7, 10)"
"${TB[@]}" wait-connected 20 || fail "switches did not connect"
wait_stats_switches 7 20
t0=$(now_ms)
wait_topology 10 20
step "topology: 10/10 links, every port settled ($(fmt_ms $(($(now_ms) - t0))) after the handshakes);" \
     "discovery time $(python3 "$STATS_PY" get "$STATS" apps.topology.discovery_us) us"

# The links the controller found are the manifest's, port for port.
"$SDNATOR" data get -c "$IT_WORK/sdnator.toml" 'network/topology/link/**' >"$IT_WORK/links.jsonl" \
  || fail "sdnator data get failed"
python3 - "$MANIFEST" "$IT_WORK/links.jsonl" <<'PY' || fail "discovered links differ from the manifest"
import json, sys
m = json.load(open(sys.argv[1]))
dpid = {s["name"]: s["dpid"] for s in m["switches"]}
want = {tuple(sorted([(dpid[l["a"]], l["a_port"]), (dpid[l["b"]], l["b_port"])])) for l in m["links"]}
state = {}
for line in open(sys.argv[2]):
    r = json.loads(line)
    v = r["v"]
    state[r["k"].split("@")[0]] = (v["state"], tuple(sorted([(v["a"]["dpid"], v["a"]["port"]), (v["b"]["dpid"], v["b"]["port"])])))
got = {ends for st, ends in state.values() if st == "up"}
if got != want:
    print("missing:", want - got, "unexpected:", got - want); sys.exit(1)
print(f"discovered links == manifest links ({len(got)})")
PY

step "pingpairs (8 pairs across the fabric)"
"${TB[@]}" pingpairs --count 3 --json "$IT_WORK/pairs.json" || fail "a manifest pair could not ping"
step "pingall (every ordered pair of 16 hosts, all sources at once)"
"${TB[@]}" --count 2 --quiet --parallel pingall || fail "not every host pair could ping"
wait_stats_fresh
dead=$(python3 "$STATS_PY" get "$STATS" apps.forwarding.flood_dead_ends)
pins=$(stat_sum 'rx\.packet_in$')
failed=$(python3 "$STATS_PY" get "$STATS" apps.forwarding.paths_failed)
paths=$(python3 "$STATS_PY" get "$STATS" apps.forwarding.paths_installed)
step "controller: $paths paths installed, $failed failed, $pins packet-ins, $dead flood copies dropped off-tree"
((failed == 0)) || fail "$failed paths failed"
# A storm would show as packet-ins in the hundreds of thousands; 240 pairs need a few thousand.
((pins < 20000)) || fail "$pins packet-ins: flooding is looping"

# h1 (edge s4) -> h9 (edge s6): the path goes edge - aggregation - edge. Find the uplink it uses.
H1=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); h={x["name"]:x for x in m["hosts"]}; print(h["h1"]["switch"], h["h9"]["ip"], h["h1"]["netns"])' "$MANIFEST")
read -r E1 IP9 NS1 <<<"$H1"
ip netns exec "$NS1" ping -n -c 1 -W 2 "$IP9" >/dev/null || fail "h1 -> h9 failed"
uplink_in_use() {   # the aggregation switch h1's traffic to h9 leaves E1 towards
  local port
  port=$(ovs-ofctl -O OpenFlow13 dump-flows "$E1" "ip,nw_dst=$IP9" | sed -nE 's/.*actions=output:([0-9]+).*/\1/p' | head -1)
  python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))
for l in m["links"]:
    if l["a"] == sys.argv[2] and str(l["a_port"]) == sys.argv[3]: print(l["b"])
    if l["b"] == sys.argv[2] and str(l["b_port"]) == sys.argv[3]: print(l["a"])' "$MANIFEST" "$E1" "$port"
}
# link_down_record REASON START_NS: waits up to 10 s for an archived link-down record with REASON.
link_down_record() {
  local t0; t0=$(now_ms)
  while (($(now_ms) - t0 < 10000)); do
    if "$SDNATOR" data get -c "$IT_WORK/sdnator.toml" 'network/topology/link/**' --from-ns "$2" 2>/dev/null \
       | python3 -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l)
    if r["v"]["state"] == "down" and r["v"]["reason"] == sys.argv[1]:
        print("%.0f ms after the cut" % ((r["t"] - int(sys.argv[2])) / 1e6)); sys.exit(0)
sys.exit(1)' "$1" "$2"; then return 0; fi
    sleep 0.2
  done
  return 1
}
# pings_through SECONDS: h1 -> h9 answers at least once within SECONDS.
pings_through() {
  local t0; t0=$(now_ms)
  until ip netns exec "$NS1" ping -n -c 1 -W 1 "$IP9" >/dev/null 2>&1; do
    (($(now_ms) - t0 < $1 * 1000)) || return 1
  done
  step "h1 -> h9 answers again $(fmt_ms $(($(now_ms) - t0))) after"
}

A1=$(uplink_in_use)
[[ -n $A1 ]] || fail "no flow on $E1 towards h9"
step "cut 1: pull the cable $E1 - $A1 (the path's uplink; both ports down, PORT_STATUS)"
s0=$(date +%s%N)
"${TB[@]}" link-down "$E1" "$A1" || fail "link-down failed"
msg=$(link_down_record port_status "$s0") || fail "no link-down record (reason port_status) archived within 10 s"
step "link-down published and archived, $msg"
pings_through 10 || fail "h1 -> h9 did not reroute within 10 s"
A2=$(uplink_in_use)
[[ -n $A2 && $A2 != "$A1" ]] || fail "traffic still goes to $A2 (cut: $A1)"
step "traffic now uses $E1 - $A2"

step "cut 2: $E1 - $A2 dies silently (no PORT_STATUS), with $E1 - $A1 back up"
"${TB[@]}" link-up "$E1" "$A1" || fail "link-up failed"
wait_topology 10 15
s0=$(date +%s%N)
"${TB[@]}" link-down --silent "$E1" "$A2" || fail "link-down --silent failed"
msg=$(link_down_record lldp_timeout "$s0") || fail "no link-down record (reason lldp_timeout) within 10 s"
step "LLDP timeout found it, $msg"
pings_through 10 || fail "h1 -> h9 did not reroute after the silent cut"
[[ $(uplink_in_use) == "$A1" ]] || fail "traffic does not use the restored $E1 - $A1"

step "restore: the silent link comes back and is rediscovered"
"${TB[@]}" link-up "$E1" "$A2" || fail "link-up failed"
wait_topology 10 15
"${TB[@]}" pingpairs --count 2 --quiet || fail "pairs unreachable after the links were restored"

stop_controller
step "PASS"
