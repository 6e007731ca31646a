# Shared helpers for sdnator scripts: logging, root checks, timing. Sourced, not run.
# Everything here is plain bash; no state is kept outside the caller's variables.

SDN_ROOT="${SDN_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"

log()  { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
warn() { printf '[%s] WARNING: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die()  { printf '[%s] ERROR: %s\n' "$(date +%H:%M:%S)" "$*" >&2; exit 1; }

need_root() {
  [[ $(id -u) -eq 0 ]] || die "$1 needs root (network namespaces, Open vSwitch)"
}

need_cmds() {
  local c missing=()
  for c in "$@"; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
  ((${#missing[@]} == 0)) || die "missing commands: ${missing[*]} (run scripts/setup.sh)"
}

# Milliseconds since the epoch (for phase timings).
now_ms() { local t; t=$(date +%s%N); echo $((t / 1000000)); }

# fmt_ms 12345 -> "12.3 s"
fmt_ms() { awk -v ms="$1" 'BEGIN { if (ms < 1000) printf "%d ms", ms; else printf "%.1f s", ms / 1000 }'; }

# A TCP port on 127.0.0.1 that nothing listens on right now (checked with ss).
free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 30000))
    if [[ -z $(ss -Htan "( sport = :$p or dport = :$p )" 2>/dev/null) ]]; then
      echo "$p"; return 0
    fi
  done
  return 1
}
