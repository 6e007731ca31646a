#!/usr/bin/env bash
# Disk full under the SQLite archive (issue 11 item 4): sdnator runs with its archive on a 16 MiB
# tmpfs while the Coordinator checkpoints every 100 ms; the test fills the tmpfs. The controller
# must keep forwarding (a leaf is re-created with an empty flow table and pingall must pass: every
# path is set up again while the archive is failing), the stats must show the error (full_errors,
# last_error "disk full"), and once space is freed the queued records must be committed.
source "$(dirname "$0")/lib.sh" "$@"
need_cmds mount umount dd

ARCH=$IT_WORK/arch
mkdir -p "$ARCH"
mount -t tmpfs -o size=16m,mode=0700 tmpfs "$ARCH" || fail "cannot mount a tmpfs on $ARCH"
# Unmount before lib.sh's cleanup removes the work dir; keep the exit status for it.
trap 'rc=$?; umount -l "$ARCH" 2>/dev/null; (exit $rc); it_cleanup' EXIT

cat >"$IT_WORK/sdnator.toml" <<EOF
[coordinator]
checkpoint_interval_ms = 100
[sqlite]
flush_interval_ms = 20
EOF
# start_controller names the archive $IT_WORK/archive.db: make that a link into the tmpfs (SQLite
# resolves it, so the -wal and -shm files land on the tmpfs too).
ln -s "$ARCH/archive.db" "$IT_WORK/archive.db"

start_controller --config "$IT_WORK/sdnator.toml"
up_tree
"${TB[@]}" --count 2 --quiet pingall || fail "pingall failed before the disk filled"
wait_archive "a['backend'] == 'sqlite' and a['written'] > 0" 10 "archive not writing at start"
step "archive writing on the tmpfs: $(archive written) records"

# (16 MiB, not less: SQLite's WAL grows to 4 MB before its first automatic checkpoint, and on a
# smaller disk the WAL alone fills it.)
step "filling the tmpfs"
dd if=/dev/zero of="$ARCH/filler" bs=64k 2>/dev/null || true   # stops at ENOSPC
filler=$(stat -c %s "$ARCH/filler")
((filler > 4 * 1024 * 1024)) || fail "filler only $filler bytes: the tmpfs was full before it"
t_full=$(now_ms)
wait_archive "a['full_errors'] > 0 and 'disk full' in a['last_error']" 15 "no disk-full error reported"
step "archive error after $(fmt_ms $(($(now_ms) - t_full))): full_errors $(archive full_errors), last_error: $(archive last_error)"
written_full=$(archive written)

step "controller keeps forwarding: ${IT_PREFIX}s2 re-created (empty flow table), pingall"
"${TB[@]}" restart-switch s2 1
"${TB[@]}" wait-connected 10 || fail "s2 did not reconnect while the archive was failing"
wait_stats_switches 3 10
# The stats file can still show the old s2 connection (it is rewritten once a second), and the
# re-created switch's ports are rediscovered before flooding reaches them: forwarding must come
# back within 10 s (as in switch_restart), then every pair must be reachable.
resumed=$(ping_resumes h1 10.0.0.2 10) || exit 1
step "h1 -> h2 (both on the re-created s2) resumed after $resumed"
"${TB[@]}" --count 2 --quiet pingall || fail "pingall failed while the archive disk was full"
kill -0 "$CTRL_PID" || fail "sdnator died"
wait_stats_fresh
[[ $(archive written) == "$written_full" ]] || fail "archive wrote $(archive written) > $written_full records on a full disk?"
queued=$(archive queued); ((queued > 0)) || fail "nothing queued while the disk was full"
step "pingall passed with the disk full; $queued records queued, failed_batches $(archive failed_batches)"

rm -f "$ARCH/filler"
t_free=$(now_ms)
wait_archive "a['written'] > $written_full" 15 "archive writes did not resume after space was freed"
step "writes resumed $(fmt_ms $(($(now_ms) - t_free))) after space was freed"
wait_archive "a['queued'] == 0 and a['written'] + a['dropped'] == a['appended']" 15 "queued records not committed"
read -r appended written dropped < <(python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['data']['archive']; print(a['appended'], a['written'], a['dropped'])" "$STATS")
step "all queued records committed: appended $appended, written $written, dropped $dropped"
((dropped == 0)) || fail "$dropped records dropped (max_queued is 1000000)"
"${TB[@]}" --count 1 --quiet pingall || fail "pingall failed after the disk was freed"
stop_controller
step "PASS"
