#!/usr/bin/env bash
# Runs the libFuzzer targets (build-fuzz/bin/fuzz_*): the CI smoke (scripts/test.sh calls this
# with --seconds 30) and the long run (default 600 s a target). Each target starts from a copy of
# its committed corpus (tests/fuzz/NAME/corpus: seeds and regressions), so new inputs never land
# in the repository by themselves. A crash, leak or timeout fails the target; its reproducer is
# printed and copied to /tmp/sdnator-fuzz-artifacts/NAME/, to be committed under the target's
# corpus/ once fixed. Prints one line per target and ends with "fuzz: N passed, M failed".
#
# usage: scripts/fuzz.sh [--seconds N] [--jobs J] [--build-dir DIR] [--no-build] [--work DIR]
#                        [--json FILE] [TARGET...]
#   --seconds N    run time per target (default 600)
#   --jobs J       targets run at the same time (default 1; the long run on 2 cores: --jobs 2)
#   --no-build     use the fuzz binaries as they are (default: build the fuzz preset first)
#   --work DIR     corpora, logs and artifacts (default: a temporary dir, removed at the end)
#   --json FILE    per-target figures as JSON (runs, runs/s, coverage, corpus size, result)
#   TARGET...      names (config, ofp_mods, ...); default every fuzz_* binary
set -Euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$SDN_ROOT"

SECONDS_EACH=600 JOBS_AT_ONCE=1 BUILD_DIR=build-fuzz BUILD=1 WORK_DIR="" JSON_OUT=""
declare -a TARGETS=()
while (($#)); do
  case $1 in
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --jobs) JOBS_AT_ONCE=$2; shift 2 ;;
    --build-dir) BUILD_DIR=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --work) WORK_DIR=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
[[ $SECONDS_EACH =~ ^[0-9]+$ && $SECONDS_EACH -gt 0 ]] || die "--seconds: a positive integer, not '$SECONDS_EACH'"
[[ $JOBS_AT_ONCE =~ ^[0-9]+$ && $JOBS_AT_ONCE -gt 0 ]] || die "--jobs: a positive integer, not '$JOBS_AT_ONCE'"

if ((BUILD)); then
  cmake --preset fuzz -B "$BUILD_DIR" >/dev/null || die "cannot configure the fuzz preset"
  cmake --build "$BUILD_DIR" -j "${JOBS:-2}" --target fuzzers || die "the fuzz build failed"
fi
if [[ -z $WORK_DIR ]]; then
  WORK_DIR=$(mktemp -d /tmp/sdnator-fuzz.XXXXXX)
  trap 'rm -rf "$WORK_DIR"' EXIT
fi
mkdir -p "$WORK_DIR"

declare -a BINS=()
if ((${#TARGETS[@]})); then
  for t in "${TARGETS[@]}"; do
    [[ -x $BUILD_DIR/bin/fuzz_$t ]] || die "no fuzz target '$t' in $BUILD_DIR/bin"
    BINS+=("$(realpath "$BUILD_DIR/bin/fuzz_$t")")
  done
else
  shopt -s nullglob
  for b in "$BUILD_DIR"/bin/fuzz_*; do [[ -x $b ]] && BINS+=("$(realpath "$b")"); done
  shopt -u nullglob
fi
((${#BINS[@]})) || die "no fuzz_* binaries in $BUILD_DIR/bin (build the fuzz preset)"

# run_one BIN: fuzzes one target for SECONDS_EACH; writes WORK_DIR/NAME/{log,result.json}.
run_one() {
  local bin=$1 name=${1##*/fuzz_}
  local dir="$WORK_DIR/$name" corpus="$WORK_DIR/$name/corpus" artifacts="$WORK_DIR/$name/artifacts"
  rm -rf "$dir"; mkdir -p "$corpus" "$artifacts"
  [[ -d tests/fuzz/$name/corpus ]] && cp -r "tests/fuzz/$name/corpus/." "$corpus/"
  local seeds rc=0 t0
  seeds=$(find "$corpus" -type f | wc -l)
  t0=$(now_ms)
  (cd "$dir" && "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$artifacts/" "$corpus" >"$dir/log" 2>&1) || rc=$?
  local ms=$(($(now_ms) - t0)) execs cov ft findings
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$dir/log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$dir/log" | tail -1 | grep -oE '[0-9]+')
  ft=$(grep -oE 'ft: [0-9]+' "$dir/log" | tail -1 | grep -oE '[0-9]+')
  findings=$(find "$artifacts" -type f | wc -l)
  printf '{"target":"%s","seconds":%s,"wall_ms":%s,"seeds":%s,"corpus":%s,"runs":%s,"runs_per_s":%s,"cov":%s,"ft":%s,"findings":%s,"ok":%s}\n' \
    "$name" "$SECONDS_EACH" "$ms" "$seeds" "$(find "$corpus" -type f | wc -l)" "${execs:-0}" \
    "$(( ${execs:-0} * 1000 / (ms > 0 ? ms : 1) ))" "${cov:-0}" "${ft:-0}" "$findings" \
    "$( ((rc == 0)) && echo true || echo false)" >"$dir/result.json"
}

# Runs the targets, at most JOBS_AT_ONCE at a time.
running=0
for bin in "${BINS[@]}"; do
  if ((running >= JOBS_AT_ONCE)); then wait -n; running=$((running - 1)); fi
  log "fuzz_${bin##*/fuzz_}: ${SECONDS_EACH}s"
  run_one "$bin" &
  running=$((running + 1))
done
wait

passed=0 failed=0
for bin in "${BINS[@]}"; do
  name=${bin##*/fuzz_} dir="$WORK_DIR/${bin##*/fuzz_}"
  r=$(cat "$dir/result.json" 2>/dev/null || echo '{"ok":false}')
  if [[ $r == *'"ok":true'* ]]; then
    passed=$((passed + 1))
    log "fuzz_$name: ok $(/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("({seeds} seeds, {runs} runs, {runs_per_s}/s, cov {cov}, ft {ft}, corpus {corpus})".format(**r))' "$dir/result.json")"
  else
    failed=$((failed + 1))
    log "fuzz_$name: FAILED; last lines of its log:"
    tail -n 40 "$dir/log" 2>/dev/null
    for a in "$dir"/artifacts/*; do
      [[ -f $a ]] || continue
      echo "reproducer $(basename "$a") ($(stat -c %s "$a") bytes), hex:"; od -An -tx1 -v "$a" | head -n 20
      mkdir -p "/tmp/sdnator-fuzz-artifacts/$name" && cp "$a" "/tmp/sdnator-fuzz-artifacts/$name/"
      echo "(copied to /tmp/sdnator-fuzz-artifacts/$name/; commit it under tests/fuzz/$name/corpus/ once fixed)"
    done
  fi
done
if [[ -n $JSON_OUT ]]; then
  cat "$WORK_DIR"/*/result.json 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(json.dumps([json.loads(l) for l in sys.stdin if l.strip()], indent=1))' >"$JSON_OUT"
fi
echo "fuzz: $passed passed, $failed failed"
((failed == 0))
