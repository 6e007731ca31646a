#!/usr/bin/env bash
# Everything CI runs, in one command: packages (setup.sh), release build with tests, unit tests,
# the unit tests again under ASan + UBSan, the runtime's multi-threaded unit tests under TSan, a
# libFuzzer smoke run of every fuzz target, and the Open vSwitch integration tests. Prints a
# timing per phase and ends with one line "N passed, N failed" (unit, asan, tsan, fuzz and
# integration); exit status is non-zero if anything failed.
#
# usage: scripts/test.sh
#   FUZZ_SECONDS=15   seconds per fuzz target (0 skips fuzzing)
#   JOBS=2            parallel build jobs
#   SKIP_ASAN=1 / SKIP_TSAN=1 / SKIP_FUZZ=1 / SKIP_INTEGRATION=1   leave a phase out (reported as skipped)
#   BUILD_DIR=build ASAN_BUILD_DIR=build-asan TSAN_BUILD_DIR=build-tsan FUZZ_BUILD_DIR=build-fuzz
#                     build trees (the presets' dirs)
#   PRUNE_OBJECTS=1   once a tree is built, delete its object files and static libraries (the
#                     binaries stay): on by default under CI=true, where one run ran out of disk
#                     during the ASan build; off otherwise, so a local rerun builds incrementally
set -Euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$SDN_ROOT"

FUZZ_SECONDS=${FUZZ_SECONDS:-15}
JOBS=${JOBS:-2}
export JOBS
BUILD_DIR=${BUILD_DIR:-build}
FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-build-asan}
TSAN_BUILD_DIR=${TSAN_BUILD_DIR:-build-tsan}
# The runtime's tests: the ones whose code runs on several threads at once (shards, remote
# writes, post/post_soon, the data layer's writer and timer threads). docs/runtime.md.
TSAN_TARGETS=(core_tests southbound_tests southbound_tls_tests southbound_dos_tests southbound_roles_tests
  topology_tests forwarding_tests cpam_tests cpam_recovery_tests data_due_test coordinator_test)
WORK=$(mktemp -d /tmp/sdnator-test.XXXXXX)
export IT_PIDS_DIR="$WORK/it-pids"
PASSED=0 FAILED=0
OVS_STARTED=0
declare -a TIMINGS=() NOTES=()
T_ALL=$(now_ms)

phase_begin() { PHASE=$1; PHASE_T0=$(now_ms); printf '\n==== %s\n' "$PHASE"; }
phase_end() {   # phase_end RESULT
  local dt; dt=$(($(now_ms) - PHASE_T0))
  TIMINGS+=("$(printf '%-22s %8s  %s' "$PHASE" "$(fmt_ms "$dt")" "$1")")
  log "test: $PHASE: $1 ($(fmt_ms "$dt"))"
}
count() { PASSED=$((PASSED + $1)); FAILED=$((FAILED + $2)); }

# Free space where the build trees and /tmp live, for the log and the timings table: a run that
# runs out of disk says so there instead of failing a compile or a mktemp far from the cause.
free_disk() { df -Ph "$SDN_ROOT" /tmp | awk 'NR > 1 && !seen[$6]++ { printf "%s%s %s free", sep, $6, $4; sep = ", " }'; }
PRUNE_OBJECTS=${PRUNE_OBJECTS:-$([[ ${CI:-} == true ]] && echo 1 || echo 0)}
# prune_tree DIR: delete a built tree's objects and archives (CI only, see PRUNE_OBJECTS).
prune_tree() {
  ((PRUNE_OBJECTS)) || return 0
  local before; before=$(du -sh "$1" 2>/dev/null | cut -f1)
  find "$1" -type f \( -name '*.o' -o -name '*.a' \) -delete 2>/dev/null
  log "test: pruned objects of $1 ($before -> $(du -sh "$1" 2>/dev/null | cut -f1)); $(free_disk)"
}

# run_ctest LABEL [DIR [CTEST_ARG...]]: run ctest for one label (in DIR, default BUILD_DIR), add its
# pass/fail counts; a ctest that cannot run counts as one failure.
run_ctest() {
  local label=$1 dir=${2:-$BUILD_DIR} total failed
  shift; (($#)) && shift
  local log="$WORK/ctest-$label-${dir//\//_}.log"
  ctest --test-dir "$dir" -L "$label" --output-on-failure "$@" 2>&1 | tee "$log"
  if grep -q 'No tests were found' "$log"; then
    NOTES+=("no $label tests registered"); phase_end "no tests"; return
  fi
  read -r failed total < <(sed -nE 's/.*tests passed, ([0-9]+) tests? failed out of ([0-9]+).*/\1 \2/p' "$log" | tail -1)
  if [[ -z ${total:-} ]]; then
    count 0 1; NOTES+=("ctest -L $label did not run"); phase_end "ctest did not run"; return
  fi
  count $((total - failed)) "$failed"
  phase_end "$((total - failed)) passed, $failed failed"
}

# build_preset PRESET DIR [TARGET...]: configure and build one preset (all of it, or the named
# targets) as the phase "PRESET build"; a failure counts once and is noted. Returns non-zero if
# the build failed.
build_preset() {
  local preset=$1 dir=$2 ok=0
  shift 2
  local targets=()
  (($#)) && targets=(--target "$@")
  phase_begin "$preset build"
  if cmake --preset "$preset" -B "$dir" >"$WORK/$preset-configure.log" 2>&1 \
     || { cat "$WORK/$preset-configure.log"; false; }; then
    cmake --build "$dir" -j "$JOBS" "${targets[@]}" -- -k 0 && ok=1
  fi
  if ((ok)); then phase_end ok; return 0; fi
  phase_end FAILED; count 0 1; NOTES+=("$preset build failed"); return 1
}

# Kill what integration tests left behind if ctest killed them (timeout): pids they recorded
# (checked against the command name, in case the pid was reused) and their testbeds, by prefix.
reap_integration_leftovers() {
  local f pid prefix
  for f in "$IT_PIDS_DIR"/*; do
    [[ -f $f ]] || continue
    prefix=$(basename "$f")
    while read -r pid; do
      if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qE 'sdnator|tshark'; then
        warn "killing left-over pid $pid from integration testbed $prefix"; kill -KILL "$pid" 2>/dev/null || true
      fi
    done <"$f"
    bash scripts/ids_tap.sh --prefix "$prefix" down || true
    bash scripts/testbed.sh --prefix "$prefix" down || true
    rm -f "$f"
  done
}

# Testbeds of integration tests from an earlier run on this machine that was killed before its
# own clean-up (their bridges live on in the Open vSwitch database): no integration test of
# this run has started yet, so every "iXXXX-" testbed found now is stale. Torn down by prefix,
# so that they neither collide with this run nor keep `ovs.sh stop` from stopping.
sweep_stale_testbeds() {
  local prefixes p
  prefixes=$( { ls /run/sdnator-testbed 2>/dev/null
                ovs-vsctl --timeout=5 list-br 2>/dev/null | sed -nE 's/^(i[0-9a-f]{4}-).*/\1/p'; } \
              | grep -E '^i[0-9a-f]{4}-$' | sort -u)
  for p in $prefixes; do
    warn "tearing down stale integration testbed $p (left by an earlier run)"
    bash scripts/ids_tap.sh --prefix "$p" down >/dev/null 2>&1 || true
    bash scripts/testbed.sh --prefix "$p" down >/dev/null 2>&1 || true
    ovs-vsctl --timeout=5 list-br 2>/dev/null | grep "^$p" | while read -r br; do
      ovs-vsctl --timeout=5 --if-exists del-br "$br"; done
  done
}

cleanup() {
  set +e
  reap_integration_leftovers
  if ((OVS_STARTED)); then bash scripts/ovs.sh stop; OVS_STARTED=0; fi
  if [[ -d ${SERVICES_DIR:-} ]]; then
    bash scripts/services.sh down --dir "$SERVICES_DIR"; rm -rf "$SERVICES_DIR"
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- setup + build
log "test: disk at start: $(free_disk)"
phase_begin "setup (packages)"
if bash scripts/setup.sh --no-build; then phase_end ok; else phase_end FAILED; count 0 1; fi

# ---------------------------------------------------------------- services
# Data-layer tests run against real servers: a private PostgreSQL cluster and a Redis server on
# free loopback ports (tests that kill Redis start their own). SDNATOR_REQUIRE_SERVICES=1 makes a
# test that finds no server fail instead of skipping.
SERVICES_DIR=/tmp/sdnator-test-services.$$
phase_begin "services (postgres, redis)"
if PG_PORT=$(free_port) REDIS_PORT=$(free_port) bash scripts/services.sh up --dir "$SERVICES_DIR" >"$WORK/services.env"; then
  # shellcheck disable=SC1090
  source "$WORK/services.env"
  export SDNATOR_REQUIRE_SERVICES=1
  phase_end ok
else
  phase_end FAILED; count 0 1; NOTES+=("could not start PostgreSQL/Redis")
fi

phase_begin "build release+tests"
BUILD_OK=0
if cmake --preset release -B "$BUILD_DIR" -DSDNATOR_TESTS=ON >"$WORK/configure.log" 2>&1 \
   || { cat "$WORK/configure.log"; false; }; then
  # -k 0: on a compile error keep building everything else, so the remaining tests still run
  if cmake --build "$BUILD_DIR" -j "$JOBS" -- -k 0; then BUILD_OK=1; fi
fi
if ((BUILD_OK)); then phase_end ok; else phase_end FAILED; count 0 1; NOTES+=("release build failed"); fi
prune_tree "$BUILD_DIR"

# ---------------------------------------------------------------- unit
phase_begin "unit tests"
if [[ -f $BUILD_DIR/CTestTestfile.cmake ]]; then run_ctest unit; else phase_end "skipped (not configured)"; fi

# ---------------------------------------------------------------- unit under ASan + UBSan
# The same unit tests built with the asan preset: memory errors and undefined behaviour in
# the codec, parsers, runtime and apps fail the run even where the release build passes.
ASAN_OK=0
if [[ ${SKIP_ASAN:-0} == 1 ]]; then
  phase_begin "asan build"; phase_end "skipped"
elif build_preset asan "$ASAN_BUILD_DIR"; then
  ASAN_OK=1
fi
if ((ASAN_OK)); then
  phase_begin "unit tests (asan)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest unit "$ASAN_BUILD_DIR"
fi
# The ASan tree is the largest (instrumented objects, every test binary): once its tests ran it
# is of no further use to this run.
[[ ${PRUNE_OBJECTS} == 1 && -d $ASAN_BUILD_DIR ]] && { rm -rf "$ASAN_BUILD_DIR"; log "test: removed $ASAN_BUILD_DIR; $(free_disk)"; }

# ---------------------------------------------------------------- runtime tests under TSan
# Only the targets above are built in the tsan tree, and only their tests run (each unit test
# binary's tests carry the ctest label unit-NAME). halt_on_error: a data race fails its test.
if [[ ${SKIP_TSAN:-0} == 1 ]]; then
  phase_begin "tsan build"; phase_end "skipped"
elif build_preset tsan "$TSAN_BUILD_DIR" "${TSAN_TARGETS[@]}"; then
  phase_begin "unit tests (tsan)"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    run_ctest unit "$TSAN_BUILD_DIR" -L "^unit-($(IFS='|'; echo "${TSAN_TARGETS[*]}"))\$"
fi
[[ ${PRUNE_OBJECTS} == 1 && -d $TSAN_BUILD_DIR ]] && { rm -rf "$TSAN_BUILD_DIR"; log "test: removed $TSAN_BUILD_DIR; $(free_disk)"; }

# ---------------------------------------------------------------- fuzz smoke
FUZZ_OK=0
if [[ ${SKIP_FUZZ:-0} == 1 || $FUZZ_SECONDS == 0 ]]; then
  phase_begin "fuzz build"; phase_end "skipped"
elif build_preset fuzz "$FUZZ_BUILD_DIR" fuzzers; then
  FUZZ_OK=1
fi

if ((FUZZ_OK)); then
  phase_begin "fuzz run (${FUZZ_SECONDS}s each)"
  # scripts/fuzz.sh runs each target on a copy of its committed corpus and prints a reproducer
  # of any crash; its last line is "fuzz: N passed, M failed".
  bash scripts/fuzz.sh --no-build --build-dir "$FUZZ_BUILD_DIR" --seconds "$FUZZ_SECONDS" --work "$WORK/fuzz" \
    --json "$WORK/fuzz.json" 2>&1 | tee "$WORK/fuzz.log"
  read -r fp ff < <(sed -nE 's/^fuzz: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/p' "$WORK/fuzz.log" | tail -1)
  if [[ -z ${fp:-} ]]; then
    count 0 1; NOTES+=("scripts/fuzz.sh did not run"); phase_end "did not run"
  else
    count "$fp" "$ff"
    phase_end "$fp passed, $ff failed"
  fi
fi
[[ ${PRUNE_OBJECTS} == 1 && -d $FUZZ_BUILD_DIR ]] && { rm -rf "$FUZZ_BUILD_DIR"; log "test: removed $FUZZ_BUILD_DIR; $(free_disk)"; }

# ---------------------------------------------------------------- integration
phase_begin "integration tests"
if [[ ${SKIP_INTEGRATION:-0} == 1 ]]; then
  phase_end "skipped"
elif [[ ! -x $BUILD_DIR/bin/sdnator ]]; then
  count 0 1; NOTES+=("integration tests not run: $BUILD_DIR/bin/sdnator was not built"); phase_end "FAILED (no sdnator binary)"
else
  bash scripts/ovs.sh status >/dev/null 2>&1 || OVS_STARTED=1
  if bash scripts/ovs.sh start; then
    sweep_stale_testbeds
    run_ctest integration
  else
    count 0 1; NOTES+=("Open vSwitch did not start"); phase_end "FAILED (Open vSwitch did not start)"
  fi
  reap_integration_leftovers
  if ((OVS_STARTED)); then bash scripts/ovs.sh stop; OVS_STARTED=0; fi
fi

# ---------------------------------------------------------------- summary
echo
echo "==== timings"
printf '%s\n' "${TIMINGS[@]}"
printf '%-22s %8s\n' "total" "$(fmt_ms $(($(now_ms) - T_ALL)))"
echo "disk at end: $(free_disk)"
((${#NOTES[@]} == 0)) || printf 'note: %s\n' "${NOTES[@]}"
echo
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
