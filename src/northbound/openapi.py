#!/usr/bin/env python3
"""Writes src/northbound/openapi.json, the OpenAPI 3.0 document of the REST API (checked in and
served at /api/v1/openapi.json). Edit the table below with the routes; run it; commit both.
tests/integration/northbound.sh checks that every route the server lists is answered."""
import json
import os

ERR = {"$ref": "#/components/schemas/Error"}
OBJ = {"type": "object"}
ARR = {"type": "array", "items": {"type": "object"}}
DPID = {"name": "dpid", "in": "path", "required": True,
        "schema": {"type": "string"}, "description": "datapath id, 16 hex digits (1, 0x1 and 00:..:01 accepted)"}


def q(name, desc, typ="string"):
    return {"name": name, "in": "query", "required": False, "schema": {"type": typ}, "description": desc}


FILTERS = [q("match", "ovs-ofctl match, e.g. tcp,nw_dst=10.0.0.2,tp_dst=80 (non-strict)"),
           q("table", "table id 0..254 or all"), q("cookie", "0x10 or 0x10/0xff"),
           q("out_port", "port number or LOCAL, CONTROLLER, ..."), q("priority", "exact priority", "integer")]

FLOW_ADD = {"type": "object", "required": ["actions"], "additionalProperties": False, "properties": {
    "match": {"type": "string", "example": "tcp,nw_dst=10.0.0.2,tp_dst=80"},
    "actions": {"type": "string", "example": "output:2"},
    "priority": {"type": "integer", "minimum": 0, "maximum": 65535, "default": 32768},
    "table": {"type": "integer", "minimum": 0, "maximum": 254, "default": 0},
    "idle_timeout": {"type": "integer", "minimum": 0, "maximum": 65535},
    "hard_timeout": {"type": "integer", "minimum": 0, "maximum": 65535},
    "cookie": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    "send_flow_rem": {"type": "boolean"}, "check_overlap": {"type": "boolean"}}}
FLOW_DEL = {"type": "object", "additionalProperties": False, "properties": {
    "match": {"type": "string"}, "table": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    "cookie": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    "out_port": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    "priority": {"type": "integer"}, "strict": {"type": "boolean"}}}
CPAM_PATCH = {"type": "object", "additionalProperties": False, "properties": {
    "rotation_interval_ms": {"type": "integer", "minimum": 1000, "maximum": 86400000},
    "batch_hosts": {"type": "integer", "minimum": 1, "maximum": 10000},
    "batch_delay_ms": {"type": "integer", "minimum": 0, "maximum": 60000}}}
NUL_OBJ = {"type": "object", "nullable": True}
FLEET = {"type": "object", "required": ["sim_min", "fleet", "run", "decision", "printers", "truncated"], "properties": {
    "sim_min": {"type": "number", "nullable": True, "description": "simulated minute of the newest fleet record"},
    "fleet": {**NUL_OBJ, "description": "fleet/twin/fleet: printers, online, in_maintenance, printing, anomalies, sim_min"},
    "run": {**NUL_OBJ, "description": "fleet/run: {phase: start, config} or {phase: end, result}"},
    "decision": {**NUL_OBJ, "description": "fleet/decisions: the latest decision (algorithm, trigger, sim_min, jobs, solve_ms, ...)"},
    "printers": {"type": "array", "maxItems": 1000, "description": "in natural name order (um3-9 before um3-10)", "items": {
        "type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "state": {**NUL_OBJ, "description": "fleet/<p>/state: status, sim_min, queue_length, maintenance_pending, job"},
            "machine": {**NUL_OBJ, "description": "fleet/<p>/twin/machine"},
            "queue": {**NUL_OBJ, "description": "fleet/<p>/twin/queue"},
            "anomaly": {**NUL_OBJ, "description": "fleet/<p>/twin/anomaly"},
            "hotend": {**NUL_OBJ, "description": "fleet/<p>/sensors/hotend: current, target, sim_min, job_state"},
            "bed": {**NUL_OBJ, "description": "fleet/<p>/sensors/bed"}}}},
    "truncated": {"type": "boolean", "description": "more than 1000 printers: the first 1000 are listed"}}}
QUERY = {"type": "object", "additionalProperties": False, "properties": {
    "key": {"type": "string"}, "from_ns": {"type": "integer"}, "to_ns": {"type": "integer"},
    "app_id": {"type": "string"}, "latest": {"type": "integer"}, "limit": {"type": "integer"}}}

BLOCK = {"type": "object", "required": ["mac"], "additionalProperties": False, "properties": {
    "mac": {"type": "string", "description": "source MAC to drop (eth_src)"},
    "ip": {"type": "string", "description": "its IPv4 address (required with [mitigation] match = \"ip\")"},
    "duration_s": {"type": "integer", "minimum": 1, "maximum": 65535,
                   "description": "hard timeout; default by offence (block_s x repeat_factor^earlier offences)"}}}

# (method, path, summary, params, request body schema, {status: description}, response schema)
ROUTES = [
    ("get", "/api/v1", "Index: version and every route", [], None, {}, OBJ),
    ("get", "/api/v1/health", "Liveness: status, version, uptime, switch count", [], None, {}, OBJ),
    ("get", "/api/v1/cluster", "The cluster as this instance sees it: members, the switches it masters and their "
     "fencing generations, leaderships, counters ({\"enabled\": false} when not in a cluster)", [], None, {}, OBJ),
    ("get", "/api/v1/openapi.json", "This document", [], None, {}, OBJ),
    ("get", "/api/v1/switches", "Connected switches", [], None, {}, ARR),
    ("get", "/api/v1/switches/{dpid}", "One switch: features and ports", [DPID], None, {"404": "not connected"}, OBJ),
    ("get", "/api/v1/switches/{dpid}/ports", "Ports with statistics (OFPMP_PORT_DESC + OFPMP_PORT_STATS)", [DPID], None,
     {"404": "not connected", "504": "no answer in time"}, ARR),
    ("get", "/api/v1/switches/{dpid}/flows", "Flows (OFPMP_FLOW) with filters", [DPID] + FILTERS, None,
     {"400": "bad filter (names the field)", "404": "not connected", "504": "no answer in time"}, ARR),
    ("post", "/api/v1/switches/{dpid}/flows", "Add a flow (confirmed by a barrier)", [DPID], FLOW_ADD,
     {"201": "installed", "400": "bad field, or the switch's OFPT_ERROR", "404": "not connected"}, OBJ),
    ("delete", "/api/v1/switches/{dpid}/flows", "Delete flows (filters as body or query)", [DPID] + FILTERS, FLOW_DEL,
     {"400": "bad field", "404": "not connected"}, OBJ),
    ("get", "/api/v1/topology", "Switches, links and hosts as the topology app published them", [], None, {}, OBJ),
    ("get", "/api/v1/cpam", "CPAM status: epoch, next rotation, VIP states, counters", [], None, {"409": "cpam not running"}, OBJ),
    ("get", "/api/v1/cpam/mapping", "Current host -> VIP mapping", [], None, {"409": "cpam not running"}, OBJ),
    ("get", "/api/v1/cpam/vips", "VIPs and their states (default: every VIP that is not free)",
     [q("state", "free, reserved, primary, grace or quarantine"), q("limit", "default 1000", "integer")], None,
     {"400": "bad state or limit", "409": "cpam not running"}, ARR),
    ("get", "/api/v1/cpam/sessions", "Session bindings (pinned VIP pairs)", [q("limit", "default 1000", "integer")], None,
     {"409": "cpam not running"}, ARR),
    ("get", "/api/v1/cpam/rotations", "Rotation history from Data Archives",
     [q("limit", "default 50", "integer"), q("from_ms", "since (Unix ms)", "integer"), q("to_ms", "before (Unix ms)", "integer")],
     None, {"409": "cpam not running or archives off"}, ARR),
    ("post", "/api/v1/cpam/rotate", "Rotate now", [], None, {"202": "rotation started", "409": "a rotation is in progress"}, OBJ),
    ("get", "/api/v1/cpam/config", "CPAM configuration in effect", [], None, {"409": "cpam not running"}, OBJ),
    ("patch", "/api/v1/cpam/config", "Change the runtime-tunable CPAM settings", [], CPAM_PATCH,
     {"400": "unknown, fixed or out-of-range field (named)", "409": "cpam not running"}, OBJ),
    ("get", "/api/v1/fleet", "Printer fleet (src/apps/fleet): states, twins, sensors, the run, the latest decision", [], None,
     {"404": "no fleet/ key seen yet"}, FLEET),
    ("get", "/api/v1/ids", "Intrusion detection (src/apps/ids): detector phase, threshold, model, counters; sampler counters; "
     "latest suspects", [], None, {"409": "neither ids nor sampler running"}, OBJ),
    ("get", "/api/v1/ids/scores", "Detector score windows from Data Archives (newest N)", [q("limit", "default 100", "integer")],
     None, {"409": "archives off"}, ARR),
    ("get", "/api/v1/mitigation/blocks", "Drop rules in force (src/apps/mitigation)", [], None, {"409": "mitigation not running"}, ARR),
    ("post", "/api/v1/mitigation/blocks", "Block a MAC on every switch (confirmed by barriers)", [], BLOCK,
     {"201": "installed", "400": "bad field (named)", "409": "already blocked or mitigation not running",
      "504": "a switch did not confirm"}, OBJ),
    ("delete", "/api/v1/mitigation/blocks/{mac}", "Lift a block (its rules deleted on every switch)",
     [{"name": "mac", "in": "path", "required": True, "schema": {"type": "string"}}], None,
     {"404": "not blocked", "409": "mitigation not running", "504": "a switch did not confirm"}, OBJ),
    ("get", "/api/v1/mitigation/actions", "Mitigation actions (block, unblock, expired) from Data Archives",
     [q("limit", "default 100", "integer")], None, {"409": "archives off"}, ARR),
    ("get", "/api/v1/apps", "Apps' counters and the Coordinator's view", [], None, {}, OBJ),
    ("get", "/api/v1/coordinator", "Coordinator state: instances, health, assignments", [], None,
     {"409": "the Coordinator runs elsewhere"}, OBJ),
    ("get", "/api/v1/keys", "Latest values of the keys seen on Data Updates",
     [q("pattern", "DUE pattern (* one segment, ** any tail), default **"), q("limit", "default 1000", "integer")], None,
     {"400": "bad pattern"}, ARR),
    ("get", "/api/v1/keys/latest", "Latest value of one key (cache, else archive)", [q("key", "concrete key")], None,
     {"400": "bad key", "404": "never seen"}, OBJ),
    ("get", "/api/v1/history", "Data Archives query (DUE Query options)",
     [q("key", "key or pattern"), q("from_ns", "ts >= (ns)", "integer"), q("to_ns", "ts < (ns)", "integer"),
      q("app_id", "producer"), q("latest", "newest N", "integer"), q("limit", "at most N (cap 10000)", "integer")], None,
     {"400": "bad option (named)", "409": "archives off"}, ARR),
    ("post", "/api/v1/history", "Data Archives query with a JSON body", [], QUERY, {"400": "bad option (named)"}, ARR),
    ("get", "/api/v1/metrics", "Metrics registry, data-layer and process figures as JSON", [], None, {}, OBJ),
    ("get", "/api/v1/metrics/rppt", "RPPT histograms (buckets in microseconds)", [], None, {}, OBJ),
    ("get", "/api/v1/tick", "The data of one tick event, now (for clients that poll)", [], None, {}, OBJ),
    ("get", "/api/v1/events", "Server-Sent Events: tick (1/s), rotation, topology", [], None,
     {"503": "too many streams"}, None),
    ("get", "/metrics", "Prometheus text format 0.0.4", [], None, {}, None),
]


def build():
    paths = {}
    for method, path, summary, params, body, statuses, schema in ROUTES:
        ok = "201" if "201" in statuses else "202" if "202" in statuses else "200"
        content = {}
        if path == "/metrics":
            content = {"text/plain": {"schema": {"type": "string"}}}
        elif path == "/api/v1/events":
            content = {"text/event-stream": {"schema": {"type": "string"}}}
        elif schema is not None:
            content = {"application/json": {"schema": schema}}
        responses = {ok: {"description": statuses.get(ok, "ok"), "content": content}}
        for st, desc in statuses.items():
            if st != ok:
                responses[st] = {"description": desc, "content": {"application/json": {"schema": ERR}}}
        responses["401"] = {"description": "token required and missing or wrong", "content": {"application/json": {"schema": ERR}}}
        op = {"summary": summary, "operationId": f"{method}_{path.strip('/').replace('/', '_').replace('{', '').replace('}', '').replace('.', '_')}",
              "parameters": params, "responses": responses}
        if body is not None:
            op["requestBody"] = {"required": method == "post" and (path.endswith("/flows") or path.endswith("/blocks")),
                                 "content": {"application/json": {"schema": body}}}
        paths.setdefault(path, {})[method] = op
    return {
        "openapi": "3.0.3",
        "info": {"title": "sdnator northbound API", "version": "1",
                 "description": "REST API of the sdnator controller. Bound to loopback by default; when bound elsewhere "
                                "every request except the dashboard's files needs Authorization: Bearer <token>."},
        "servers": [{"url": "http://127.0.0.1:8080"}],
        "components": {
            "schemas": {"Error": {"type": "object", "required": ["error"],
                                  "properties": {"error": {"type": "string"}, "field": {"type": "string"}}}},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{}, {"bearer": []}],
        "paths": paths,
    }


if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openapi.json")
    with open(out, "w") as f:
        json.dump(build(), f, indent=1)
        f.write("\n")
    print(f"wrote {out}: {len(ROUTES)} operations")
