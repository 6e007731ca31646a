#!/usr/bin/env bash
# sdnator in one command: install and build (setup.sh), start Open vSwitch, bring up a small
# three-tier campus fabric with loops (1 core, 2 aggregation, 4 edge switches each dual-homed, 16
# hosts) whose hosts use the controller as DNS resolver, run sdnator with topology discovery,
# fabric forwarding and CPAM (moving-target defense: every host is reachable only under a virtual
# IP that rotates every --interval-ms), wait for discovery, then:
#   - reach every manifest pair by name (DNS -> current VIP -> ping) and every ordered host pair by
#     name over TCP, and show that a host's real address is blocked;
#   - run sessions across >= 3 rotations: a long-lived TCP `hold`, a UDP stream, and fresh TCP
#     connections (`churn`, Poisson arrivals from a few clients) spread over the rotation instants,
#     printing every rotation as it is published with the live name -> VIP mapping;
#   - show flows per switch, the controller counters, the RPPT histogram (rule-programming
#     processing time: PacketIn read -> last FlowMod queued) overall / during rotation / quiet,
#     setup failures, session continuity, controller RSS and CPU;
# then tear down exactly what it created. Exit status is non-zero if a pair is unreachable by name,
# a real address answers, the hold session broke, any churn connection failed, or UDP lost > 1 %.
#
# usage: scripts/demo.sh [--no-setup] [--runtime sharded|cooperative] [--interval-ms MS]
#                        [--hosts N] [--shape campus|tree] [--fanout F] [--count C] [--shards N]
#                        [--batch B] [--batch-delay-ms MS] [--clients N] [--rate R]
#   --no-setup        skip scripts/setup.sh (packages and build already there)
#   --runtime         CPAM runtime: sharded (default; rotation in small steps off the hot path) or
#                     cooperative (one shard, the rotation loop runs to completion, as in Ryu)
#   --interval-ms MS  rotation interval (default 10000; at least 1000)
#   --batch B, --batch-delay-ms MS   hosts per rotation batch and the pause between batches
#                     (default 4 and 150: a rotation of 16 hosts spans ~0.45 s, so the
#                     during-rotation RPPT has samples)
#   --clients N, --rate R   churn clients (default 4) and connections/s per client (default 5)
#   --hosts N         campus: hosts in total (default 16); tree: hosts per leaf (default 2)
#   --shape           campus (default) or tree (s1 root + F leaves, loop-free)
#   --count C         pings per manifest pair (default 5)
#   --api HOST:PORT   the REST API and dashboard (default 127.0.0.1:8080, or a free port if taken)
#   --keep-s S        keep the fabric and controller up S seconds before teardown (to look at
#                     the dashboard; default 0)
#   --no-ipv6         hosts without IPv6 (default: dual-stack, link-local + ULA, testbed --ipv6)
#   --cross-shard M   direct (default: a reply to another shard's switch leaves from the thread
#                     that read the PacketIn) or post (hop to the owner's thread; the ablation)
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$SDN_ROOT"

SETUP=1 HOSTS="" SHAPE=campus FANOUT=2 COUNT=5 SHARDS="" RUNTIME=sharded INTERVAL_MS=10000
BATCH=4 BATCH_DELAY_MS=150 CLIENTS=4 RATE=5 API_LISTEN="" KEEP_S=0 IPV6=1 CROSS_SHARD=direct
while (($#)); do
  case $1 in
    --no-setup) SETUP=0; shift ;;
    --runtime) RUNTIME=$2; shift 2 ;;
    --interval-ms) INTERVAL_MS=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --batch-delay-ms) BATCH_DELAY_MS=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --hosts) HOSTS=$2; shift 2 ;;
    --fanout) FANOUT=$2; shift 2 ;;
    --shape) SHAPE=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --api) API_LISTEN=$2; shift 2 ;;
    --keep-s) KEEP_S=$2; shift 2 ;;
    --no-ipv6) IPV6=0; shift ;;
    --cross-shard) CROSS_SHARD=$2; shift 2 ;;
    --shards) SHARDS=$2; shift 2 ;;
    -h|--help) sed -n '2,35p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ $RUNTIME == sharded || $RUNTIME == cooperative ]] || die "--runtime: sharded or cooperative"
[[ $INTERVAL_MS =~ ^[0-9]+$ ]] && ((INTERVAL_MS >= 1000)) || die "--interval-ms: an integer >= 1000"
[[ $CLIENTS =~ ^[0-9]+$ ]] && ((CLIENTS >= 1)) || die "--clients: an integer >= 1"
need_root "demo.sh"

SDNATOR=${SDNATOR:-$SDN_ROOT/build/bin/sdnator}
SESSION=${SDNATOR_SESSION:-$(dirname "$SDNATOR")/sdnator-session}
PREFIX=${DEMO_PREFIX:-sdd-}
DNS_IP=10.0.255.253 ZONE=cpam.lan
SVC_PORT=5000
WORK=$(mktemp -d /tmp/sdnator-demo.XXXXXX)
STATS="$WORK/stats.json"
CONF="$WORK/sdnator.toml"
CTRL_PID="" OVS_STARTED=0 TB=() BG_PIDS=() FOLLOW_PID=""

cleanup() {
  local rc=$?
  set +e
  trap - ERR
  echo
  log "demo: tearing down"
  [[ -n $FOLLOW_PID ]] && kill "$FOLLOW_PID" 2>/dev/null
  local p
  for p in "${BG_PIDS[@]+"${BG_PIDS[@]}"}"; do kill "$p" 2>/dev/null; done
  for p in "${BG_PIDS[@]+"${BG_PIDS[@]}"}"; do wait "$p" 2>/dev/null; done
  ((${#TB[@]})) && "${TB[@]}" down
  if [[ -n $CTRL_PID ]] && ! kill -0 "$CTRL_PID" 2>/dev/null; then
    wait "$CTRL_PID" 2>/dev/null; local drc=$?
    warn "demo: sdnator (pid $CTRL_PID) had already exited, status $drc$( ((drc > 128)) && echo " (signal $((drc - 128)))")"
    ((rc != 0)) || rc=1
  elif [[ -n $CTRL_PID ]]; then
    kill -TERM "$CTRL_PID"
    for _ in $(seq 1 100); do kill -0 "$CTRL_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$CTRL_PID" 2>/dev/null && { warn "sdnator ignored SIGTERM for 10 s; killing pid $CTRL_PID"; kill -KILL "$CTRL_PID"; }
    wait "$CTRL_PID" 2>/dev/null; local crc=$?
    log "demo: sdnator (pid $CTRL_PID) exited with status $crc"
  fi
  ((OVS_STARTED)) && bash scripts/ovs.sh stop
  if ((rc != 0)); then
    [[ -f $WORK/sdnator.log ]] && { echo "---- last 30 lines of the sdnator log ----"; tail -n 30 "$WORK/sdnator.log"; }
    echo "(logs kept in $WORK)"
  else
    rm -rf "$WORK"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

T_START=$(now_ms)
# Every phase after the controller started begins by checking that it is still alive.
phase() {
  [[ -z $CTRL_PID ]] || kill -0 "$CTRL_PID" 2>/dev/null || die "sdnator died before: $* (see $WORK/sdnator.log)"
  PHASE_T0=$(now_ms); printf '\n== %s\n' "$*"
}
phase_done() { log "demo: $1 ($(fmt_ms $(($(now_ms) - PHASE_T0))))"; }

if ((SETUP)); then
  phase "setup: packages and release build"
  if ! bash scripts/setup.sh; then
    # The demo needs only the controller and the traffic tool: if some other target (a test) does
    # not compile, say so loudly and go on with those two. scripts/test.sh still reports the build.
    warn "demo: setup.sh failed; building only the sdnator and sdnator-session targets"
    cmake --build --preset release --target sdnator sdnator-session -j "${JOBS:-2}" || die "sdnator does not build"
    warn "demo: continuing with build/bin/sdnator although the full release build FAILED"
  fi
  phase_done "setup done"
fi
[[ -x $SDNATOR ]] || die "$SDNATOR not built (run scripts/setup.sh)"
[[ -x $SESSION ]] || die "$SESSION not built (run scripts/setup.sh)"
need_cmds ip ovs-vsctl ovs-ofctl ping ss python3

phase "Open vSwitch"
if ! bash scripts/ovs.sh status >/dev/null 2>&1; then OVS_STARTED=1; fi
bash scripts/ovs.sh start

PORT=$(free_port) || die "no free port"
if [[ -z $API_LISTEN ]]; then
  if [[ -z $(ss -Hltn "( sport = :8080 )") ]]; then API_LISTEN=127.0.0.1:8080; else API_LISTEN=127.0.0.1:$(free_port); fi
fi
API_URL="http://$API_LISTEN"
TB=(bash scripts/testbed.sh --prefix "$PREFIX" --port "$PORT" --resolver "$DNS_IP")
((IPV6)) && TB+=(--ipv6)
"${TB[@]}" down >/dev/null 2>&1 || true    # a previous demo killed with -9 leaves its state behind
case $SHAPE in
  campus) phase "testbed: campus, 1 core + 2 aggregation + 4 dual-homed edge switches, ${HOSTS:-16} hosts, resolver $DNS_IP"
          up=(up campus "${HOSTS:-16}" --cores 1 --aggs 2 --edges 4 --dual-homed) ;;
  tree)   phase "testbed: tree, $FANOUT leaves x ${HOSTS:-2} hosts, resolver $DNS_IP"
          up=(--hosts "${HOSTS:-2}" up tree "$FANOUT") ;;
  *) die "--shape: campus or tree" ;;
esac
T_UP=$(now_ms)
"${TB[@]}" "${up[@]}"
T_UP=$(($(now_ms) - T_UP))
MANIFEST=/run/sdnator-testbed/$PREFIX/manifest.json
read -r NSW NLINKS NHOSTS < <(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(len(m["switches"]), m["expected_links"], len(m["hosts"]))' "$MANIFEST")
# host name -> netns and real ip, and the manifest's pairs
declare -A NS=() RIP=()
HNAMES=()
while read -r n ns ip; do NS[$n]=$ns; RIP[$n]=$ip; HNAMES+=("$n"); done < <(
  python3 -c 'import json,sys; [print(h["name"], h["netns"], h["ip"]) for h in json.load(open(sys.argv[1]))["hosts"]]' "$MANIFEST")
mapfile -t PAIRS < <(python3 -c 'import json,sys; [print(p["a"], p["b"]) for p in json.load(open(sys.argv[1]))["pairs"]]' "$MANIFEST")
((${#PAIRS[@]} >= 2)) || die "the fabric needs at least 4 hosts (2 pairs) for the session phase"
for n in "${HNAMES[@]}"; do echo "$n ${RIP[$n]}"; done >"$WORK/hosts.txt"
# A /24 of VIPs keeps the printed mapping short; it holds ~5 epochs' worth for up to 32 hosts
# (primary, next, grace, 30 s of quarantine). Larger fabrics get the default /18 and pool.
if ((NHOSTS <= 32)); then VIP_RANGE=10.0.128.0/24 VIP_POOL=200; else VIP_RANGE=10.0.128.0/18 VIP_POOL=6000; fi

phase "controller: topology + cpam ($RUNTIME, rotation every $(fmt_ms "$INTERVAL_MS")) + forwarding"
cat >"$CONF" <<EOF
[controller]
apps = ["topology", "cpam", "forwarding"]
[northbound]
listen = "$API_LISTEN"
[sqlite]
path = "$WORK/archive.db"
[cpam]
runtime = "$RUNTIME"
rotation_interval_ms = $INTERVAL_MS
rotation_batch = $BATCH
batch_delay_ms = $BATCH_DELAY_MS
vip_range = "$VIP_RANGE"
vip_pool = $VIP_POOL
zone = "$ZONE"
dns_ip = "$DNS_IP"
hosts_file = "$WORK/hosts.txt"
rppt_samples = "$WORK/rppt.csv"
[southbound]
cross_shard = "$CROSS_SHARD"
EOF
sed 's/^/    /' "$CONF"
"$SDNATOR" --version
ctrl_args=(run -c "$CONF" --listen "127.0.0.1:$PORT" --stats-file "$STATS" --log-level info --archive-path "$WORK/archive.db")
[[ -z $SHARDS ]] || ctrl_args+=(--shards "$SHARDS")
echo "+ $SDNATOR ${ctrl_args[*]}"
"$SDNATOR" "${ctrl_args[@]}" >"$WORK/sdnator.log" 2>&1 &
CTRL_PID=$!
for _ in $(seq 1 200); do
  [[ -n $(ss -Hltn "( sport = :$PORT )") ]] && break
  kill -0 "$CTRL_PID" 2>/dev/null || die "sdnator exited at start-up"
  sleep 0.05
done
[[ -n $(ss -Hltn "( sport = :$PORT )") ]] || die "sdnator is not listening on 127.0.0.1:$PORT"
log "demo: sdnator pid $CTRL_PID listening on 127.0.0.1:$PORT ($(grep -oE 'with [0-9]+ shard\(s\)' "$WORK/sdnator.log" || echo '? shards'))"
log "demo: dashboard and REST API on $API_URL/ (metrics: $API_URL/metrics; CLI: sdnator ctl --url $API_URL)"
"${TB[@]}" wait-connected 30

phase "topology discovery (LLDP) and port settling"
links=0 pending=-1
for _ in $(seq 1 150); do
  links=$(python3 scripts/lib/stats.py get "$STATS" apps.topology.links 2>/dev/null || echo 0)
  pending=$(python3 scripts/lib/stats.py get "$STATS" apps.topology.pending_ports 2>/dev/null || echo -1)
  [[ $links == "$NLINKS" && $pending == 0 ]] && break
  sleep 0.2
done
disc=$(python3 scripts/lib/stats.py get "$STATS" apps.topology.discovery_us 2>/dev/null || echo 0)
log "demo: sdnator discovered $links/$NLINKS links of $NSW switches in $(awk -v u="$disc" 'BEGIN { printf "%.1f ms", u / 1000 }') (first switch up -> last link); $pending ports pending"
"$SDNATOR" data get -c "$CONF" --log-level off 'network/topology/link/**' 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    v=json.loads(l)["v"]; print("  link %s:%s - %s:%s %s (%s)" % (v["a"]["dpid"][-4:], v["a"]["port"], v["b"]["dpid"][-4:], v["b"]["port"], v["state"], v["reason"]))' || true

# ---- CPAM: echo servers, the first DNS query of every host, the rotation follower
phase "CPAM: echo server (TCP+UDP $SVC_PORT) on every host; every host asks the controller's DNS once"
for n in "${HNAMES[@]}"; do
  ip netns exec "${NS[$n]}" "$SESSION" serve --tcp "$SVC_PORT" --udp "$SVC_PORT" >"$WORK/serve.$n.log" 2>&1 &
  BG_PIDS+=($!)
done
# A host's first DNS query also tells the controller where it is attached.
rc=0 pids=()
for i in "${!HNAMES[@]}"; do
  n=${HNAMES[$i]} peer=${HNAMES[$(((i + 1) % NHOSTS))]}
  ip netns exec "${NS[$n]}" "$SESSION" resolve "$peer.$ZONE" >"$WORK/warm.$n" 2>&1 &
  pids+=($!)
done
wait "${pids[@]}" || true
bad=0
for n in "${HNAMES[@]}"; do grep -qE '^10\.' "$WORK/warm.$n" 2>/dev/null || bad=$((bad + 1)); done
((bad == 0)) || { warn "demo: $bad hosts could not resolve a peer through $DNS_IP"; rc=1; }
log "demo: $((NHOSTS - bad))/$NHOSTS hosts resolved a peer through the in-band DNS responder ($DNS_IP)"

# Prints every rotation as the controller logs it, with the mapping it published (name -> VIP,
# the common address prefix factored out). The mapping comes from the archive, as any client of
# the data layer would read it (sdnator data get network/cpam/mapping/current).
python3 - "$WORK/sdnator.log" "$SDNATOR" "$CONF" "$WORK/rotations.txt" <<'PY' &
import json, re, subprocess, sys, time
log, sdnator, conf, out = sys.argv[1:5]
rx = re.compile(r"^\S+T(\S+) .*cpam: epoch (\d+)(?:: (\d+) protected hosts| published: (\d+) hosts rotated in ([\d.]+) ms)")
def mapping(epoch):  # the archived mapping of that epoch (the archive writer may lag a little)
    for _ in range(30):
        r = subprocess.run([sdnator, "data", "get", "-c", conf, "--log-level", "off",
                            "network/cpam/mapping/current", "--latest", "8"], capture_output=True, text=True)
        for l in r.stdout.splitlines():
            try:
                v = json.loads(l)["v"]
            except (ValueError, KeyError):
                continue
            if v.get("epoch") == epoch:
                return v
        time.sleep(0.1)
    return None
def key(n):
    m = re.match(r"([a-z-]*)(\d+)$", n)
    return (m.group(1), int(m.group(2))) if m else (n, 0)
f = open(log)
rec = open(out, "a")
while True:
    line = f.readline()
    if not line:
        time.sleep(0.1)
        continue
    m = rx.search(line)
    if not m:
        continue
    at, epoch = m.group(1), int(m.group(2))
    what = f"{m.group(3)} hosts" if m.group(3) else f"{m.group(4)} hosts rotated in {float(m.group(5)):.0f} ms"
    v = mapping(epoch)
    if v is None:
        print(f"  rotation: epoch {epoch} at {at} ({what}); mapping not readable", flush=True)
        continue
    hosts = sorted(v["hosts"].items(), key=lambda kv: key(kv[0]))
    pre = ".".join(hosts[0][1].split(".")[:3]) + "." if hosts else ""
    if not all(ip.startswith(pre) for _, ip in hosts):
        pre = ".".join(hosts[0][1].split(".")[:2]) + "."
    shown = " ".join(f"{n}={ip[len(pre) - 1:]}" for n, ip in hosts[:16])
    more = f" (+{len(hosts) - 16} more)" if len(hosts) > 16 else ""
    print(f"  rotation: epoch {epoch} at {at} ({what}); {pre}x: {shown}{more}", flush=True)
    rec.write(f"{epoch} {at} {json.dumps(v['hosts'])}\n")
    rec.flush()
PY
FOLLOW_PID=$!

# ---- reachability by name (DNS -> VIP), and the real addresses blocked
# ping_name NS NAME COUNT: "received first steady_mean vip" (RTTs in ms, "-" when absent)
ping_name() {
  local ns=$1 name=$2 count=$3 vip out
  vip=$(ip netns exec "$ns" "$SESSION" resolve "$name.$ZONE" 2>/dev/null | awk '{ print $1 }') || true
  [[ -n $vip ]] || { echo "0 - - unresolved"; return; }
  out=$(ip netns exec "$ns" ping -n -c "$count" -i 0.2 -W 2 "$vip" 2>&1 || true)
  awk -v vip="$vip" '
    /bytes from/ { n++; match($0, /icmp_seq=[0-9]+/); q = substr($0, RSTART + 9, RLENGTH - 9) + 0
                   match($0, /time=[0-9.]+/); t = substr($0, RSTART + 5, RLENGTH - 5) + 0
                   if (q == 1) first = t; else { sum += t; k++ } }
    END { printf "%d %s %s %s\n", n, (first == "" ? "-" : first), (k ? sprintf("%.3f", sum / k) : "-"), vip }' <<<"$out"
}
# summarize FILE LABEL COUNT: lines "src dst received first steady vip" -> one summary line
summarize() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
label, count = sys.argv[2], int(sys.argv[3])
ok = [r for r in rows if int(r[2]) > 0]
first = [float(r[3]) for r in rows if r[3] != "-"]
steady = [float(r[4]) for r in rows if r[4] != "-"]
lost = sum(count - int(r[2]) for r in rows)
mean = lambda v: f"{sum(v) / len(v):.3f} ms" if v else "-"
print(f"{label}: {len(ok)}/{len(rows)} reachable by name, {lost} of {len(rows) * count} pings lost; "
      f"first-packet RTT mean {mean(first)} (DNS-fresh VIP: ARP + session setup), steady mean {mean(steady)}")
for r in rows:
    if int(r[2]) == 0:
        print(f"  UNREACHABLE: {r[0]} -> {r[1]} ({r[5]})")
PY
}

phase "pairs by name (the manifest's $((${#PAIRS[@]})) pairs: resolve b.$ZONE in a, ping the VIP $COUNT times)"
pids=()
for i in "${!PAIRS[@]}"; do
  read -r a b <<<"${PAIRS[$i]}"
  { echo "$a $b $(ping_name "${NS[$a]}" "$b" "$COUNT")"; } >"$WORK/pair.$i" &
  pids+=($!)
done
wait "${pids[@]}" || true
for i in "${!PAIRS[@]}"; do cat "$WORK/pair.$i"; done >"$WORK/pairs.txt"
awk '{ printf "  %-5s -> %-5s via %-14s %d/%d replies, first %s ms, steady %s ms\n", $1, $2, $6, $3, '"$COUNT"', $4, $5 }' "$WORK/pairs.txt"
summarize "$WORK/pairs.txt" pairs "$COUNT" | tee "$WORK/pairs.sum"
awk -v c="$COUNT" '$3 == 0 { bad = 1 } END { exit bad }' "$WORK/pairs.txt" || rc=1

# Every ordered pair over TCP (two fresh connections each: resolve, connect, echo, close): every
# connection is a new session set up through the controller, so this also times session setup.
phase "every ordered host pair by name ($((NHOSTS * (NHOSTS - 1))) pairs: 2 TCP connections each to peer.$ZONE:$SVC_PORT, all sources at once)"
pids=()
mkdir -p "$WORK/all"
for s in "${HNAMES[@]}"; do
  (for d in "${HNAMES[@]}"; do
     [[ $d == "$s" ]] && continue
     ip netns exec "${NS[$s]}" "$SESSION" churn "$d.$ZONE" "$SVC_PORT" --count 2 --spacing-ms 50 --timeout-ms 3000 \
       --json "$WORK/all/$s-$d.json" >/dev/null 2>&1 || true
   done) &
  pids+=($!)
done
wait "${pids[@]}" || true
python3 - "$WORK/all" "$((NHOSTS * (NHOSTS - 1)))" >"$WORK/all.sum" <<'PY' || rc=1
import glob, json, os, sys
want = int(sys.argv[2])
ok_pairs, conns, ok, setup, bad = 0, 0, 0, [], []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    j = json.load(open(f))
    pair = os.path.basename(f)[:-5].replace("-", " -> ")
    conns += j["count"]; ok += j["succeeded"]
    ok_pairs += j["succeeded"] == j["count"]
    setup += [x["setup_ms"] for x in j["samples"] if x.get("setup_ms") is not None]
    if j["succeeded"] != j["count"]:
        bad.append(f"{pair} ({', '.join(f'{k} {v}' for k, v in j['outcomes'].items())})")
setup.sort()
q = lambda p: f"{setup[min(len(setup) - 1, int(p * len(setup)))]:.2f}" if setup else "-"
print(f"every pair: {ok_pairs}/{want} pairs reachable by name over TCP, {ok}/{conns} connections ok; "
      f"TCP setup p50 {q(.5)} ms, p99 {q(.99)} ms, max {setup[-1] if setup else float('nan'):.2f} ms")
for b in bad:
    print(f"  UNREACHABLE: {b}")
sys.exit(0 if ok_pairs == want and ok == conns else 1)
PY
cat "$WORK/all.sum"

read -r RA RB <<<"${PAIRS[0]}"
phase "real addresses are blocked ($RA -> $RB at its real address ${RIP[$RB]})"
if ip netns exec "${NS[$RA]}" ping -n -c 2 -i 0.2 -W 1 "${RIP[$RB]}" >"$WORK/real.txt" 2>&1; then
  warn "demo: $RA reached $RB at its REAL address ${RIP[$RB]}: CPAM does not block it"
  REAL="REACHABLE (CPAM failed to block it)"; rc=1
else
  REAL="blocked ($(grep -oE '[0-9]+ received' "$WORK/real.txt" || echo 'no reply'))"
fi
echo "$RA -> ${RIP[$RB]} (real address of $RB): $REAL"
IPV6_RESULT="off in the hosts (--no-ipv6)"
if ((IPV6)); then
  LL=$(python3 -c 'import json,sys; print([h for h in json.load(open(sys.argv[1]))["hosts"] if h["name"] == sys.argv[2]][0]["ipv6_ll"].split("/")[0])' "$MANIFEST" "$RB")
  phase "IPv6 is closed ($RA -> $RB at its fixed link-local address $LL, and all-nodes multicast)"
  if ip netns exec "${NS[$RA]}" ping -6 -n -c 2 -i 0.2 -W 1 "$LL%eth0" >"$WORK/ipv6.txt" 2>&1; then
    warn "demo: $RA reached $RB at its IPv6 link-local address $LL"
    IPV6_RESULT="REACHABLE (the guard failed to block it)"; rc=1
  else
    IPV6_RESULT="blocked ($(grep -oE '[0-9]+ received' "$WORK/ipv6.txt" || echo 'no reply'))"
  fi
  echo "$RA -> $LL%eth0 (link-local of $RB): $IPV6_RESULT"
fi

# ---- sessions across rotations
HOLD_S=$(((INTERVAL_MS * 7 / 2 + 999) / 1000 + 1))   # >= 3 rotation instants in any window this long
DIRS=()   # directed (client server) pairs: the manifest's pairs forward, then backward
for p in "${PAIRS[@]}"; do DIRS+=("$p"); done
for p in "${PAIRS[@]}"; do read -r a b <<<"$p"; DIRS+=("$b $a"); done
read -r HC HS <<<"${DIRS[0]}"
read -r UC US <<<"${DIRS[1]}"
NCH=$((${#DIRS[@]} - 2)); ((NCH < CLIENTS)) || NCH=$CLIENTS
CHURN_COUNT=$(awk -v r="$RATE" -v s="$HOLD_S" 'BEGIN { printf "%d", r * s }')
phase "sessions across rotations (${HOLD_S} s): TCP hold $HC -> $HS, UDP 20 pps $UC -> $US, $NCH churn clients x $CHURN_COUNT connections (Poisson, $RATE/s each)"
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
HZ=$(getconf CLK_TCK)
OVS_PID=$(cat /var/run/openvswitch/ovs-vswitchd.pid 2>/dev/null || echo "")
c0=$(cpu_ticks "$CTRL_PID"); o0=$([[ -n $OVS_PID ]] && cpu_ticks "$OVS_PID" || echo 0); w0=$(now_ms)
ep0=$(grep -cE 'cpam: epoch [0-9]+ published' "$WORK/sdnator.log" || true)
ip netns exec "${NS[$HC]}" "$SESSION" hold "$HS.$ZONE" "$SVC_PORT" --duration "$HOLD_S" --interval-ms 100 \
  --max-stall-ms 1000 --json "$WORK/hold.json" >"$WORK/hold.log" 2>&1 &
HOLD=$!; BG_PIDS+=($HOLD)
ip netns exec "${NS[$UC]}" "$SESSION" udp "$US.$ZONE" "$SVC_PORT" --duration "$HOLD_S" --pps 20 --max-loss 1 \
  --json "$WORK/udp.json" >"$WORK/udp.log" 2>&1 &
UDP=$!; BG_PIDS+=($UDP)
CHURN=()
for ((k = 0; k < NCH; k++)); do
  read -r c s <<<"${DIRS[$((k + 2))]}"
  ip netns exec "${NS[$c]}" "$SESSION" churn "$s.$ZONE" "$SVC_PORT" --count "$CHURN_COUNT" --rate "$RATE" \
    --timeout-ms 3000 --seed $((k + 1)) --json "$WORK/churn.$k.json" >"$WORK/churn.$k.log" 2>&1 &
  CHURN+=($!); BG_PIDS+=($!)
done
HOLD_OK=1 UDP_OK=1 CHURN_OK=1
wait "$HOLD" || HOLD_OK=0
wait "$UDP" || UDP_OK=0
for p in "${CHURN[@]}"; do wait "$p" || CHURN_OK=0; done
c1=$(cpu_ticks "$CTRL_PID"); o1=$([[ -n $OVS_PID ]] && cpu_ticks "$OVS_PID" || echo 0); w1=$(now_ms)
sleep 0.5
ep1=$(grep -cE 'cpam: epoch [0-9]+ published' "$WORK/sdnator.log" || true)
echo "hold:  $(cat "$WORK/hold.log")"
echo "udp:   $(cat "$WORK/udp.log")"
for ((k = 0; k < NCH; k++)); do echo "churn: $(tail -n 1 "$WORK/churn.$k.log")"; done
((HOLD_OK)) || { warn "demo: the long-lived TCP session broke"; rc=1; }
((UDP_OK)) || { warn "demo: UDP lost more than 1 %"; rc=1; }
((CHURN_OK)) || { warn "demo: some churn connections failed"; rc=1; }
CPU_RUN=$(awk -v c=$((c1 - c0)) -v hz="$HZ" -v ms=$((w1 - w0)) 'BEGIN { printf "%.1f", 100 * c / hz / (ms / 1000) }')
OVS_CPU_RUN=$(awk -v c=$((o1 - o0)) -v hz="$HZ" -v ms=$((w1 - w0)) 'BEGIN { printf "%.1f", 100 * c / hz / (ms / 1000) }')
ROTATIONS=$((ep1 - ep0))

phase "flows installed per switch (ovs-ofctl -O OpenFlow13 dump-flows)"
for ((i = 1; i <= NSW; i++)); do
  sw="${PREFIX}s$i"
  ovs-ofctl -O OpenFlow13 --no-stats dump-flows "$sw" | grep 'actions=' | python3 -c '
import re, sys
sw = sys.argv[1]
flows = [l.strip() for l in sys.stdin]
kinds = {"table-miss": 0, "cpam VIP rules": 0, "cpam session": 0, "forwarding": 0, "other": 0}
for l in flows:
    m = re.search(r"cookie=0x([0-9a-f]+)", l)
    c = int(m.group(1), 16) if m else 0
    if re.search(r"(^| )priority=0 actions=", l):
        kinds["table-miss"] += 1
    elif c >> 56 == 2:
        kinds["cpam VIP rules" if (c >> 52) & 0xf == 1 else "cpam session"] += 1
    elif c >> 56 == 1:
        kinds["forwarding"] += 1
    else:
        kinds["other"] += 1
print(f"{sw}: {len(flows)} flows (" + ", ".join(f"{v} {k}" for k, v in kinds.items()) + "); first 3:")
for l in [l for l in flows if not re.search(r"(^| )priority=0 actions=", l)][:3]:
    print("    " + l)
' "$sw" || true
done
echo "(full tables: ovs-ofctl -O OpenFlow13 dump-flows <switch> while the demo runs)"

phase "the northbound API: sdnator ctl against $API_URL"
for cmd in "switches" "cpam status" "cpam rotations --limit 5"; do
  echo "+ sdnator ctl $cmd"
  # shellcheck disable=SC2086  # the subcommand words split on purpose
  "$SDNATOR" ctl --url "$API_URL" $cmd || warn "sdnator ctl $cmd failed"
done

phase "controller counters (stats file)"
sleep 1.1   # the stats file is rewritten every second: read one written after the sessions
python3 scripts/lib/stats.py summary "$STATS" || warn "could not read $STATS"
read -r RSS_KB HWM_KB < <(awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 } END { print r, h }' "/proc/$CTRL_PID/status" 2>/dev/null || echo "? ?")
CPU_TOTAL=$(awk -v c="$(cpu_ticks "$CTRL_PID")" -v hz="$HZ" 'BEGIN { printf "%.2f", c / hz }')

phase "summary"
kill "$FOLLOW_PID" 2>/dev/null; wait "$FOLLOW_PID" 2>/dev/null || true; FOLLOW_PID=""
cat "$WORK/pairs.sum" "$WORK/all.sum"
echo "real address of $RB (${RIP[$RB]}) from $RA: $REAL"
echo "IPv6 link-local of $RB from $RA: $IPV6_RESULT"
python3 - "$STATS" <<'PY' || true
import json, sys
g = json.load(open(sys.argv[1]))["apps"]["cpam"].get("guard", {})
v6 = f"blocked ({g.get('ipv6_dropped', 0)} packets dropped)" if g.get("ipv6") == "block" else g.get("ipv6", "?")
print(f"ipv6: {v6}; real addresses: {g.get('real_dropped', 0)} packets dropped at the switches "
      f"({g.get('real_blocks', 0)} blocks); source guard: {g.get('spoofed_src', 0)} frames dropped, "
      f"{g.get('spoof_dropped', 0)} more on the switches' drop rules")
PY
python3 - "$STATS" "$WORK/rppt.csv" "$WORK/hold.json" "$WORK/udp.json" "$WORK"/churn.*.json <<'PY' || rc=1
import csv, json, sys
stats, samples, holdf, udpf, churns = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
s = json.load(open(stats))
h = s["metrics"]["histograms"]
c = s["apps"]["cpam"]
# p95 is not in the stats file's histograms: it comes from the controller's RPPT samples (exact).
try:
    rows = list(csv.DictReader(open(samples)))
except OSError:
    rows = []
def p95(pred):
    v = sorted(int(r["rppt_ns"]) for r in rows if pred(r))
    return f"{v[min(len(v) - 1, int(0.95 * len(v)))] / 1e6:8.3f}" if v else "       -"
print(f"RPPT (PacketIn read -> last FlowMod/PacketOut queued), ms; controller histograms from the stats file, p95 from its samples:")
print(f"  {'':<16} {'count':>7} {'p50':>8} {'p90':>8} {'p95':>8} {'p99':>8} {'max':>8}")
for name, label, pred in (("cpam.rppt", "overall", lambda r: True),
                          ("cpam.rppt_rotating", "during rotation", lambda r: r["rotating"] == "1"),
                          ("cpam.rppt_quiet", "quiet", lambda r: r["rotating"] == "0")):
    x = h.get(name, {})
    f = lambda k: f"{x.get(k, 0) / 1000:8.3f}" if x.get("count") else "       -"
    print(f"  {label:<16} {x.get('count', 0):>7} {f('p50_us')} {f('p90_us')} {p95(pred)} {f('p99_us')} {f('max_us')}")
if s.get("shards") == 1 and h.get("cpam.rppt_rotating", {}).get("count", 0) == 0:
    print("  (cooperative: PacketIns (DNS queries, SYNs) that arrive during a rotation wait unread until the rotation\n"
          "   loop is done; RPPT starts when a PacketIn is read, so the wait shows in the connection times below)")
sc = h.get("cpam.setup_confirmed", {})
if sc.get("count"):
    print(f"  (setup confirmed by the switches' barrier replies: p50 {sc['p50_us'] / 1000:.3f}, p99 {sc['p99_us'] / 1000:.3f}, max {sc['max_us'] / 1000:.3f} ms)")
print(f"sessions: {c.get('sessions_bound', 0)} bound, {c.get('setups', 0)} setups, {c.get('repairs', 0)} repairs; controller setup failures "
      f"{c.get('setup_failed', 0)} ("
      + ", ".join(f"{label} {c[k]}" for k, label in (("pin_conflicts", "pin conflicts"), ("unlocated", "unlocated"),
                                                      ("no_path", "no path"), ("stale_vip", "stale VIP"),
                                                      ("sessions_full", "sessions full")) if k in c)
      + f"); DNS answered {c.get('dns_answered', 0)}, real-address packets blocked {c.get('real_blocked', 0)}")
total = ok = 0
outcomes = {}
setup, conn = [], []
for f in churns:
    j = json.load(open(f))
    total += j["count"]; ok += j["succeeded"]
    for k, v in j["outcomes"].items():
        if k != "ok":
            outcomes[k] = outcomes.get(k, 0) + v
    setup += [x["setup_ms"] for x in j.get("samples", []) if x.get("setup_ms") is not None and x["outcome"] == "ok"]
    conn += [x["total_ms"] for x in j.get("samples", []) if x.get("total_ms") is not None and x["outcome"] == "ok"]
def q3(v):
    v = sorted(v)
    q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
    return f"p50 {q(.5):.2f} ms, p99 {q(.99):.2f} ms, max {v[-1]:.2f} ms" if v else "-"
print(f"churn: {ok}/{total} connections ok across the rotations, failures {outcomes or 'none'}")
print(f"  TCP setup (SYN -> connected) {q3(setup)}; connection (resolve + connect + echo) {q3(conn)}")
hj = json.load(open(holdf))
why = f"{hj['error']}: {hj.get('detail')}" if hj.get("error") else f"max gap over {hj.get('max_stall_ms')} ms"
print(f"session continuity: hold {'ok' if hj['ok'] else 'BROKEN (' + why + ')'}, "
      f"{hj['duration_s']:.1f} s, {hj['echoes']}/{hj['sent']} echoes, max gap {hj['max_gap_ms']:.1f} ms, VIP {hj.get('resolved')}")
u = json.load(open(udpf))
print(f"udp: {u['echoed']}/{u['sent']} echoed, loss {u['loss_pct']:.2f} % (limit 1 %), out of order {u['out_of_order']}, "
      f"jitter {u['jitter_ms']:.3f} ms")
PY
echo "rotations during the sessions: $ROTATIONS (interval $(fmt_ms "$INTERVAL_MS"), runtime $RUNTIME, batch $BATCH every $BATCH_DELAY_MS ms)"
echo "controller (pid $CTRL_PID): CPU $CPU_RUN % of one core during the sessions (utime+stime from /proc/$CTRL_PID/stat), $CPU_TOTAL s in total; RSS $RSS_KB kB now, peak (VmHWM) $HWM_KB kB"
[[ -n $OVS_PID ]] && echo "(for comparison, ovs-vswitchd: $OVS_CPU_RUN % of one core during the sessions)"
echo "fabric up in $(fmt_ms "$T_UP"); demo total $(fmt_ms $(($(now_ms) - T_START))) before teardown"
((ROTATIONS >= 3)) || { warn "demo: only $ROTATIONS rotations during the sessions (want >= 3)"; rc=1; }
if ((KEEP_S > 0)); then
  log "demo: keeping the fabric and controller up for $KEEP_S s: open $API_URL/ (Ctrl-C ends it)"
  sleep "$KEEP_S"
fi
if ((rc == 0)); then
  echo "RESULT: every pair reachable by name, real addresses blocked, sessions survived $ROTATIONS rotations"
else
  echo "RESULT: FAILED (see the warnings above)"
fi
exit $rc
