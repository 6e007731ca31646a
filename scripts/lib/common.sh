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
  # Below the kernel's ephemeral range: a port picked there can be taken by any outgoing
  # connection (a Redis client, a sentinel) before the server that was meant to bind it starts
  # (integration.cluster_cpam once failed so: "northbound: cannot listen on 127.0.0.1:44658").
  local p i lo=32768 span
  read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
  span=$((lo - 20000))
  ((span >= 1000)) || span=30000  # an unusual range: fall back to the old choice
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % span))
    if [[ -z $(ss -Htan "( sport = :$p or dport = :$p )" 2>/dev/null) ]]; then
      echo "$p"; return 0
    fi
  done
  return 1
}
