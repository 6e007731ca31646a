#!/usr/bin/env python3
"""REST checks of tests/integration/northbound.sh against a running controller on a real Open
vSwitch campus: every endpoint answers as documented, bad input gets a 400 naming the field,
the token is enforced, flows added and deleted through the API are (not) on the switch per
ovs-ofctl, CPAM's mapping is what DNS answers, rotate-now and config updates take effect,
/metrics parses with prometheus_client, and the event stream carries ticks and rotations."""
import argparse
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

A = argparse.ArgumentParser()
A.add_argument("--url", required=True)
A.add_argument("--token", required=True)
A.add_argument("--manifest", required=True)
A.add_argument("--prefix", required=True)
A.add_argument("--session", required=True)
A.add_argument("--testbed", required=True)
A.add_argument("--work", required=True)
ARGS = A.parse_args()
MANIFEST = json.load(open(ARGS.manifest))
CHECKS = 0


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    global CHECKS
    CHECKS += 1
    if not cond:
        fail(msg)


def call(method, path, body=None, token=True, raw=None, headers=None):
    """(status, parsed JSON or text) of one request."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(ARGS.url + path, data=data, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + (ARGS.token if token is True else token))
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            status, text, ctype = r.status, r.read().decode(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        status, text, ctype = e.code, e.read().decode(), e.headers.get("Content-Type", "")
    if ctype.startswith("application/json"):
        return status, json.loads(text)
    return status, text


def ok(method, path, body=None, want=200):
    st, j = call(method, path, body)
    check(st == want, f"{method} {path}: HTTP {st} (want {want}): {j}")
    return j


def bad(method, path, body=None, field=None, want=400, raw=None, mention=None):
    st, j = call(method, path, body, raw=raw)
    check(st == want, f"{method} {path} {body if raw is None else raw!r}: HTTP {st} (want {want}): {j}")
    check(isinstance(j, dict) and j.get("error"), f"{method} {path}: no error message: {j}")
    if field is not None:
        check(j.get("field") == field, f"{method} {path}: error names field {j.get('field')!r}, want {field!r}: {j}")
    if mention is not None:
        check(mention in j["error"], f"{method} {path}: error {j['error']!r} does not mention {mention!r}")
    return j


def ofctl_flows(bridge):
    return subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", bridge], check=True, capture_output=True,
                          text=True).stdout


def resolve(host, name):
    out = subprocess.run(["bash", ARGS.testbed, "--prefix", ARGS.prefix, "exec", host, ARGS.session, "resolve", name],
                         check=True, capture_output=True, text=True).stdout
    return out.split()[0]


# ---- auth ----
st, j = call("GET", "/api/v1/switches", token=False)
check(st == 401 and "token" in j.get("error", ""), f"no token: HTTP {st} {j}")
st, j = call("GET", "/api/v1/switches", token="wrong")
check(st == 401, f"wrong token: HTTP {st} {j}")
st, _ = call("GET", "/metrics", token=False)
check(st == 401, f"/metrics without token: HTTP {st}")
st, page = call("GET", "/", token=False)
check(st == 200 and "<html" in page.lower(), f"the dashboard page should be public: HTTP {st}")
st, j = call("GET", "/api/v1/health?access_token=" + ARGS.token, token=False)
check(st == 200, f"access_token query parameter: HTTP {st} {j}")
st, j = call("GET", "/api/v1/switches", headers={"Origin": "http://evil.example"})
check(st == 200, "a request with an Origin header is still served")
print("auth: 401 without / with a wrong token, dashboard files public, CORS headers off")

# ---- index, OpenAPI, health ----
index = ok("GET", "/api/v1")
routes = {(r["method"], r["path"]) for r in index["routes"]}
doc = ok("GET", "/api/v1/openapi.json")
check(doc.get("openapi", "").startswith("3."), "openapi.json is no OpenAPI 3 document")
with open(__file__.rsplit("/tests/", 1)[0] + "/src/northbound/openapi.json") as f:
    check(json.load(f) == doc, "the served OpenAPI document differs from the checked-in src/northbound/openapi.json")
# Every documented GET route without path parameters answers (events: a stream, read below;
# keys/latest needs its key; fleet: 404 on a network controller, which has no printer fleet;
# ids and mitigation/blocks: 409 when those apps are not running, as here; integration.ids
# checks them running).
NOT_RUNNING_HERE = ("/api/v1/ids", "/api/v1/mitigation/blocks")
for method, path in sorted(routes):
    if method == "get" and "{" not in path and path not in ("/api/v1/events", "/api/v1/fleet") + NOT_RUNNING_HERE:
        st, j = call("GET", path + ("?key=network/cpam/mapping/current" if path.endswith("/keys/latest") else ""))
        check(st == 200, f"documented route GET {path}: HTTP {st}: {str(j)[:200]}")
check(("get", "/api/v1/fleet") in routes, "the index lists /api/v1/fleet")
st, j = call("GET", "/api/v1/fleet")
check(st == 404 and j.get("error") == "no fleet data", f"fleet on the campus: HTTP {st} {j}")
for path in NOT_RUNNING_HERE:
    st, j = call("GET", path)
    check(st == 409 and "not running" in j.get("error", ""), f"GET {path} without the app: HTTP {st} {j}")
check(len(routes) >= 29, f"the index lists {len(routes)} routes")
health = ok("GET", "/api/v1/health")
check(health["status"] == "ok" and health["switches"] == 7, f"health: {health}")

# ---- switches and ports ----
sw = ok("GET", "/api/v1/switches")
want = {int(s["dpid"], 16) for s in MANIFEST["switches"]}
check({int(s["dpid"], 16) for s in sw} == want, f"switches {sw} != manifest {want}")
edge_sw = next(s for s in MANIFEST["switches"] if s["tier"] == "edge")
EDGE, BR = f"{int(edge_sw['dpid'], 16):016x}", edge_sw["name"]
one = ok("GET", f"/api/v1/switches/{EDGE}")
check(one["dpid"] == EDGE and one["n_tables"] > 0 and len(one["ports"]) >= 3, f"switch detail: {one}")
check(ok("GET", f"/api/v1/switches/{int(EDGE, 16)}")["dpid"] == EDGE, "a short dpid is accepted")
ports = ok("GET", f"/api/v1/switches/{EDGE}/ports")
check(all("stats" in p for p in ports) and any(p["stats"]["rx_packets"] > 0 for p in ports), f"port stats: {ports}")
bad("GET", "/api/v1/switches/zz/ports", field="dpid")
bad("GET", "/api/v1/switches/00000000deadbeef/flows", field="dpid", want=404)
print(f"switches: 7 listed, detail and port stats of {EDGE} ({BR})")

# ---- flows ----
flows = ok("GET", f"/api/v1/switches/{EDGE}/flows")
check(len(flows) >= 1 and all({"match", "actions", "text", "priority"} <= f.keys() for f in flows), f"flows: {flows[:3]}")
check(any(f["priority"] == 0 for f in flows), "the table-miss flow is missing from the list")
add = {"match": "tcp,nw_src=10.9.0.0/16,nw_dst=10.9.9.9,tp_dst=8080", "actions": "mod_nw_dst:10.9.9.10,output:1",
       "priority": 1234, "idle_timeout": 600, "cookie": "0xbeef"}
r = ok("POST", f"/api/v1/switches/{EDGE}/flows", add, want=201)
check(r["ok"] and r["flow"]["priority"] == 1234, f"add: {r}")
dump = ofctl_flows(BR)
line = next((l for l in dump.splitlines() if "tp_dst=8080" in l), None)
check(line is not None and "priority=1234" in line and "nw_dst=10.9.9.9" in line and "cookie=0xbeef" in line
      and "mod_nw_dst:10.9.9.10" in line.replace("set_field:10.9.9.10->ip_dst", "mod_nw_dst:10.9.9.10"),
      f"the added flow is not on {BR} as asked: {line}")
got = ok("GET", f"/api/v1/switches/{EDGE}/flows?match=tcp,nw_dst=10.9.9.9&cookie=0xbeef/0xffff")
check(len(got) == 1 and got[0]["priority"] == 1234 and "tp_dst=8080" in got[0]["match"], f"filtered list: {got}")
check(ok("GET", f"/api/v1/switches/{EDGE}/flows?priority=1234")[0]["cookie"] == "0xbeef", "priority filter")
check(ok("GET", f"/api/v1/switches/{EDGE}/flows?match=udp,nw_dst=10.9.9.9") == [], "a non-matching filter lists nothing")
# bad input: every one a 400 naming the field
bad("POST", f"/api/v1/switches/{EDGE}/flows", raw=b"{not json", field="body")
bad("POST", f"/api/v1/switches/{EDGE}/flows", raw=b"[1,2]", field="body")
bad("POST", f"/api/v1/switches/{EDGE}/flows", {"match": "ip", "actions": "drop", "priorty": 5}, field="priorty")
bad("POST", f"/api/v1/switches/{EDGE}/flows", {"match": "tp_dst=80", "actions": "drop"}, field="match", mention="tp_dst")
bad("POST", f"/api/v1/switches/{EDGE}/flows", {"match": "nw_dst=10.0.0.300", "actions": "drop"}, field="match")
bad("POST", f"/api/v1/switches/{EDGE}/flows", {"match": "bogus_field=1", "actions": "drop"}, field="match", mention="bogus_field")
bad("POST", f"/api/v1/switches/{EDGE}/flows", {"match": "ip", "actions": "output:"}, field="actions")
bad("POST", f"/api/v1/switches/{EDGE}/flows", {"match": "ip", "actions": "teleport:3"}, field="actions", mention="teleport")
bad("POST", f"/api/v1/switches/{EDGE}/flows", {"match": "ip"}, field="actions")
bad("POST", f"/api/v1/switches/{EDGE}/flows", {"match": "ip", "actions": "drop", "priority": 70000}, field="priority")
bad("POST", f"/api/v1/switches/{EDGE}/flows", {"match": "ip", "actions": "drop", "table": "x"}, field="table")
bad("GET", f"/api/v1/switches/{EDGE}/flows?match=tcp,tp_dst=99999", field="match")
bad("DELETE", f"/api/v1/switches/{EDGE}/flows", {"strict": True}, field="strict")
# The switch's own refusal comes back as a 400 with its OFPT_ERROR (goto a table < own is invalid).
st, j = call("POST", f"/api/v1/switches/{EDGE}/flows", {"match": "ip", "actions": "goto_table:0", "table": 3})
check(st == 400 and "OFPET" in j.get("error", ""), f"a flow the switch refuses: HTTP {st} {j}")
check("tp_dst=8080" in ofctl_flows(BR), "a refused request must not disturb other flows")
d = ok("DELETE", f"/api/v1/switches/{EDGE}/flows", {"match": "tcp,nw_dst=10.9.9.9", "cookie": "0xbeef/0xffff"})
check(d["deleted"] == 1, f"delete: {d}")
check("10.9.9.9" not in ofctl_flows(BR), f"the deleted flow is still on {BR}")
ok("POST", f"/api/v1/switches/{EDGE}/flows", {"match": "udp,tp_dst=7", "actions": "drop", "priority": 77}, want=201)
ok("POST", f"/api/v1/switches/{EDGE}/flows", {"match": "udp,tp_dst=9", "actions": "drop", "priority": 78}, want=201)
d = ok("DELETE", f"/api/v1/switches/{EDGE}/flows?match=udp&priority=77")
check(d["deleted"] == 1 and "tp_dst=9" in ofctl_flows(BR) and "tp_dst=7 " not in ofctl_flows(BR).replace("tp_dst=7,", "tp_dst=7 "),
      f"delete by priority: {d}")
ok("DELETE", f"/api/v1/switches/{EDGE}/flows", {"match": "udp,tp_dst=9", "priority": 78, "strict": True})
check("tp_dst=9" not in ofctl_flows(BR), "strict delete left the flow")
print(f"flows: list/filter/add/delete on {BR} agree with ovs-ofctl; 14 kinds of bad input -> 400 naming the field")

# ---- topology ----
topo = ok("GET", "/api/v1/topology")
check(len(topo["switches"]) == 7 and all(s["up"] for s in topo["switches"]), f"topology switches: {topo['switches']}")
# The data key groups ports by role; the API lists them as {port, role}, sorted by port.
for s in topo["switches"]:
    nos = [p["port"] for p in s["ports"]]
    check(nos and nos == sorted(nos) and {p["role"] for p in s["ports"]} <= {"edge", "link", "pending", "down"},
          f"topology switch ports: {s}")
check(any(p["role"] == "link" for s in topo["switches"] for p in s["ports"]), "topology: no link port on any switch")
check(sum(1 for l in topo["links"] if l["up"]) == len(MANIFEST["links"]), f"{len(topo['links'])} links vs manifest {len(MANIFEST['links'])}")
macs = {h["mac"] for h in topo["hosts"] if h["state"] != "gone"}
check({h["mac"] for h in MANIFEST["hosts"]} <= macs, f"topology hosts {sorted(macs)} lack some manifest host")
print(f"topology: 7 switches, {len(topo['links'])} links, {len(topo['hosts'])} hosts")

# ---- CPAM ----
st0 = ok("GET", "/api/v1/cpam")
check(st0["running"] and st0["epoch"] >= 1 and st0["hosts"] == 16 and st0["vip_states"]["primary"] == 16, f"cpam: {st0}")
mapping = ok("GET", "/api/v1/cpam/mapping")
vip = {h["name"]: h["vip"] for h in mapping["hosts"]}
check(resolve("h2", "h10.cpam.lan") == vip["h10"], "DNS and /cpam/mapping disagree on h10")
prim = ok("GET", "/api/v1/cpam/vips?state=primary")
check(sorted(v["vip"] for v in prim) == sorted(vip.values()) and all(v["owner"] for v in prim), "primary VIPs != mapping")
bad("GET", "/api/v1/cpam/vips?state=bogus", field="state")
bad("GET", "/api/v1/cpam/vips?limit=0", field="limit")
bad("GET", "/api/v1/cpam/vips?colour=red", field="colour")
sessions = ok("GET", "/api/v1/cpam/sessions")
check(any(s["client"] == "h1" and s["server"] == "h9" and s["proto"] == "tcp" for s in sessions), f"h1->h9 session missing: {sessions}")
cfg = ok("GET", "/api/v1/cpam/config")
check(cfg["rotation_interval_ms"] == 30000 and cfg["pool_size"] == 250, f"config: {cfg}")
bad("PATCH", "/api/v1/cpam/config", {"rotation_interval_ms": 10}, field="rotation_interval_ms")
bad("PATCH", "/api/v1/cpam/config", {"rotation_interval_ms": "fast"}, field="rotation_interval_ms")
bad("PATCH", "/api/v1/cpam/config", {"pool_size": 10}, field="pool_size", mention="restart")
bad("PATCH", "/api/v1/cpam/config", {"colour": 1}, field="colour")
bad("PATCH", "/api/v1/cpam/config", raw=b"{\"a\":", field="body")
bad("POST", "/api/v1/cpam/rotate", {"now": True}, field="now")

# Events: open the stream, then rotate now; the stream must carry the rotation.
events = []


def stream():
    req = urllib.request.Request(ARGS.url + "/api/v1/events", headers={"Authorization": "Bearer " + ARGS.token})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            name = None
            t_end = time.time() + 12
            for raw in r:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: ") and name:
                    events.append((name, json.loads(line[6:])))
                if time.time() > t_end or sum(1 for n, _ in events if n == "rotation") and sum(1 for n, _ in events if n == "tick") >= 3:
                    return
    except Exception as e:  # noqa: BLE001 - reported through the assertions below
        events.append(("error", str(e)))


t = threading.Thread(target=stream)
t.start()
time.sleep(1.5)
r = ok("POST", "/api/v1/cpam/rotate", want=202)
e0 = r["epoch"]
deadline = time.time() + 10
while ok("GET", "/api/v1/cpam")["epoch"] <= e0:
    check(time.time() < deadline, "rotate-now did not publish a new epoch in 10 s")
    time.sleep(0.2)
t.join(20)
names = [n for n, _ in events]
check("error" not in names, f"event stream failed: {events[-1:]}")
check(names.count("tick") >= 2, f"the stream sent {names.count('tick')} ticks: {names}")
rot = [d for n, d in events if n == "rotation"]
check(rot and rot[-1]["value"]["epoch"] == e0 + 1, f"no rotation event for epoch {e0 + 1}: {names}")
tick = next(d for n, d in events if n == "tick")
check(tick["switches"] == 7 and "rppt" in tick and isinstance(tick["flows"], dict), f"tick: {tick}")
check(len([d for n, d in events if n == "tick" and d["flows"]]) >= 1 and all(v >= 1 for v in [d for n, d in events if n == "tick" and d["flows"]][-1]["flows"].values()),
      "ticks carry no flow counts")
new_vip = {h["name"]: h["vip"] for h in ok("GET", "/api/v1/cpam/mapping")["hosts"]}
check(new_vip != vip, "the mapping did not change after rotate-now")
check(resolve("h2", "h10.cpam.lan") == new_vip["h10"], "DNS does not follow the rotate-now epoch")
hist = ok("GET", "/api/v1/cpam/rotations?limit=5")
check(hist and hist[-1]["value"]["epoch"] == e0 + 1 and "duration_ms" in hist[-1]["value"], f"rotation history: {hist[-2:]}")
bad("GET", "/api/v1/cpam/rotations?limit=abc", field="limit")
# A shorter interval takes effect: the next epoch comes within it.
c = ok("PATCH", "/api/v1/cpam/config", {"rotation_interval_ms": 3000})
check(c["rotation_interval_ms"] == 3000, f"patched config: {c}")
e1 = ok("GET", "/api/v1/cpam")["epoch"]
deadline = time.time() + 8
while ok("GET", "/api/v1/cpam")["epoch"] <= e1:
    check(time.time() < deadline, "no rotation within 8 s after rotation_interval_ms = 3000")
    time.sleep(0.2)
ok("PATCH", "/api/v1/cpam/config", {"rotation_interval_ms": 30000})
print(f"cpam: mapping = DNS, VIPs, sessions, config (6 bad patches -> 400), rotate-now {e0} -> {e0 + 1} "
      f"seen on the event stream ({len(events)} events), interval change effective")

# ---- apps, Coordinator, keys, history ----
apps = ok("GET", "/api/v1/apps")
names = {a["name"] for a in apps["apps"]}
check({"topology", "cpam", "forwarding"} <= names, f"apps: {names}")
check(all(isinstance(a["counters"], dict) and a["counters"] for a in apps["apps"]), "apps without counters")
coord = ok("GET", "/api/v1/coordinator")
online = {i["app_id"] for i in coord["instances"] if i["status"] == "online"}
check({"topology", "cpam", "forwarding"} <= online, f"coordinator online instances: {online}")
keys = ok("GET", "/api/v1/keys?pattern=network/cpam/**")
check(any(k["key"].startswith("network/cpam/mapping/current") for k in keys), f"keys: {[k['key'] for k in keys][:10]}")
lat = ok("GET", "/api/v1/keys/latest?key=network/cpam/mapping/current")
check(lat["value"]["epoch"] >= e0 + 1 and lat["app_id"] == "cpam", f"latest mapping: {lat}")
bad("GET", "/api/v1/keys?pattern=a//b", field="pattern")
bad("GET", "/api/v1/keys/latest?key=network/*/x", field="key")
bad("GET", "/api/v1/keys/latest?key=no/such/key", field="key", want=404)
h = ok("GET", "/api/v1/history?key=network/cpam/rotation@cpam&latest=2")
check(len(h) == 2 and h[1]["value"]["epoch"] > h[0]["value"]["epoch"], f"history: {h}")
hp = ok("POST", "/api/v1/history", {"key": "network/cpam/rotation@cpam", "latest": 1})
check(len(hp) == 1 and hp[0]["seq"] >= h[1]["seq"], f"history POST: {hp}")
bad("GET", "/api/v1/history?key=network/**&limit=-1", field="limit")
bad("GET", "/api/v1/history?key=network/**&limt=2", field="limt")
bad("POST", "/api/v1/history", {"key": "network/**", "latest": "two"}, field="latest")
print("apps, coordinator, keys (latest), history (GET and POST) ok; bad queries -> 400 naming the field")

# ---- metrics ----
m = ok("GET", "/api/v1/metrics")
check(m["counters"]["southbound.rx.packet_in"] > 0 and m["process"]["rss_bytes"] > 0, "metrics JSON")
tk = ok("GET", "/api/v1/tick")
check(len(tk["flows"]) == 7 and all(n >= 1 for n in tk["flows"].values()) and tk["switches"] == 7, f"tick: {tk['flows']}")
rppt = ok("GET", "/api/v1/metrics/rppt")
check(rppt["cpam.rppt"]["count"] > 0 and rppt["cpam.rppt"]["buckets"], f"rppt: {rppt}")
st, text = call("GET", "/metrics")
check(st == 200, f"/metrics HTTP {st}")
fams = {f.name: f for f in text_string_to_metric_families(text)}
def sample(fam, **labels):
    f = fams.get(fam)
    check(f is not None, f"/metrics lacks {fam} (has {sorted(fams)[:40]})")
    for s in f.samples:
        if all(s.labels.get(k) == v for k, v in labels.items()):
            return s
    fail(f"/metrics {fam} has no sample with {labels}")
check(sample("sdnator_openflow_messages", direction="rx", type="packet_in").value > 0, "packet_in counter")
check(sample("sdnator_openflow_messages", direction="tx", type="flow_mod").value > 0, "flow_mod counter")
check(fams["sdnator_cpam_rppt_seconds"].type == "histogram", "cpam rppt is not a histogram")
count = next(s.value for s in fams["sdnator_cpam_rppt_seconds"].samples if s.name.endswith("_count"))
check(count > 0, "no RPPT samples in /metrics")
check(next(s.value for s in fams["sdnator_cpam_rotation_seconds"].samples if s.name.endswith("_count")) >= 2, "rotation histogram")
check(sample("sdnator_flowmod_batches", result="ok").value > 0, "FlowMod batches")
check(sample("sdnator_data_updates_records", event="published").value > 0, "bus throughput")
check(sample("sdnator_data_archive_records", event="written").value > 0, "archive throughput")
sample("sdnator_southbound_errors", reason="decode")
check(sample("sdnator_northbound_errors", **{"class": "client"}).value > 0, "the 400s above were not counted")
check(sample("sdnator_app_stat", app="cpam", name="setups").value > 0, "cpam setups")
check(sample("sdnator_switches_connected").value == 7, "switches gauge")
buckets = [s for s in fams["sdnator_cpam_rppt_seconds"].samples if s.name.endswith("_bucket")]
check(all(a.value <= b.value for a, b in zip(buckets, buckets[1:])), "histogram buckets are not cumulative")
print(f"/metrics: {len(fams)} families parsed by prometheus_client; {int(count)} RPPT samples")

# ---- misc errors ----
bad("GET", "/api/v1/no/such/route", want=404)
st, _ = call("POST", "/api/v1/switches/" + EDGE + "/flows", raw=b"{" + b" " * (2 << 20) + b"}")
check(st == 413, f"an oversized body: HTTP {st}")
print(f"northbound_check: {CHECKS} checks passed")
