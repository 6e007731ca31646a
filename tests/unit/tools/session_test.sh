#!/usr/bin/env bash
# Loopback test of sdnator-session: two echo servers on port 0 (ports read from --ready-file),
# then hold (2 s), churn (50), udp (2 s) and a scan of 127.0.0.0/29, checking each JSON result
# (with jq, else python3, else grep) and the exit codes, including usage errors (2).
# usage: session_test.sh PATH/TO/sdnator-session
set -Eeuo pipefail

BIN=${1:?usage: session_test.sh PATH/TO/sdnator-session}
[[ -x $BIN ]] || { echo "FAIL: not executable: $BIN" >&2; exit 1; }
WORK=$(mktemp -d /tmp/sdnator-session-test.XXXXXX)
PIDS=()
FAILS=0

cleanup() {
  local rc=$? p
  for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill "$p" 2>/dev/null || true; done
  if ((rc == 0)); then rm -rf "$WORK"; else echo "(work dir kept: $WORK)" >&2; fi
  exit $rc
}
trap cleanup EXIT

step() { printf '[session_test] %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; FAILS=$((FAILS + 1)); }

# jget FILE PATH: the value at a jq-style path (.a.b, .a[0].b) as text (strings unquoted).
if command -v jq >/dev/null 2>&1; then
  jget() { jq -r "$2" "$1"; }
elif command -v python3 >/dev/null 2>&1; then
  jget() {
    python3 - "$1" "$2" <<'PY'
import json, re, sys
v = json.load(open(sys.argv[1]))
for key, idx in re.findall(r'\.([A-Za-z_0-9]+)|\[(\d+)\]', sys.argv[2]):
    v = v[key] if key else v[int(idx)]
if v is None or isinstance(v, bool):
    print({None: "null", True: "true", False: "false"}[v])
else:
    print(v)
PY
  }
else
  # Last resort: top-level keys only (the tool pretty-prints with 2 spaces); nested paths skip.
  jget() {
    local key=${2#.}
    if [[ $key == *[.[]* ]]; then echo "<skip>"; return; fi
    grep -m 1 "^  \"$key\": " "$1" | sed -e 's/^[^:]*: *//' -e 's/,$//' -e 's/^"//' -e 's/"$//'
  }
fi

# expect FILE PATH OP VALUE: OP is == (text) or a numeric -ge/-le/-eq.
expect() {
  local file=$1 path=$2 op=$3 want=$4 got
  got=$(jget "$file" "$path" 2>/dev/null || echo "<missing>")
  [[ $got == "<skip>" ]] && return 0
  case $op in
    ==) [[ $got == "$want" ]] ;;
    -ge) awk -v a="$got" -v b="$want" 'BEGIN { exit !(a + 0 >= b + 0 && a != "") }' ;;
    -le) awk -v a="$got" -v b="$want" 'BEGIN { exit !(a + 0 <= b + 0 && a != "") }' ;;
    -eq) awk -v a="$got" -v b="$want" 'BEGIN { exit !(a + 0 == b + 0 && a != "") }' ;;
  esac || fail "$(basename "$file") $path: got '$got', expected $op $want"
}

# run_rc WANT CMD...: run, expect exit code WANT.
run_rc() {
  local want=$1 rc=0; shift
  "$@" || rc=$?
  ((rc == want)) || fail "exit $rc (expected $want): $*"
}

wait_file() {
  local i
  for ((i = 0; i < 100; i++)); do [[ -s $1 ]] && return 0; sleep 0.05; done
  fail "no $1 after 5 s"; return 1
}

step "servers"
"$BIN" serve --tcp 0 --udp 0 --ready-file "$WORK/ready_a.json" >"$WORK/serve_a.log" 2>&1 &
PIDS+=($!); SERVE_A=$!
"$BIN" serve --tcp 0 --bind 127.0.0.3 --ready-file "$WORK/ready_b.json" >"$WORK/serve_b.log" 2>&1 &
PIDS+=($!); SERVE_B=$!
wait_file "$WORK/ready_a.json"
wait_file "$WORK/ready_b.json"
TCP=$(jget "$WORK/ready_a.json" .tcp); UDP=$(jget "$WORK/ready_a.json" .udp); TCP_B=$(jget "$WORK/ready_b.json" .tcp)
step "server a: tcp $TCP udp $UDP; server b: 127.0.0.3 tcp $TCP_B"

step "hold 2 s"
run_rc 0 "$BIN" hold 127.0.0.1 "$TCP" --duration 2 --interval-ms 100 --max-stall-ms 1000 --json "$WORK/hold.json"
expect "$WORK/hold.json" .ok == true
expect "$WORK/hold.json" .error == null
expect "$WORK/hold.json" .resolved == 127.0.0.1
expect "$WORK/hold.json" .echoes -ge 15
expect "$WORK/hold.json" .duration_s -ge 1.9
expect "$WORK/hold.json" .max_gap_ms -le 1000

step "churn 50"
run_rc 0 "$BIN" churn 127.0.0.1 "$TCP" --count 50 --rate 100 --concurrency 8 --seed 1 --json "$WORK/churn.json"
expect "$WORK/churn.json" .ok == true
expect "$WORK/churn.json" .succeeded -eq 50
expect "$WORK/churn.json" .outcomes.ok -eq 50
expect "$WORK/churn.json" .distinct_addresses -eq 1
expect "$WORK/churn.json" .setup_ms.n -eq 50
expect "$WORK/churn.json" .samples[49].outcome == ok
expect "$WORK/churn.json" .samples[49].address == 127.0.0.1

# To 127.0.0.2 while the client's source is 127.0.0.1: the echo must leave from the address the
# datagram was sent to (IP_PKTINFO), or the client's connected socket drops it.
step "udp 2 s"
run_rc 0 "$BIN" udp 127.0.0.2 "$UDP" --duration 2 --pps 100 --json "$WORK/udp.json"
expect "$WORK/udp.json" .ok == true
expect "$WORK/udp.json" .sent -eq 200
expect "$WORK/udp.json" .echoed -ge 198
expect "$WORK/udp.json" .loss_pct -le 1

step "scan 127.0.0.0/29 (server b listens on 127.0.0.3 only: 1 open, 7 refused)"
run_rc 0 "$BIN" scan 127.0.0.0/29 "$TCP_B" --timeout-ms 500 --json "$WORK/scan.json" >"$WORK/scan.out"
expect "$WORK/scan.json" .alive -eq 8
expect "$WORK/scan.json" .open -eq 1
expect "$WORK/scan.json" .refused -eq 7
[[ $(wc -l <"$WORK/scan.out") -eq 8 ]] || fail "scan printed $(wc -l <"$WORK/scan.out") addresses, expected 8"
grep -qx 127.0.0.3 "$WORK/scan.out" || fail "scan output lacks 127.0.0.3"

step "scan --targets (the list a scan printed, plus a comment, a blank line and 127.0.0.9)"
{ echo "# found earlier"; head -n 3 "$WORK/scan.out"; echo; echo "127.0.0.3  # the server"; } >"$WORK/targets.txt"
run_rc 0 "$BIN" scan --targets "$WORK/targets.txt" "$TCP_B" --timeout-ms 500 --json "$WORK/rescan.json" >"$WORK/rescan.out"
expect "$WORK/rescan.json" .addresses -eq 4
expect "$WORK/rescan.json" .alive -eq 4
expect "$WORK/rescan.json" .open -eq 1
echo "10.0.0.300" >"$WORK/bad-targets.txt"
run_rc 2 "$BIN" scan --targets "$WORK/bad-targets.txt" "$TCP_B"
run_rc 2 "$BIN" scan --targets "$WORK/targets.txt" 127.0.0.0/29 "$TCP_B"
run_rc 2 "$BIN" scan 127.0.0.0/29

step "failures and usage errors"
run_rc 1 "$BIN" hold 127.0.0.1 "$TCP_B" --duration 1 --json "$WORK/refused.json"   # b listens on 127.0.0.3 only
expect "$WORK/refused.json" .error == refused
run_rc 2 "$BIN" hold 127.0.0.1
run_rc 2 "$BIN" churn 127.0.0.1 "$TCP" --rate 5 --spacing-ms 10
run_rc 2 "$BIN" scan 10.0.0.0/8 80
run_rc 2 "$BIN" nonsense

step "SIGTERM stops the servers (exit 0)"
kill -TERM "$SERVE_A" "$SERVE_B"
rc=0; wait "$SERVE_A" || rc=$?; ((rc == 0)) || fail "serve a exited $rc"
rc=0; wait "$SERVE_B" || rc=$?; ((rc == 0)) || fail "serve b exited $rc"
PIDS=()
grep -q 'serve: stopped' "$WORK/serve_a.log" || fail "serve a printed no final summary"

if ((FAILS)); then echo "session_test: $FAILS check(s) failed" >&2; exit 1; fi
echo "session_test: all checks passed"
