#!/usr/bin/env bash
# Capture sdnator's OpenFlow traffic on lo while the tree testbed comes up and runs pingall, then
# dissect it with Wireshark's OpenFlow 1.3 dissector: all expected message types must be present,
# every message must be version 1.3, and there must be no malformed packets, no expert errors and
# no OFPT_ERROR from a switch.
source "$(dirname "$0")/lib.sh" "$@"
need_cmds tshark
PCAP="$IT_WORK/openflow.pcapng"

start_controller
step "tshark capturing on lo, filter 'tcp port $IT_PORT'"
tshark -i lo -f "tcp port $IT_PORT" -w "$PCAP" -q >"$IT_WORK/tshark.log" 2>&1 &
TSHARK_PID=$!
BG_PIDS+=("$TSHARK_PID")
track_pid "$TSHARK_PID"
for _ in $(seq 1 100); do grep -q "Capturing on" "$IT_WORK/tshark.log" && break; sleep 0.1; done
grep -q "Capturing on" "$IT_WORK/tshark.log" || fail "tshark did not start: $(cat "$IT_WORK/tshark.log")"

up_tree
"${TB[@]}" --count 3 pingall || fail "pingall failed"
# Stop the controller first, so the capture holds every message its final stats counted.
stop_controller
sleep 0.5
kill -INT "$TSHARK_PID"
wait "$TSHARK_PID" || true
[[ -s $PCAP ]] || fail "empty capture"

# Wireshark 4.0: the "openflow" dissector dispatches on the version byte to openflow_v4 (1.3).
DECODE=(-d "tcp.port==$IT_PORT,openflow")
tshark -r "$PCAP" "${DECODE[@]}" -V >"$IT_WORK/openflow.txt" 2>&1 || fail "tshark could not read the capture"
frames=$(tshark -r "$PCAP" | wc -l)

# One line per OpenFlow message: version<TAB>type (a segment may carry several messages).
tshark -r "$PCAP" "${DECODE[@]}" -T fields -E occurrence=a -E separator=/t -e openflow_v4.version -e openflow_v4.type \
  2>/dev/null | awk -F'\t' 'NF == 2 && $2 != "" { nv = split($1, v, ","); nt = split($2, t, ",");
    for (i = 1; i <= nt; i++) print (nv >= i ? v[i] : v[1]) "\t" t[i] }' >"$IT_WORK/types.tsv"
msgs=$(wc -l <"$IT_WORK/types.tsv")
step "$frames frames, $msgs OpenFlow 1.3 messages"
((msgs > 0)) || fail "no OpenFlow 1.3 messages dissected"
bad_version=$(awk -F'\t' '$1 != "0x04" && $1 != "4"' "$IT_WORK/types.tsv" | wc -l)
((bad_version == 0)) || fail "$bad_version messages are not OpenFlow 1.3"

declare -A NAME=([0]=HELLO [1]=ERROR [2]=ECHO_REQUEST [3]=ECHO_REPLY [4]=EXPERIMENTER [5]=FEATURES_REQUEST
  [6]=FEATURES_REPLY [7]=GET_CONFIG_REQUEST [8]=GET_CONFIG_REPLY [9]=SET_CONFIG [10]=PACKET_IN [11]=FLOW_REMOVED
  [12]=PORT_STATUS [13]=PACKET_OUT [14]=FLOW_MOD [18]=MULTIPART_REQUEST [19]=MULTIPART_REPLY
  [20]=BARRIER_REQUEST [21]=BARRIER_REPLY)
count() { awk -F'\t' -v t="$1" '$2 == t' "$IT_WORK/types.tsv" | wc -l; }
summary=""
for t in $(cut -f2 "$IT_WORK/types.tsv" | sort -n | uniq); do summary+="${NAME[$t]:-type$t}=$(count "$t") "; done
step "message types: $summary"
for t in 0 5 6 10 13 14 18 19 20 21; do
  (($(count $t) > 0)) || fail "no ${NAME[$t]} (type $t) in the capture"
done
(($(count 1) == 0)) || {
  grep -A12 'Type: OFPT_ERROR' "$IT_WORK/openflow.txt" | head -40 >&2
  fail "$(count 1) OFPT_ERROR messages in the capture (a switch rejected something the controller sent)"
}

malformed=$(grep -c 'Malformed Packet' "$IT_WORK/openflow.txt" || true)
# (an invalid display filter would print nothing: check tshark's status, not just the output)
BAD='_ws.malformed || _ws.expert.severity >= "Error"'
tshark -r "$PCAP" "${DECODE[@]}" -Y "$BAD" >"$IT_WORK/bad.txt" 2>"$IT_WORK/bad.err" \
  || fail "tshark display filter failed: $(cat "$IT_WORK/bad.err")"
experts=$(grep -vc '^Running as user' "$IT_WORK/bad.txt" || true)
warnings=$(tshark -r "$PCAP" "${DECODE[@]}" -Y '_ws.expert.severity == "Warning"' 2>/dev/null | wc -l)
if ((malformed > 0 || experts > 0)); then
  head -20 "$IT_WORK/bad.txt" >&2
  fail "$malformed 'Malformed Packet' and $experts frames with expert errors"
fi
step "no malformed packets, no expert errors ($warnings frames with expert warnings, e.g. TCP resets at teardown)"
# Cross-check the controller's own counters (final stats file) against the wire; allow a
# message or two in flight when the controller stopped.
for pair in "10:rx\.packet_in$" "13:tx\.packet_out$" "14:tx\.flow_mod$"; do
  t=${pair%%:*} key=${pair#*:}
  wire=$(count "$t") counted=$(stat_sum "$key")
  step "${NAME[$t]}: $wire on the wire, ${counted:-?} in the controller's stats"
  [[ -n $counted ]] && ((wire - counted <= 2 && counted - wire <= 2)) \
    || fail "${NAME[$t]}: the controller counted ${counted:-nothing}, the capture has $wire"
done
step "PASS"
