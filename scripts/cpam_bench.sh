#!/usr/bin/env bash
# The CPAM figures of the closing note, on real Open vSwitch: for each runtime mode (sharded,
# cooperative), build a campus fabric with scripts/testbed.sh (hosts resolve through the
# controller's in-band DNS), run sdnator with topology + cpam + forwarding rotating every
# --interval-ms, teach it every host's location (one DNS query per host), then for --duration
# seconds run a churn workload (N client hosts, each opening fresh TCP connections by name to its
# own server at --rate per second, Poisson arrivals) plus one long-lived TCP `hold` session, and
# record:
#   - RPPT (PacketIn read -> last FlowMod/PacketOut of the event queued), exact nearest-rank
#     p50/p90/p95/p99/max from the controller's per-sample CSV ([cpam] rppt_samples), overall,
#     during rotation (rotating = 1: a rotation was pre-installing) and quiet;
#   - setup-time failures (churn outcomes; the controller's setup_failed, and pin_conflicts where
#     it still reports them);
#     client-side TCP setup time (SYN -> connected) p50/p99/max;
#   - session continuity (hold ok, echoes, max gap between echoes);
#   - controller CPU (utime+stime delta over the run / wall time, % of one core) and RSS
#     (VmRSS sampled every 0.5 s: peak during the run and final; VmHWM), threads, shards;
#   - rotations published during the run (and how long each took), connections/s achieved.
# Prints a table; --json writes everything. Exit status 0 once every mode was measured (the
# figures say whether sessions broke), 1 if a run could not be set up.
#
# usage: scripts/cpam_bench.sh [--modes sharded,cooperative] [--hosts N] [--cores C --aggs A --edges E]
#                              [--single-homed] [--interval-ms MS] [--batch B] [--batch-delay-ms MS]
#                              [--duration S] [--clients N] [--rate R] [--shards N] [--json FILE]
#                              [--keep] [--no-setup]
#   defaults: both modes; 16 hosts on 1 core, 2 aggregation, 4 dual-homed edges (the demo's campus);
#   --hosts above 16 defaults to the paper's campus (1 core, 6 aggregation, 12 edges, dual-homed);
#   rotation every 10000 ms in batches of 20 hosts 150 ms apart; 60 s; 4 clients x 5 conn/s.
#   --keep keeps every run's work dir (a run with failures keeps it anyway).
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$SDN_ROOT"

MODES=sharded,cooperative HOSTS=16 CORES="" AGGS="" EDGES="" DUAL=1 INTERVAL_MS=10000 BATCH=20
BATCH_DELAY_MS=150 DURATION=60 CLIENTS=4 RATE=5 SHARDS="" JSON_OUT="" KEEP=0 SETUP=1
ARGS_TEXT="$*"
while (($#)); do
  case $1 in
    --modes) MODES=$2; shift 2 ;;
    --hosts) HOSTS=$2; shift 2 ;;
    --cores) CORES=$2; shift 2 ;;
    --aggs) AGGS=$2; shift 2 ;;
    --edges) EDGES=$2; shift 2 ;;
    --single-homed) DUAL=0; shift ;;
    --interval-ms) INTERVAL_MS=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --batch-delay-ms) BATCH_DELAY_MS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --shards) SHARDS=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --no-setup) SETUP=0; shift ;;
    -h|--help) sed -n '2,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
IFS=, read -r -a MODE_LIST <<<"$MODES"
for m in "${MODE_LIST[@]}"; do [[ $m == sharded || $m == cooperative ]] || die "--modes: sharded and/or cooperative, not '$m'"; done
for v in HOSTS INTERVAL_MS BATCH BATCH_DELAY_MS DURATION CLIENTS; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "--${v,,}: a non-negative integer"
done
((INTERVAL_MS >= 1000 && DURATION >= 5 && CLIENTS >= 1 && HOSTS >= 4)) \
  || die "need --interval-ms >= 1000, --duration >= 5, --clients >= 1, --hosts >= 4"
if ((HOSTS <= 16)); then : "${CORES:=1}" "${AGGS:=2}" "${EDGES:=4}"; else : "${CORES:=1}" "${AGGS:=6}" "${EDGES:=12}"; fi
need_root "cpam_bench.sh"
((SETUP)) && bash scripts/setup.sh
SDNATOR=${SDNATOR:-$SDN_ROOT/build/bin/sdnator}
SESSION=${SDNATOR_SESSION:-$(dirname "$SDNATOR")/sdnator-session}
[[ -x $SDNATOR ]] || die "$SDNATOR not built (scripts/setup.sh)"
[[ -x $SESSION ]] || die "$SESSION not built (scripts/setup.sh)"
need_cmds ip ovs-vsctl ovs-ofctl ss python3
bash scripts/ovs.sh start >/dev/null

DNS_IP=10.0.255.253 ZONE=cpam.lan SVC_PORT=5000
TOP=$(mktemp -d /tmp/sdnator-cpam-bench.XXXXXX)
HZ=$(getconf CLK_TCK)
# Per-run state, reset by run_mode; cleanup tears down exactly what the current run created.
PREFIX="" PORT="" WORK="" CTRL_PID="" TB=() BG_PIDS=() SAMPLER_PID=""
RUN_FAILED=0 KEPT=()

run_cleanup() {
  local p opts=$-
  set +e
  [[ -n $SAMPLER_PID ]] && kill "$SAMPLER_PID" 2>/dev/null
  for p in "${BG_PIDS[@]+"${BG_PIDS[@]}"}"; do kill "$p" 2>/dev/null; done
  for p in "${BG_PIDS[@]+"${BG_PIDS[@]}"}"; do wait "$p" 2>/dev/null; done
  if [[ -n $CTRL_PID ]] && kill -0 "$CTRL_PID" 2>/dev/null; then
    kill -TERM "$CTRL_PID"
    for _ in $(seq 1 100); do kill -0 "$CTRL_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$CTRL_PID" 2>/dev/null
    wait "$CTRL_PID" 2>/dev/null
  fi
  ((${#TB[@]})) && "${TB[@]}" down >/dev/null 2>&1
  SAMPLER_PID="" BG_PIDS=() CTRL_PID="" TB=()
  [[ $opts == *e* ]] && set -e
  return 0
}
cleanup() {
  local rc=$?
  set +e
  run_cleanup
  if ((rc != 0)); then
    [[ -n $WORK && -f $WORK/sdnator.log ]] && { echo "---- last 20 lines of $WORK/sdnator.log ----" >&2; tail -n 20 "$WORK/sdnator.log" >&2; }
    echo "(work dir kept: $TOP)" >&2
  elif ((KEEP)) || ((${#KEPT[@]})); then
    # only the runs asked for (or with failures) are kept
    for d in "$TOP"/*/; do
      local keep=0 k
      for k in "${KEPT[@]+"${KEPT[@]}"}"; do [[ ${d%/} == "$k" ]] && keep=1; done
      ((KEEP || keep)) || rm -rf "$d"
    done
    log "cpam_bench: work dirs kept under $TOP"
  else
    rm -rf "$TOP"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
stat_get() { python3 scripts/lib/stats.py get "$1" "$2" 2>/dev/null || echo ""; }
mono_ns() { python3 -c 'import time; print(time.monotonic_ns())'; }   # the controller's steady clock
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# run_mode MODE: one complete measurement; leaves $TOP/MODE/result.json
run_mode() {
  local mode=$1 i
  RUN_FAILED=0
  WORK="$TOP/$mode"
  mkdir -p "$WORK"
  # A unique prefix (at most 6 characters, so interface names stay within 15) and a free port.
  for i in $(seq 1 50); do
    PREFIX=$(printf 'b%04x-' $((RANDOM % 65536)))
    [[ ! -e /run/sdnator-testbed/$PREFIX && ! -e /run/netns/${PREFIX}h1 ]] \
      && ! ovs-vsctl --timeout=5 br-exists "${PREFIX}s1" 2>/dev/null && break
  done
  PORT=$(free_port) || die "no free port"
  TB=(bash scripts/testbed.sh --prefix "$PREFIX" --port "$PORT" --resolver "$DNS_IP")
  local shape=(up campus "$HOSTS" --cores "$CORES" --aggs "$AGGS" --edges "$EDGES")
  ((DUAL)) && shape+=(--dual-homed)
  log "cpam_bench[$mode]: testbed $PREFIX: ${shape[*]:1}, controller port $PORT, work dir $WORK"
  local t0; t0=$(now_ms)
  "${TB[@]}" "${shape[@]}" >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log" >&2; die "testbed up failed"; }
  local build_ms=$(($(now_ms) - t0))
  local manifest=/run/sdnator-testbed/$PREFIX/manifest.json
  cp "$manifest" "$WORK/manifest.json"
  local nsw nlinks npairs
  read -r nsw nlinks npairs < <(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(len(m["switches"]), m["expected_links"], len(m["pairs"]))' "$manifest")
  python3 -c 'import json,sys; [print(h["name"], h["ip"]) for h in json.load(open(sys.argv[1]))["hosts"]]' "$manifest" >"$WORK/hosts.txt"
  cat >"$WORK/sdnator.toml" <<EOF
[controller]
apps = ["topology", "cpam", "forwarding"]
[sqlite]
path = "$WORK/archive.db"
[cpam]
runtime = "$mode"
rotation_interval_ms = $INTERVAL_MS
rotation_batch = $BATCH
batch_delay_ms = $BATCH_DELAY_MS
zone = "$ZONE"
dns_ip = "$DNS_IP"
hosts_file = "$WORK/hosts.txt"
rppt_samples = "$WORK/rppt.csv"
EOF
  local stats="$WORK/stats.json"
  local args=(run -c "$WORK/sdnator.toml" --listen "127.0.0.1:$PORT" --stats-file "$stats" --log-level info
              --archive-path "$WORK/archive.db")
  [[ -z $SHARDS ]] || args+=(--shards "$SHARDS")
  "$SDNATOR" "${args[@]}" >"$WORK/sdnator.log" 2>&1 &
  CTRL_PID=$!
  t0=$(now_ms)
  until [[ -n $(ss -Hltn "( sport = :$PORT )") ]]; do
    kill -0 "$CTRL_PID" 2>/dev/null || die "sdnator exited at start-up (see $WORK/sdnator.log)"
    (($(now_ms) - t0 < 10000)) || die "sdnator not listening after 10 s"
    sleep 0.05
  done
  "${TB[@]}" wait-connected 60 >/dev/null || die "switches did not connect"
  t0=$(now_ms)
  while :; do
    local links pending nsw_seen
    links=$(stat_get "$stats" apps.topology.links) pending=$(stat_get "$stats" apps.topology.pending_ports)
    nsw_seen=$(stat_get "$stats" apps.topology.switches)
    [[ $nsw_seen == "$nsw" && $links == "$nlinks" && $pending == 0 ]] && break
    (($(now_ms) - t0 < 120000)) || die "discovery incomplete after 120 s: $nsw_seen/$nsw switches, $links/$nlinks links, $pending pending"
    sleep 0.2
  done
  log "cpam_bench[$mode]: $nsw switches and $nlinks links discovered; $(grep -oE 'with [0-9]+ shard\(s\)' "$WORK/sdnator.log" || true)"

  # Who talks to whom: manifest pair 1 holds, pairs 2..N+1 churn (each client its own server).
  mapfile -t pairs < <(python3 -c 'import json,sys
m=json.load(open(sys.argv[1])); ns={h["name"]: h["netns"] for h in m["hosts"]}
[print(p["a"], ns[p["a"]], p["b"], ns[p["b"]]) for p in m["pairs"]]' "$manifest")
  local nclients=$CLIENTS
  ((nclients <= npairs - 1)) || nclients=$((npairs - 1))
  local hc hcns hs hsns
  read -r hc hcns hs hsns <<<"${pairs[0]}"
  local servers=("$hsns") c cns s sns
  for ((i = 1; i <= nclients; i++)); do read -r c cns s sns <<<"${pairs[$i]}"; servers+=("$sns"); done
  for sns in "${servers[@]}"; do
    ip netns exec "$sns" "$SESSION" serve --tcp "$SVC_PORT" >"$WORK/serve.$sns.log" 2>&1 &
    BG_PIDS+=($!)
  done
  # Every host's first DNS query teaches the controller where it is (so every host's next VIP
  # rule is pre-installed at each rotation, as in a campus where every host is active), 50 at once.
  local all_ns pids=() bad=0
  mapfile -t all_ns < <(python3 -c 'import json,sys; [print(h["netns"]) for h in json.load(open(sys.argv[1]))["hosts"]]' "$manifest")
  t0=$(now_ms)
  for ((i = 0; i < ${#all_ns[@]}; i++)); do
    ip netns exec "${all_ns[$i]}" "$SESSION" resolve "$hs.$ZONE" --count 1 >/dev/null 2>&1 &
    pids+=($!)
    if ((${#pids[@]} >= 50)); then
      for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
      pids=()
    fi
  done
  for p in "${pids[@]+"${pids[@]}"}"; do wait "$p" || bad=$((bad + 1)); done
  local located
  sleep 1.2
  located=$(stat_get "$stats" apps.topology.hosts)
  log "cpam_bench[$mode]: ${#all_ns[@]} hosts asked the DNS responder ($bad failed), topology knows $located hosts ($(fmt_ms $(($(now_ms) - t0))))"
  # Wait for the next rotation to be published, so the run starts right after one, in every mode.
  local ep0; ep0=$(grep -cE 'cpam: epoch [0-9]+ published' "$WORK/sdnator.log" || true)
  t0=$(now_ms)
  until (($(grep -cE 'cpam: epoch [0-9]+ published' "$WORK/sdnator.log" || true) > ep0)); do
    (($(now_ms) - t0 < 2 * INTERVAL_MS + 5000)) || die "no rotation published within $((2 * INTERVAL_MS / 1000 + 5)) s"
    sleep 0.1
  done
  sleep 0.5

  # ---- the measured run
  local count_per_client; count_per_client=$(awk -v r="$RATE" -v d="$DURATION" 'BEGIN { printf "%d", r * d + 0.5 }')
  local ovs_pid; ovs_pid=$(cat /var/run/openvswitch/ovs-vswitchd.pid 2>/dev/null || echo "")
  cp "$stats" "$WORK/stats.before.json"
  python3 - "$CTRL_PID" "$WORK/rss.txt" <<'PY' &
import sys, time
pid, out = sys.argv[1], sys.argv[2]
with open(out, "w") as f:
    while True:
        try:
            st = open(f"/proc/{pid}/status").read()
        except OSError:
            break
        kv = dict(l.split(":", 1) for l in st.splitlines() if ":" in l)
        f.write(f"{time.time():.3f} {kv['VmRSS'].split()[0]} {kv['VmHWM'].split()[0]} {kv['Threads'].strip()}\n")
        f.flush()
        time.sleep(0.5)
PY
  SAMPLER_PID=$!
  local m0 m1 c0 c1 o0 o1 w0 w1 wc
  m0=$(mono_ns); c0=$(cpu_ticks "$CTRL_PID"); o0=$([[ -n $ovs_pid ]] && cpu_ticks "$ovs_pid" || echo 0); w0=$(now_ms)
  ip netns exec "$hcns" "$SESSION" hold "$hs.$ZONE" "$SVC_PORT" --duration "$DURATION" --interval-ms 100 \
    --max-stall-ms 1000 --json "$WORK/hold.json" >"$WORK/hold.log" 2>&1 &
  local hold_pid=$!; BG_PIDS+=($hold_pid)
  local churn_pids=()
  for ((i = 1; i <= nclients; i++)); do
    read -r c cns s sns <<<"${pairs[$i]}"
    ip netns exec "$cns" "$SESSION" churn "$s.$ZONE" "$SVC_PORT" --count "$count_per_client" --rate "$RATE" \
      --timeout-ms 3000 --seed "$i" --json "$WORK/churn.$i.json" >"$WORK/churn.$i.log" 2>&1 &
    churn_pids+=($!); BG_PIDS+=($!)
  done
  local hold_rc=0 churn_rc=0
  for p in "${churn_pids[@]}"; do wait "$p" || churn_rc=1; done
  wc=$(now_ms)
  wait "$hold_pid" || hold_rc=1
  if ! kill -0 "$CTRL_PID" 2>/dev/null; then
    local st=0; wait "$CTRL_PID" || st=$?
    CTRL_PID=""
    die "sdnator died during the run (exit status $st$( ((st > 128)) && echo ", signal $((st - 128))")); see $WORK/sdnator.log"
  fi
  m1=$(mono_ns); c1=$(cpu_ticks "$CTRL_PID"); o1=$([[ -n $ovs_pid ]] && cpu_ticks "$ovs_pid" || echo 0); w1=$(now_ms)
  kill "$SAMPLER_PID" 2>/dev/null; wait "$SAMPLER_PID" 2>/dev/null || true; SAMPLER_PID=""
  local rss_final hwm threads
  read -r rss_final hwm threads < <(awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 } /^Threads:/ { t = $2 } END { print r, h, t }' "/proc/$CTRL_PID/status")
  sleep 1.2   # one more stats write after the run
  cp "$stats" "$WORK/stats.after.json"
  # SIGTERM flushes the RPPT samples; the controller must exit cleanly.
  kill -TERM "$CTRL_PID"
  local crc=0
  for _ in $(seq 1 100); do kill -0 "$CTRL_PID" 2>/dev/null || break; sleep 0.1; done
  wait "$CTRL_PID" || crc=$?
  CTRL_PID=""
  t0=$(now_ms)
  run_cleanup
  local teardown_ms=$(($(now_ms) - t0))

  python3 - "$WORK" "$mode" "$m0" "$m1" "$w0" "$w1" "$wc" "$c0" "$c1" "$o0" "$o1" "$HZ" "$rss_final" "$hwm" \
    "$threads" "$hold_rc" "$churn_rc" "$crc" "$nclients" "$count_per_client" "$build_ms" "$nsw" "$nlinks" \
    "${located:-0}" >"$WORK/result.json" <<'PY'
import csv, datetime, glob, json, math, os, re, sys
(work, mode, m0, m1, w0, w1, wc, c0, c1, o0, o1, hz, rss_final, hwm, threads, hold_rc, churn_rc, crc,
 nclients, per_client, build_ms, nsw, nlinks, located) = sys.argv[1:]
m0, m1, w0, w1, wc = int(m0), int(m1), int(w0), int(w1), int(wc)
hz = int(hz)
wall_s = (w1 - w0) / 1000
def pct(v, p):  # nearest rank
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)] if v else None
def summary_ms(ns):
    v = sorted(ns)
    r = {"n": len(v)}
    for p in (50, 90, 95, 99):
        x = pct(v, p)
        r[f"p{p}_ms"] = None if x is None else round(x / 1e6, 4)
    r["max_ms"] = round(v[-1] / 1e6, 4) if v else None
    r["mean_ms"] = round(sum(v) / len(v) / 1e6, 4) if v else None
    return r
rows = []
with open(os.path.join(work, "rppt.csv")) as f:
    for r in csv.DictReader(f):
        if m0 <= int(r["rx_ns"]) <= m1:
            rows.append(r)
kinds = {}
for r in rows:
    kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
rppt = {"overall": summary_ms([int(r["rppt_ns"]) for r in rows]),
        "rotating": summary_ms([int(r["rppt_ns"]) for r in rows if r["rotating"] == "1"]),
        "quiet": summary_ms([int(r["rppt_ns"]) for r in rows if r["rotating"] == "0"]),
        "kinds": kinds,
        "by_shard": {s: sum(1 for r in rows if r["shard"] == s) for s in sorted({r["shard"] for r in rows})}}
# churn
tot = ok = 0
outcomes, setup = {}, []
starts, ends = [], []
for f in sorted(glob.glob(os.path.join(work, "churn.*.json"))):
    j = json.load(open(f))
    tot += j["count"]; ok += j["succeeded"]
    for k, v in j["outcomes"].items():
        outcomes[k] = outcomes.get(k, 0) + v
    setup += [x["setup_ms"] for x in j["samples"] if x.get("setup_ms") is not None and x["outcome"] == "ok"]
setup.sort()
churn_s = (wc - w0) / 1000
churn = {"clients": int(nclients), "per_client": int(per_client), "attempted": tot, "ok": ok, "failed": tot - ok,
         "outcomes": outcomes, "elapsed_s": round(churn_s, 2),
         "conn_per_s": round(ok / churn_s, 2) if churn_s > 0 else None,
         "setup_ms": {"n": len(setup), "p50": pct(setup, 50), "p99": pct(setup, 99), "max": setup[-1] if setup else None}}
h = json.load(open(os.path.join(work, "hold.json")))
hold = {k: h.get(k) for k in ("ok", "duration_s", "echoes", "sent", "max_gap_ms", "error", "detail", "resolved")}
hold["rtt_ms"] = h.get("rtt_ms")
# controller counters over the run
def cpam(f):
    try:
        return json.load(open(os.path.join(work, f)))["apps"]["cpam"]
    except (OSError, KeyError, ValueError):
        return {}
b, a = cpam("stats.before.json"), cpam("stats.after.json")
counters = {k: a.get(k, 0) - b.get(k, 0) for k in a if isinstance(a.get(k), int)}
after = json.load(open(os.path.join(work, "stats.after.json")))
# rotations published during the run (controller log, local wall clock)
rot = []
rx = re.compile(r"^(\S+) info .*cpam: epoch (\d+) published: (\d+) hosts rotated in ([\d.]+) ms, (\d+) rules pre-installed \((?:(\d+) failed|sent, unconfirmed)\)")
for l in open(os.path.join(work, "sdnator.log")):
    m = rx.search(l)
    if not m:
        continue
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp() * 1000
    if w0 <= t <= w1:
        rot.append({"epoch": int(m.group(2)), "rotated": int(m.group(3)), "took_ms": float(m.group(4)),
                    "preinstalled": int(m.group(5)), "preinstall_failed": int(m.group(6) or 0)})
# Client-side connection time (resolve + connect + echo, each through the controller when it
# needs a PacketIn: the DNS query, the SYN, a missed reply) split by whether the connection
# started while a rotation was in progress (from publish time - took_ms to publish time): in the
# cooperative mode a PacketIn that arrives then waits unread until the loop is done, which RPPT
# (measured from the read) cannot see.
windows = []
for l in open(os.path.join(work, "sdnator.log")):
    m = rx.search(l)
    if m:
        end = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp() * 1000
        windows.append((end - float(m.group(4)), end))
rot_setup, quiet_setup = [], []
for f in sorted(glob.glob(os.path.join(work, "churn.*.json"))):
    j = json.load(open(f))
    t0 = datetime.datetime.strptime(j["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp() * 1000
    for x in j["samples"]:
        if x.get("total_ms") is None or x.get("start_ms") is None or x["outcome"] != "ok":
            continue
        t = t0 + x["start_ms"]
        (rot_setup if any(a <= t <= b for a, b in windows) else quiet_setup).append(x["total_ms"])
def setup_summary(v):
    v = sorted(v)
    return {"n": len(v), "p50": pct(v, 50), "p99": pct(v, 99), "max": v[-1] if v else None}
churn["total_ms"] = setup_summary(rot_setup + quiet_setup)
churn["total_ms_rotating"] = setup_summary(rot_setup)
churn["total_ms_quiet"] = setup_summary(quiet_setup)
rss = [l.split() for l in open(os.path.join(work, "rss.txt")) if l.strip()]
res = {
    "mode": mode, "shards": after.get("shards"), "wall_s": round(wall_s, 2),
    "fabric": {"switches": int(nsw), "links": int(nlinks), "hosts_located": int(located), "build_ms": int(build_ms)},
    "rppt": rppt, "churn": churn, "hold": hold,
    # (counters the controller does not report are null: pin_conflicts went away with per-direction keys)
    "setup_failures": {"churn_failed": tot - ok, "controller_setup_failed": counters.get("setup_failed"),
                       "pin_conflicts": counters.get("pin_conflicts"), "stale_vip": counters.get("stale_vip"),
                       "unlocated": counters.get("unlocated"), "no_path": counters.get("no_path")},
    "controller": {"cpu_pct": round(100 * (int(c1) - int(c0)) / hz / wall_s, 2),
                   "cpu_s": round((int(c1) - int(c0)) / hz, 2),
                   "rss_peak_run_kb": max(int(x[1]) for x in rss) if rss else None,
                   "rss_final_kb": int(rss_final), "vm_hwm_kb": int(hwm), "threads": int(threads),
                   "exit_status": int(crc)},
    "ovs_vswitchd_cpu_pct": round(100 * (int(o1) - int(o0)) / hz / wall_s, 2),
    "rotations": {"count": len(rot), "took_ms_mean": round(sum(r["took_ms"] for r in rot) / len(rot), 1) if rot else None,
                  "took_ms_max": max((r["took_ms"] for r in rot), default=None),
                  "preinstall_failed": sum(r["preinstall_failed"] for r in rot), "list": rot},
    "counters": counters,
    "ok": hold_rc == "0" and churn_rc == "0" and tot == ok and h.get("ok") is True,
}
print(json.dumps(res, indent=1))
PY
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["ok"] else 1)' "$WORK/result.json" \
    || { KEPT+=("$WORK"); warn "cpam_bench[$mode]: sessions broke or connections failed; keeping $WORK"; }
  log "cpam_bench[$mode]: done (teardown $(fmt_ms "$teardown_ms"))"
}

T0=$(now_ms)
log "cpam_bench: modes ${MODE_LIST[*]}; campus $HOSTS hosts ($CORES core, $AGGS aggregation, $EDGES edges, $([[ $DUAL == 1 ]] && echo dual || echo single)-homed); rotation every $INTERVAL_MS ms in batches of $BATCH, $BATCH_DELAY_MS ms apart; $DURATION s of $CLIENTS clients x $RATE conn/s + 1 hold"
for m in "${MODE_LIST[@]}"; do run_mode "$m"; done

python3 - "$TOP" "$JSON_OUT" "$HOSTS" "$CORES" "$AGGS" "$EDGES" "$DUAL" "$INTERVAL_MS" "$BATCH" "$BATCH_DELAY_MS" \
  "$DURATION" "$CLIENTS" "$RATE" "$ARGS_TEXT" "${MODE_LIST[@]}" <<'PY'
import json, os, platform, subprocess, sys
top, out, hosts, cores, aggs, edges, dual, interval, batch, delay, duration, clients, rate, args = sys.argv[1:15]
modes = sys.argv[15:]
R = {m: json.load(open(os.path.join(top, m, "result.json"))) for m in modes}
def f(x, d=3):
    return "-" if x is None else (f"{x:.{d}f}" if isinstance(x, float) else str(x))
rows = []
for part, label in (("overall", "RPPT overall"), ("rotating", "RPPT during rotation"), ("quiet", "RPPT quiet")):
    rows.append((f"{label}: samples", [f(R[m]["rppt"][part]["n"]) for m in modes]))
    rows.append((f"  p50 / p90 / p95 ms", [" / ".join(f(R[m]["rppt"][part][f"p{p}_ms"]) for p in (50, 90, 95)) for m in modes]))
    rows.append((f"  p99 / max ms", [" / ".join(f(R[m]["rppt"][part][k]) for k in ("p99_ms", "max_ms")) for m in modes]))
rows += [
    ("churn connections ok / attempted", [f"{R[m]['churn']['ok']} / {R[m]['churn']['attempted']}" for m in modes]),
    ("setup failures (outcomes)", [", ".join(f"{k} {v}" for k, v in R[m]["churn"]["outcomes"].items() if k != "ok") or "none" for m in modes]),
    ("controller setup_failed / pin_conflicts", [f"{f(R[m]['setup_failures']['controller_setup_failed'])} / {f(R[m]['setup_failures']['pin_conflicts'])}" for m in modes]),
    ("TCP setup of ok connections p50/p99/max ms", [" / ".join(f(R[m]["churn"]["setup_ms"][k], 2) for k in ("p50", "p99", "max")) for m in modes]),
    ("connection time (resolve+connect+echo) ms:", None),
    ("  all: n, p50 / p99 / max", [f"{R[m]['churn']['total_ms']['n']}, " + " / ".join(f(R[m]["churn"]["total_ms"][k], 2) for k in ("p50", "p99", "max")) for m in modes]),
    ("  started during a rotation", [f"{R[m]['churn']['total_ms_rotating']['n']}, " + " / ".join(f(R[m]["churn"]["total_ms_rotating"][k], 2) for k in ("p50", "p99", "max")) for m in modes]),
    ("  started when quiet", [f"{R[m]['churn']['total_ms_quiet']['n']}, " + " / ".join(f(R[m]["churn"]["total_ms_quiet"][k], 2) for k in ("p50", "p99", "max")) for m in modes]),
    ("connections/s achieved", [f(R[m]["churn"]["conn_per_s"], 1) for m in modes]),
    ("hold session", [("ok" if R[m]["hold"]["ok"] else f"BROKEN ({R[m]['hold']['error']})") + f", max gap {f(R[m]['hold']['max_gap_ms'], 1)} ms" for m in modes]),
    ("rotations (mean / max ms each)", [f"{R[m]['rotations']['count']} ({f(R[m]['rotations']['took_ms_mean'], 1)} / {f(R[m]['rotations']['took_ms_max'], 1)})" for m in modes]),
    ("controller CPU % of one core", [f(R[m]["controller"]["cpu_pct"], 1) for m in modes]),
    ("controller RSS peak / final kB", [f"{R[m]['controller']['rss_peak_run_kb']} / {R[m]['controller']['rss_final_kb']}" for m in modes]),
    ("controller VmHWM kB / threads / shards", [f"{R[m]['controller']['vm_hwm_kb']} / {R[m]['controller']['threads']} / {R[m]['shards']}" for m in modes]),
    ("ovs-vswitchd CPU % (context)", [f(R[m]["ovs_vswitchd_cpu_pct"], 1) for m in modes]),
]
w = max(len(r[0]) for r in rows)
cw = max(24, max(len(c) for r in rows for c in (r[1] or [])) + 2)
fab = f"campus {hosts} hosts ({cores} core, {aggs} aggregation, {edges} edges, {'dual' if dual == '1' else 'single'}-homed)"
print(f"\n== cpam_bench: {fab}; rotation every {interval} ms, batch {batch}, batch delay {delay} ms; "
      f"{duration} s, {clients} churn clients x {rate}/s + 1 hold")
print(f"{'':<{w}}  " + "".join(f"{m:>{cw}}" for m in modes))
for label, cells in rows:
    print(f"{label:<{w}}  " + "".join(f"{c:>{cw}}" for c in (cells or [""] * len(modes))))
if "cooperative" in modes:
    print("(cooperative: a PacketIn (DNS query, SYN) that arrives during a rotation waits unread until the rotation\n"
          " loop is done; RPPT starts at the read, so that wait shows in the connection times, not in RPPT)")
if out:
    try:
        ovs = subprocess.run(["ovs-vswitchd", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        ovs = None
    doc = {"command": "scripts/cpam_bench.sh " + args,
           "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "ovs": ovs,
                       "datapath": "netdev (userspace)"},
           "params": {"hosts": int(hosts), "cores": int(cores), "aggs": int(aggs), "edges": int(edges),
                      "dual_homed": dual == "1", "interval_ms": int(interval), "batch": int(batch),
                      "batch_delay_ms": int(delay), "duration_s": int(duration), "clients": int(clients),
                      "rate_per_client": float(rate)},
           "modes": R}
    with open(out, "w") as fh:
        json.dump(doc, fh, indent=1)
    print(f"(wrote {out})")
PY
log "cpam_bench: total $(fmt_ms $(($(now_ms) - T0)))"
