#!/usr/bin/env bash
# Controller failover and network re-provisioning time of a three-instance sdnator cluster
# (RFC 8456 5.4.1 and 5.4.2; docs/cluster.md, "Failover figures"). Each repetition brings up a
# fresh cluster with scripts/cluster.sh (Redis + 2 replicas + 3 sentinels + 3 instances), runs
# ofbench --failover with every emulated switch connected to all three instances and new flows
# arriving at a steady rate, and has ofbench SIGKILL the instance that masters the most switches
# a few seconds in. ofbench measures, per switch: master's connection lost -> a survivor's
# ROLE_REQUEST(MASTER) accepted (failover), and -> the first PacketIn sent after the loss
# answered (re-provisioning), plus the PacketIns left unanswered in between.
#
# usage: scripts/cluster_bench.sh [--reps 3] [--switches 12] [--rate 300] [--duration 8]
#                                 [--kill-at 3] [--out docs/cluster/failover.json] [--lease-ms 600]
#   SDNATOR, OFBENCH: binaries (default build/bin/...)
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

REPS=3 SWITCHES=12 RATE=300 DURATION=8 KILL_AT=3 LEASE_MS=${CLUSTER_LEASE_MS:-600}
OUT=$SDN_ROOT/docs/cluster/failover.json
while (($#)); do
  case $1 in
    --reps) REPS=$2; shift 2 ;;
    --switches) SWITCHES=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --kill-at) KILL_AT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --lease-ms) LEASE_MS=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
SDNATOR=${SDNATOR:-$SDN_ROOT/build/bin/sdnator}
OFBENCH=${OFBENCH:-$SDN_ROOT/build/bin/ofbench}
[[ -x $SDNATOR && -x $OFBENCH ]] || die "build sdnator and ofbench first ($SDNATOR, $OFBENCH)"
WORK=$(mktemp -d /tmp/sdnator-cluster-bench.XXXXXX)
CL=(env SDNATOR="$SDNATOR" CLUSTER_LEASE_MS="$LEASE_MS" bash "$SDN_ROOT/scripts/cluster.sh" --dir "$WORK/cluster")
trap '"${CL[@]}" down >/dev/null 2>&1 || true' EXIT

for ((r = 1; r <= REPS; r++)); do
  log "repetition $r/$REPS: cluster up"
  "${CL[@]}" up >"$WORK/up$r.log" 2>&1 || { cat "$WORK/up$r.log" >&2; die "cluster up failed"; }
  targets=$("${CL[@]}" ofbench-targets)
  "$OFBENCH" --failover --controllers "$targets" -s "$SWITCHES" -M 10 -w 1 -d "$DURATION" --rate "$RATE" \
    --kill-at "$KILL_AT" --kill-cmd "bash $SDN_ROOT/scripts/cluster.sh --dir $WORK/cluster kill {index}" \
    --handshake-timeout-ms 15000 --json "$WORK/run$r.json" | tee "$WORK/run$r.txt"
  cp -r "$WORK/cluster" "$WORK/cluster.run$r"
  "${CL[@]}" down >/dev/null 2>&1
done

mkdir -p "$(dirname "$OUT")"
python3 - "$OUT" "$REPS" "$SWITCHES" "$RATE" "$DURATION" "$KILL_AT" "$LEASE_MS" "$WORK" <<'PY'
import json, platform, statistics, sys, time
out, reps, switches, rate, duration, kill_at, lease_ms, work = sys.argv[1:]
runs = []
for r in range(1, int(reps) + 1):
    j = json.load(open(f"{work}/run{r}.json"))
    f = j["failover"]
    runs.append({
        "repetition": r,
        "killed": f["kill"]["target"] if f["kill"] else None,
        "mastership_before": f["mastership_before"],
        "mastership_end": f["mastership_end"],
        "switches_affected": f["switches_affected"],
        "failed_over": f["failed_over"],
        "reprovisioned": f["reprovisioned"],
        "failover_ms": f["failover_ms"],
        "reprovisioning_ms": f["reprovisioning_ms"],
        "packet_ins": f["packet_ins"],
        "unexpected_channel_losses": f["unexpected_channel_losses"],
        "slave_writes_refused": f["slave_writes_refused"],
        "role_requests_refused": f["role_requests_refused"],
        "episodes": f["episodes"],
    })
def per_switch(key):
    v = [e[key] for r in runs for e in r["episodes"] if e[key] is not None]
    if not v:
        return {"n": 0, "min": None, "median": None, "max": None}
    return {"n": len(v), "min": min(v), "median": statistics.median(v), "max": max(v)}
summary = {
    "failover_ms": per_switch("failover_ms"),
    "reprovisioning_ms": per_switch("reprovisioning_ms"),
    "switches_affected": sum(r["switches_affected"] for r in runs),
    "failed_over": sum(r["failed_over"] for r in runs),
    "reprovisioned": sum(r["reprovisioned"] for r in runs),
    "packet_ins_unanswered_in_gap": sum(r["packet_ins"]["unanswered_in_gap"] for r in runs),
    "packet_ins_in_flight_lost": sum(r["packet_ins"]["in_flight_lost"] for r in runs),
    "unexpected_channel_losses": sum(r["unexpected_channel_losses"] or 0 for r in runs),
}
doc = {"tool": "scripts/cluster_bench.sh", "date": time.strftime("%Y-%m-%d"), "host": platform.node(),
       "config": {"repetitions": int(reps), "switches": int(switches), "controllers": 3, "rate_per_s": float(rate),
                  "duration_s": float(duration), "kill_at_s": float(kill_at), "lease_ms": int(lease_ms),
                  "renew_interval_ms": 150, "check_interval_ms": 100, "claim_delay_ms": 200},
       "summary": summary, "runs": runs}
json.dump(doc, open(out, "w"), indent=1)
s = summary
print(f"\ncluster failover, {reps} repetitions x {switches} switches, 3 instances, {rate} new flows/s, lease {lease_ms} ms")
print(f"{'':28}{'n':>5}{'min':>10}{'median':>10}{'max':>10}")
for k, name in (("failover_ms", "controller failover (ms)"), ("reprovisioning_ms", "re-provisioning (ms)")):
    v = s[k]
    fmt = lambda x: "-" if x is None else f"{x:.1f}"
    print(f"{name:28}{v['n']:>5}{fmt(v['min']):>10}{fmt(v['median']):>10}{fmt(v['max']):>10}")
print(f"switches failed over {s['failed_over']}/{s['switches_affected']}, re-provisioned {s['reprovisioned']}; "
      f"PacketIns unanswered in the gaps {s['packet_ins_unanswered_in_gap']}, in flight to the killed instance "
      f"{s['packet_ins_in_flight_lost']}; unexpected connection losses {s['unexpected_channel_losses']}")
print(f"wrote {out}")
PY
log "runs kept in $WORK"
