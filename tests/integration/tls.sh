#!/usr/bin/env bash
# OpenFlow over TLS and HTTPS for the REST API (docs/tls.md). A PKI from scripts/pki.sh (ovs-pki);
# sdnator with [southbound] tls (mutual authentication against switchca) and [northbound] HTTPS;
# a real Open vSwitch bridge (netdev) connecting over ssl: with a switch certificate; then:
#   - the switch completes the handshake, is listed by the controller (stats and REST), and two
#     namespace hosts ping each other through reactive forwarding over the TLS session;
#   - a peer with a certificate from another CA, one without a certificate, and a plain-TCP
#     OpenFlow peer are refused before any OpenFlow and counted (southbound.tls.handshake_failed);
#     the same probe with a good certificate gets the controller's HELLO (so the probe can pass);
#   - the REST API answers over HTTPS (curl --cacert, sdnator ctl --cacert) and refuses plain HTTP
#     and a client that does not trust the CA.
# OVS holds one SSL configuration per ovsdb (ovs-vsctl set-ssl is global): the refused peers are
# therefore Python TLS clients (tls_probe.py), and the OVS SSL settings found at start are put back
# on exit (del-ssl when there were none).
source "$(dirname "$0")/lib.sh" "$@"
need_cmds ovs-pki openssl curl
PROBE="$IT_ROOT/tests/integration/tls_probe.py"

# ---- OVS's global SSL settings: saved now, restored on exit -----------------------------------
ssl_field() { ovs-vsctl --timeout=5 get-ssl 2>/dev/null | sed -n "s/^$1: //p"; }
OLD_KEY=$(ssl_field 'Private key'); OLD_CERT=$(ssl_field 'Certificate'); OLD_CA=$(ssl_field 'CA Certificate')
restore_ssl() {
  if [[ -n $OLD_KEY && -n $OLD_CERT && -n $OLD_CA ]]; then
    ovs-vsctl --timeout=5 set-ssl "$OLD_KEY" "$OLD_CERT" "$OLD_CA"
  else
    ovs-vsctl --timeout=5 del-ssl
  fi
}
trap 'rc=$?; restore_ssl >/dev/null 2>&1; (exit $rc); it_cleanup' EXIT

t_start=$(now_ms)
PKI=$IT_WORK/pki
bash "$IT_ROOT/scripts/pki.sh" --dir "$PKI" --switches 1 >/dev/null || fail "scripts/pki.sh failed"
step "PKI made with ovs-pki in $(fmt_ms $(($(now_ms) - t_start)))"

API_PORT=$(free_port) || fail "no free TCP port"
CONFIG=$IT_WORK/tls.toml
cat >"$CONFIG" <<EOF
[southbound]
tls = true
tls_cert = "$PKI/controller-cert.pem"
tls_key = "$PKI/controller-privkey.pem"
tls_ca = "$PKI/switchca.pem"
handshake_timeout_ms = 3000

[northbound]
listen = "127.0.0.1:$API_PORT"
tls_cert = "$PKI/rest-cert.pem"
tls_key = "$PKI/rest-privkey.pem"
EOF
start_controller -c "$CONFIG"
API=https://127.0.0.1:$API_PORT
grep -q "northbound API and dashboard on https://" "$CTRL_LOG" || fail "the API did not start on HTTPS"

# ---- the real switch over ssl: -----------------------------------------------------------------
ovs-vsctl --timeout=5 set-ssl "$PKI/sw1-privkey.pem" "$PKI/sw1-cert.pem" "$PKI/controllerca.pem"
TB+=(--controller "ssl:127.0.0.1:$IT_PORT")
t0=$(now_ms)
"${TB[@]}" up linear 1 --hosts 2 >/dev/null || fail "testbed up failed"
wait_stats_switches 1 20
step "OVS ${IT_PREFIX}s1 connected over TLS and completed the OpenFlow handshake in $(fmt_ms $(($(now_ms) - t0)))"
grep -q "over TLS (TLSv1\.[23] .*CN *= *sw1" "$CTRL_LOG" || grep -q "over TLS (TLSv1\.[23] .*CN=sw1" "$CTRL_LOG" \
  || fail "no 'over TLS ... CN=sw1' line in the controller log"
grep -m1 "over TLS" "$CTRL_LOG" | sed 's/^.*over TLS/  over TLS/'
dpid=$(python3 "$STATS_PY" get "$STATS" switches.0.dpid)
ovs_dpid=$(ovs-vsctl --timeout=5 get bridge "${IT_PREFIX}s1" datapath_id | tr -d '"')
[[ $dpid == "$ovs_dpid" ]] || fail "controller lists dpid $dpid, the bridge has $ovs_dpid"

ping_out=$("${TB[@]}" exec h1 ping -n -c 5 -i 0.2 -W 2 10.0.0.2) || { echo "$ping_out" >&2; fail "h1 -> h2 ping over the TLS-controlled switch failed"; }
first=$(sed -n 's/.*icmp_seq=1 .*time=\([0-9.]*\) ms/\1/p' <<<"$ping_out")
steady=$(sed -n 's/.*icmp_seq=[2-5] .*time=\([0-9.]*\) ms/\1/p' <<<"$ping_out" | awk '{ s += $1; n++ } END { if (n) printf "%.3f", s / n }')
step "h1 -> h2: 5/5 replies; first (reactive set-up over TLS) ${first} ms, later ${steady} ms mean"
n=$(nonmiss_flows "${IT_PREFIX}s1")
((n > 0)) || fail "no flows installed on ${IT_PREFIX}s1 over TLS"

# ---- refusals ------------------------------------------------------------------------------
wait_stats_fresh
failed0=$(stat_sum 'southbound\.tls\.handshake_failed$')
ok0=$(stat_sum 'southbound\.tls\.handshakes$')
[[ -n $failed0 && -n $ok0 ]] || fail "no southbound.tls counters in the stats file"
((ok0 >= 1)) || fail "southbound.tls.handshakes is $ok0 with a switch up"

out=$(python3 "$PROBE" "$IT_PORT" tls --ca "$PKI/controllerca.pem" --cert "$PKI/sw1-cert.pem" --key "$PKI/sw1-privkey.pem") \
  || fail "control: a probe with the switch CA's certificate did not get HELLO: $out"
step "control probe (sw1 certificate): $out"
probe_refused() {  # NAME ARGS...: the probe must be refused (exit 1), not answered and not left hanging
  local name=$1 rc=0; shift
  out=$(python3 "$PROBE" "$IT_PORT" "$@") || rc=$?
  ((rc == 1)) || fail "$name: probe exit $rc, want 1 (refused): $out"
  step "$name: $out"
}
probe_refused "certificate from another CA" tls --ca "$PKI/controllerca.pem" --cert "$PKI/foreign-sw-cert.pem" --key "$PKI/foreign-sw-privkey.pem"
probe_refused "no client certificate" tls --ca "$PKI/controllerca.pem"
probe_refused "plain-TCP OpenFlow HELLO" plain

wait_stats_fresh
wait_stats_fresh
failed1=$(stat_sum 'southbound\.tls\.handshake_failed$')
ok1=$(stat_sum 'southbound\.tls\.handshakes$')
((failed1 == failed0 + 3)) || fail "southbound.tls.handshake_failed went $failed0 -> $failed1, want +3"
((ok1 == ok0 + 1)) || fail "southbound.tls.handshakes went $ok0 -> $ok1, want +1 (the control probe only)"
sw_n=$(python3 "$STATS_PY" count "$STATS" switches)
((sw_n == 1)) || fail "controller lists $sw_n switches after the refused peers, want 1"
grep -q "TLS handshake failed" "$CTRL_LOG" || fail "no 'TLS handshake failed' log line"
step "refusals counted: handshake_failed $failed0 -> $failed1, handshakes $ok0 -> $ok1, still 1 switch"
"${TB[@]}" exec h2 ping -n -c 1 -W 2 10.0.0.1 >/dev/null || fail "h2 -> h1 failed after the refused peers"

# ---- REST over HTTPS --------------------------------------------------------------------------
body=$(curl -sS --max-time 5 --cacert "$PKI/controllerca.pem" "$API/api/v1/switches") || fail "HTTPS GET /api/v1/switches failed"
grep -q "$dpid" <<<"$body" || fail "REST switch list over HTTPS lacks $dpid: $body"
step "curl --cacert $API/api/v1/switches lists $dpid"
rc=0; curl -sS --max-time 5 "http://127.0.0.1:$API_PORT/api/v1/health" >/dev/null 2>&1 || rc=$?
((rc != 0)) || fail "plain HTTP got an answer from the HTTPS port"
rc2=0; curl -sS --max-time 5 "$API/api/v1/health" >/dev/null 2>&1 || rc2=$?
((rc2 == 60)) || fail "curl without the CA: exit $rc2, want 60 (certificate not trusted)"
step "plain HTTP refused (curl exit $rc), untrusted server certificate refused by the client (curl exit $rc2)"
ctl_out=$("$SDNATOR" ctl --url "$API" --cacert "$PKI/controllerca.pem" switches) || fail "sdnator ctl over HTTPS failed: $ctl_out"
grep -q "$dpid" <<<"$ctl_out" || fail "sdnator ctl switches over HTTPS lacks $dpid: $ctl_out"
step "sdnator ctl --url $API --cacert ... switches: lists $dpid"

# ---- figures ----------------------------------------------------------------------------------
wait_stats_fresh
hs_n=$(python3 "$STATS_PY" get "$STATS" metrics.histograms.southbound.tls.handshake_time.count)
hs_p50=$(python3 "$STATS_PY" get "$STATS" metrics.histograms.southbound.tls.handshake_time.p50_us)
hs_max=$(python3 "$STATS_PY" get "$STATS" metrics.histograms.southbound.tls.handshake_time.max_us 2>/dev/null || echo "?")
step "TLS handshakes (accept -> done, controller side): $hs_n, p50 ${hs_p50} us, max ${hs_max} us"

"${TB[@]}" down >/dev/null 2>&1
stop_controller
step "PASS ($(fmt_ms $(($(now_ms) - t_start))))"
