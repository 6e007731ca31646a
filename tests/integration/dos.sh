#!/usr/bin/env bash
# Denial-of-service handling on Open vSwitch (docs/dos.md): the tree testbed (s1 root; s2 with
# h1, h2; s3 with h3, h4), sdnator with table-miss meters and a tight PacketIn limiter. h1 floods
# table-miss frames (dos_flood.py: raw frames to h3's MAC, a fresh namespace-local IPv4
# destination each) for FLOOD_S seconds. Checked during the flood: a new path on the other leaf
# (h3 -> h4, ARP caches flushed) is set up; established flows from the flooded switch (h2 -> h4)
# keep working; ARP from the flooded switch and from the flooding port itself is resolved through
# the ARP/LLDP flows and their own meter. After: every switch shows our meter (dump-meters), the
# flooded switch's meter band dropped packets, the controller received far fewer PacketIns than
# h1 sent, and its limiter's drop counters grew.
source "$(dirname "$0")/lib.sh" "$@"
need_cmds python3 ping
FLOOD_S=${DOS_FLOOD_S:-12}
METER_ID=64769   # 0xfd01, southbound/miss_meter.hpp
MISS_PPS=200

cat >"$IT_WORK/dos.toml" <<TOML
[southbound]
table_miss_meter_pps = $MISS_PPS
table_miss_meter_burst = 50
control_meter_pps = 100
control_meter_burst = 20
pin_port_pps = 50
pin_port_burst = 20
TOML
start_controller --config "$IT_WORK/dos.toml"
up_tree
MANIFEST=/run/sdnator-testbed/$IT_PREFIX/manifest.json
# One read of the manifest: H1_SWITCH, H1_IP, H1_MAC, ... for h1..h4.
eval "$(python3 -c '
import json, sys
for h in json.load(open(sys.argv[1]))["hosts"]:
    n = h["name"].removeprefix(sys.argv[2]).upper()
    print("%s_SWITCH=%s %s_IP=%s %s_MAC=%s" % (n, h["switch"], n, h["ip"], n, h["mac"]))
' "$MANIFEST" "$IT_PREFIX")"
[[ $H1_SWITCH == "$H2_SWITCH" && $H3_SWITCH == "$H4_SWITCH" && $H1_SWITCH != "$H3_SWITCH" ]] \
  || fail "unexpected tree layout: h1-h4 on $H1_SWITCH $H2_SWITCH $H3_SWITCH $H4_SWITCH"
S_FLOODED=$H1_SWITCH IP2=$H2_IP IP3=$H3_IP IP4=$H4_IP

# ---- meters on every switch ------------------------------------------------------------------
wait_stats_fresh
installed=$(stat_sum 'southbound\.meters\.installed$')
((installed == 3)) || fail "controller installed meters on ${installed:-no} switches, want 3 ($(stat_sum 'meters\.(unsupported|failed)$') unsupported/failed)"
for s in s1 s2 s3; do
  m=$(ovs-ofctl -O OpenFlow13 dump-meters "${IT_PREFIX}$s")
  grep -q "meter=$METER_ID pktps burst stats" <<<"$m" && grep -q "type=drop rate=$MISS_PPS burst_size=50" <<<"$m" \
    || { echo "$m" >&2; fail "${IT_PREFIX}$s: table-miss meter $METER_ID not installed as configured"; }
  f=$(ovs-ofctl -O OpenFlow13 --no-stats dump-flows "${IT_PREFIX}$s")
  grep -qE "priority=0 actions=meter:$METER_ID,CONTROLLER" <<<"$f" || { echo "$f" >&2; fail "${IT_PREFIX}$s: table-miss does not use the meter"; }
  grep -qE "cookie=0xfd00000000000001, priority=1,arp actions=meter:$((METER_ID - 1)),CONTROLLER" <<<"$f" \
    || { echo "$f" >&2; fail "${IT_PREFIX}$s: no metered ARP flow"; }
done
step "meters installed: table-miss $METER_ID at $MISS_PPS pps, ARP/LLDP $((METER_ID - 1)) at 100 pps, on s1-s3"

# ---- flows established before the flood --------------------------------------------------------
in_ns() { local h=$1; shift; ip netns exec "${IT_PREFIX}$h" "$@"; }
in_ns h1 ping -n -c 2 -i 0.2 -W 1 "$IP2" >/dev/null || fail "h1 -> h2 before the flood"
in_ns h2 ping -n -c 2 -i 0.2 -W 1 "$IP4" >/dev/null || fail "h2 -> h4 before the flood"
wait_stats_fresh
pin0=$(stat_sum 'southbound\.rx\.packet_in$')
drop0=$(stat_sum 'southbound\.packet_in\.dropped\.(port|switch)$')
band() { ovs-ofctl -O OpenFlow13 meter-stats "$1" "meter=$METER_ID" | sed -nE 's/^ *0: packet_count:([0-9]+).*/\1/p'; }
band0=$(band "$S_FLOODED")

# ---- the flood ------------------------------------------------------------------------------
step "h1 floods table-miss frames for ${FLOOD_S}s"
in_ns h1 python3 "$(dirname "$0")/dos_flood.py" --iface eth0 --src-mac "$H1_MAC" --dst-mac "$H3_MAC" \
  --src-ip "$H1_IP" --seconds "$FLOOD_S" >"$IT_WORK/flood.out" 2>&1 &
FLOOD_PID=$!
BG_PIDS+=("$FLOOD_PID")
t_flood=$(now_ms)
sleep 2

# replies SRC DST COUNT: echo replies received (ping -c COUNT, 0.2 s apart, 1 s wait).
# (ping exits 1 when nothing came back: that is a count of 0 here, not an error.)
replies() { { in_ns "$1" ping -n -c "$3" -i 0.2 -W "${4:-1}" "$2" 2>/dev/null || true; } | sed -nE 's/.* ([0-9]+) received.*/\1/p'; }
in_ns h3 ip neigh flush dev eth0
in_ns h4 ip neigh flush dev eth0
r=$(replies h3 "$IP4" 10); step "new path on the other leaf, h3 -> h4 (ARP flushed): $r/10 replies"
((r >= 8)) || fail "h3 -> h4 during the flood: $r/10 replies"
r=$(replies h2 "$IP4" 10); step "established flow from the flooded switch, h2 -> h4: $r/10 replies"
((r >= 9)) || fail "h2 -> h4 during the flood: $r/10 replies"
in_ns h2 ip neigh flush dev eth0
r=$(replies h2 "$IP4" 5); step "h2 -> h4 after flushing h2's ARP cache (ARP from the flooded switch): $r/5 replies"
((r >= 4)) || fail "h2's ARP during the flood: $r/5 replies"
in_ns h1 ip neigh flush dev eth0
# Not asserted: h1's own link carries the flood, and Open vSwitch's userspace datapath drops
# what it cannot read from that port, h1's ARP and pings as much as the flood (the unit tests
# show the controller admits ARP from a flooded port; docs/dos.md).
in_ns h1 ip neigh flush dev eth0
r=$(replies h1 "$IP2" 10 2)
step "(info) h1 -> h2 after flushing h1's ARP cache (from the flooding port itself): $r/10 replies"
# Not asserted: a NEW IP flow from the flooded switch competes with the flood for the switch's
# table-miss meter (one meter per switch), as docs/dos.md explains.
r=$(replies h2 "$IP3" 5); step "(info) new path from the flooded switch, h2 -> h3: $r/5 replies"

wait "$FLOOD_PID" || fail "flooder failed: $(cat "$IT_WORK/flood.out")"
t_end=$(now_ms)
sent=$(tail -n 1 "$IT_WORK/flood.out")
wait_stats_fresh
wait_stats_fresh
pin1=$(stat_sum 'southbound\.rx\.packet_in$')
drop1=$(stat_sum 'southbound\.packet_in\.dropped\.(port|switch)$')
band1=$(band "$S_FLOODED")
secs=$(( (t_end - t_flood + 999) / 1000 ))
step "flood: $sent frames in ${secs}s; meter band on $S_FLOODED dropped $((band1 - band0)); controller got $((pin1 - pin0)) PacketIns, its limiter dropped $((drop1 - drop0))"
((sent > 20 * MISS_PPS * FLOOD_S)) || fail "the flooder sent only $sent frames (want > $((20 * MISS_PPS * FLOOD_S)))"
# The band counts what the datapath read from h1's port and the meter dropped (the port itself
# drops what Open vSwitch cannot read): far more than what passed to the controller.
((band1 - band0 > 10 * MISS_PPS * FLOOD_S)) || fail "meter band dropped only $((band1 - band0)) of $sent flood frames"
((band1 - band0 > 20 * (pin1 - pin0))) || fail "meter band dropped $((band1 - band0)), controller got $((pin1 - pin0))"
# Everything that reached the controller passed a meter: at most the table-miss meter's rate (+
# burst) on each of the 3 switches, plus ARP/LLDP, over the flood and the time to read stats.
limit=$(( (MISS_PPS * 3 + 300) * (secs + 3) ))
((pin1 - pin0 < limit)) || fail "controller received $((pin1 - pin0)) PacketIns during the flood (want < $limit)"
((drop1 - drop0 > 0)) || fail "the controller's limiter dropped nothing"
stop_controller
step "PASS"
