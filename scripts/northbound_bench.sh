#!/usr/bin/env bash
# The northbound API's latency per route (200 requests each, a new connection per request, Python's urllib
# as the client) and its memory and thread cost (the same controller with and without the API), on
# the 16-host dual-homed campus with topology + cpam + forwarding. usage: bash scripts/northbound_bench.sh (root)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source tests/integration/lib.sh "${1:-build/bin/sdnator}"
up_cpam_campus >/dev/null
API_PORT=$(free_port)
for mode in api noapi; do
  cat >"$IT_WORK/c.toml" <<EOT
[controller]
apps = ["topology", "cpam", "forwarding"]
[northbound]
listen = "127.0.0.1:$API_PORT"
enabled = $([[ $mode == api ]] && echo true || echo false)
[cpam]
rotation_interval_ms = 10000
vip_range = "10.0.128.0/24"
vip_pool = 250
hosts_file = "$IT_WORK/hosts.txt"
EOT
  start_controller -c "$IT_WORK/c.toml"
  "${TB[@]}" wait-connected 20 >/dev/null; wait_topology 10 20
  for n in $(seq 1 16); do "${TB[@]}" exec "h$n" build/bin/sdnator-session resolve "h$(((n % 16) + 1)).cpam.lan" >/dev/null; done
  sleep 3
  if [[ $mode == api ]]; then
    /usr/bin/python3 - "$API_PORT" <<'PY'
import sys, time, urllib.request, statistics
base = f"http://127.0.0.1:{sys.argv[1]}"
for path in ["/api/v1/health", "/api/v1/switches", "/api/v1/topology", "/api/v1/cpam/mapping", "/api/v1/switches/0000000000000004/flows", "/api/v1/switches/0000000000000004/ports", "/metrics", "/api/v1/tick"]:
    t = []
    for _ in range(200):
        t0 = time.perf_counter()
        with urllib.request.urlopen(base + path) as r:
            body = r.read()
        t.append((time.perf_counter() - t0) * 1000)
    t.sort()
    print(f"{path:45s} p50 {t[100]:.2f} ms  p99 {t[197]:.2f} ms  ({len(body)} bytes)")
PY
  fi
  rss=$(awk '/^VmRSS:/ {print $2}' /proc/$CTRL_PID/status); thr=$(awk '/^Threads:/ {print $2}' /proc/$CTRL_PID/status)
  echo "$mode: RSS $rss kB, $thr threads"
  stop_controller >/dev/null
done
