#!/usr/bin/env bash
# Install everything sdnator needs on Debian 12 and build the release preset (binaries in
# build/bin/). Idempotent: packages already installed are not touched, apt-get update only runs
# when the package lists are missing or older than a day, and the build is incremental.
#
# usage: scripts/setup.sh [--no-build] [--deps-only]
#   JOBS=N   parallel build jobs (default 2)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

BUILD=1
for a in "$@"; do
  case $a in
    --no-build|--deps-only) BUILD=0 ;;
    -h|--help) sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $a" ;;
  esac
done
JOBS=${JOBS:-2}

PACKAGES=(
  # toolchain
  build-essential g++ clang libclang-rt-14-dev lld cmake ninja-build pkg-config git
  # libraries
  libasio-dev libspdlog-dev libfmt-dev libcli11-dev libtomlplusplus-dev nlohmann-json3-dev
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  # data layer: Redis client, SQLite and PostgreSQL client libraries
  libhiredis-dev libsqlite3-dev libpq-dev
  # data layer servers (started by scripts/services.sh for tests and benchmarks; the embedded
  # defaults need neither), the Python example app and the benchmark plot
  redis-server redis-tools postgresql python3-redis python3-matplotlib sqlite3
  redis-sentinel   # cluster: Redis Sentinel for scripts/cluster.sh and integration.cluster
  # testbed and integration tests (python3: JSON checks in tests and demo)
  # ofbench's side-by-side baseline (an OpenFlow 1.3 learning switch in C)
  openvswitch-testcontroller
  # eval/: the paper's traffic generators (iperf3) and the reconnaissance scanner (nmap)
  iperf3 nmap
  # ids case study: the attacker namespace's SYN flood (hping3)
  hping3
  # northbound: the HTTP server/client library; the dashboard test's headless browser (and a
  # font, so screenshots have text) and Prometheus text-format parser
  libcpp-httplib-dev chromium fonts-dejavu-core python3-prometheus-client
  # fleet case study: the ILP solver (CBC, C API) and MD5 for the printers' HTTP Digest auth
  coinor-libcbc-dev libssl-dev
  openvswitch-switch openvswitch-common tshark ethtool iproute2 iputils-ping iputils-arping procps psmisc python3
)

missing=()
for p in "${PACKAGES[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  log "setup: installing ${#missing[@]} packages: ${missing[*]}"
  [[ $(id -u) -eq 0 ]] || die "installing packages needs root (run as root: scripts/setup.sh)"
  export DEBIAN_FRONTEND=noninteractive
  # Package lists: refresh when absent or older than a day.
  if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null \
     || [[ -z $(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -1440 -print -quit) ]]; then
    log "setup: apt-get update (package lists missing or stale)"
    apt-get update -q
  fi
  # tshark asks whether non-root users may capture; answer no without a prompt.
  echo 'wireshark-common wireshark-common/install-setuid boolean false' | debconf-set-selections
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  # The package's service would listen on 6653 (the controller's port): ofbench starts its
  # own ovs-testcontroller on a free port, so keep the service off.
  if command -v systemctl >/dev/null && systemctl is-enabled openvswitch-testcontroller >/dev/null 2>&1; then
    systemctl disable --now openvswitch-testcontroller >/dev/null 2>&1 || true
  fi
  pkill -x ovs-testcontroller 2>/dev/null || true
else
  log "setup: all ${#PACKAGES[@]} packages already installed"
fi

if ((BUILD)); then
  cd "$SDN_ROOT"
  t0=$(now_ms)
  log "setup: cmake --preset release && cmake --build --preset release -j $JOBS"
  cmake --preset release >/dev/null
  cmake --build --preset release -j "$JOBS"
  log "setup: build done ($(fmt_ms $(($(now_ms) - t0)))); binaries in build/bin/: $(ls build/bin 2>/dev/null | tr '\n' ' ')"
fi
