"""A small sdnator DUE client in Python: enough of docs/data-wire.md to be an app.

It registers with the Coordinator (and again whenever one says hello), sends heartbeats,
follows its assignment set, publishes records as JSON envelopes on Redis channels (paced
when the Coordinator bound a key to a frequency) and delivers subscriptions to callbacks.
Standard library plus Debian's python3-redis only. Python apps have no Data Archives
connection: every write goes to Data Updates only.
"""

import base64
import json
import re
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import redis

_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,128}\Z")
MAX_KEY_BYTES, MAX_SEGMENTS = 1024, 32
COORDINATOR_HELLO = "sdnator/coordinator/hello@coordinator"


class BadKey(ValueError):
    pass


@dataclass
class Key:
    segments: list
    app_id: str = ""  # "" = no "@app" part
    specs: list = field(default_factory=list)

    @property
    def channel(self) -> str:
        path = "/".join(self.segments)
        return f"{path}@{self.app_id}" if self.app_id else path

    @property
    def is_pattern(self) -> bool:
        return self.app_id == "*" or any(s in ("*", "**") for s in self.segments)

    def glob(self) -> str:
        """The PSUBSCRIBE glob covering this pattern (Redis '*' also crosses '/')."""
        path = "/".join(self.segments)
        if path.endswith("**"):
            path = path[:-1]
        return f"{path}@{self.app_id or '*'}"

    def matches(self, k: "Key") -> bool:
        """Does this pattern match the concrete key k, segment by segment?"""
        if self.app_id not in ("", "*") and self.app_id != k.app_id:
            return False
        for i, p in enumerate(self.segments):
            if p == "**":
                return len(k.segments) > i  # one or more segments left
            if i >= len(k.segments) or (p != "*" and p != k.segments[i]):
                return False
        return len(self.segments) == len(k.segments)


def parse_key(text: str, concrete: bool = False) -> Key:
    """Parses and validates like src/data/key.cpp; BadKey names what is wrong."""
    def fail(why):
        raise BadKey(f"bad key '{text[:200]}': {why}")

    if not text:
        fail("empty")
    if len(text.encode()) > MAX_KEY_BYTES:
        fail(f"longer than {MAX_KEY_BYTES} bytes")
    rest, _, spec_part = text.partition("?")
    if "?" in text and not spec_part:
        fail("'?' with no specs after it")
    path, at, app = rest.partition("@")
    if at:
        if "@" in app:
            fail("more than one '@'")
        if app != "*" and not _NAME.match(app):
            fail(f"app id '{app}' is not 1-128 of A-Z a-z 0-9 _ . : -")
    if not path:
        fail("no path before '@'")
    segments = path.split("/")
    if len(segments) > MAX_SEGMENTS:
        fail(f"more than {MAX_SEGMENTS} segments")
    for n, seg in enumerate(segments, 1):
        if seg in ("*", "**"):
            if seg == "**" and n != len(segments):
                fail(f"segment {n} is '**', which may only be the last segment")
        elif not _NAME.match(seg):
            fail(f"segment {n} ('{seg}') is not 1-128 of A-Z a-z 0-9 _ . : -")
    specs = []
    if spec_part:
        for one in spec_part.split("&"):
            name, eq, value = one.partition("=")
            if not eq or not _NAME.match(name) or not _NAME.match(value):
                fail(f"spec '{one}' is not name=value of A-Z a-z 0-9 _ . : -")
            if any(name == n for n, _ in specs):
                fail(f"spec '{name}' given twice")
            specs.append((name, value))
    key = Key(segments, app, specs)
    if concrete and key.is_pattern:
        fail("wildcards are not allowed here (a value is written to one concrete key)")
    return key


@dataclass
class Record:
    key: str          # the channel, "path@app"
    app_id: str
    instance: str
    ts_ns: int
    seq: int
    value: Any        # decoded JSON, or bytes when the envelope carried "b"


def decode_envelope(data: bytes) -> Record:
    e = json.loads(data)
    if not isinstance(e, dict):
        raise ValueError("envelope is not a JSON object")
    for f, t in (("k", str), ("a", str), ("i", str), ("t", int), ("s", int)):
        if not isinstance(e.get(f), t) or isinstance(e.get(f), bool):
            raise ValueError(f"envelope field '{f}' missing or not {t.__name__}")
    if ("v" in e) == ("b" in e):
        raise ValueError("envelope needs exactly one of 'v' and 'b'")
    value = e["v"] if "v" in e else base64.b64decode(e["b"], validate=True)
    return Record(e["k"], e["a"], e["i"], e["t"], e["s"], value)


class _Topic:
    """One concrete key this client writes: its sequence counter and pacing state."""

    def __init__(self, key: Key):
        self.key, self.seq = key, 0
        self.next_allowed = 0.0   # monotonic time of the next free slot
        self.pending = None       # latest value waiting for its slot (latest wins)


class Due:
    def __init__(self, app_id: str, host: str = "127.0.0.1", port: int = 6379,
                 heartbeat_ms: int = 1000, instance: Optional[str] = None):
        if not _NAME.match(app_id):
            raise BadKey(f"bad app id '{app_id}': one name of A-Z a-z 0-9 _ . : -")
        self.app_id, self.heartbeat_ms = app_id, heartbeat_ms
        self.instance = instance or str(uuid.uuid4())
        self.stats = {"published": 0, "coalesced": 0, "delivered": 0, "gaps": 0,
                      "decode_errors": 0}
        self._redis = redis.Redis(host=host, port=port, socket_timeout=5)
        self._pubsub = self._redis.pubsub()
        self._lock = threading.RLock()         # topics, assignment, subscriptions, stats
        self._ps_lock = threading.Lock()       # the PubSub connection is not thread-safe
        self._cond = threading.Condition(self._lock)
        self._topics = {}                      # channel -> _Topic
        self._subs = {}                        # glob -> [(Key, callback)]
        self._confirmed = {}                   # glob -> Event set on the PSUBSCRIBE reply
        self._last_seq = {}                    # (instance, channel) -> last seq received
        self._assignment, self._assigned_from = None, None
        self._registration = None
        self._stop = threading.Event()
        self._threads = []
        self._start_thread(self._reader)  # idle until the first observe()

    # -- application model -------------------------------------------------------------------

    def init(self, roles=("producer", "consumer"), interests=(), capabilities=()):
        """Registers (interests/capabilities: dicts {"key": ..., "freq": Hz, "index": bool},
        freq and index optional), then heartbeats. Subscribe with observe() first if a
        producer may answer the registration at once."""
        for item in list(interests) + list(capabilities):
            parse_key(item["key"])
            if item.get("freq") is not None and not item["freq"] > 0:
                raise ValueError(f"'{item['key']}': freq must be > 0")
        self._registration = {
            "app_id": self.app_id, "instance": self.instance, "roles": list(roles),
            "interests": [dict(i) for i in interests],
            "capabilities": [dict(c) for c in capabilities],
            "heartbeat_ms": self.heartbeat_ms}
        self.observe(self._reserved("assignment", "coordinator"), self._on_assignment)
        self.observe(COORDINATOR_HELLO, lambda r: self._register())
        self._register()
        self._start_thread(self._heartbeats)

    def assignment(self) -> Optional[dict]:
        with self._lock:
            return self._assignment

    def wait_assignment(self, timeout: float, predicate=lambda a: True) -> Optional[dict]:
        """Waits until the current assignment set satisfies predicate; None on timeout."""
        with self._cond:
            ok = self._cond.wait_for(
                lambda: self._assignment is not None and predicate(self._assignment), timeout)
            return self._assignment if ok else None

    def assigned_freq(self, key: str) -> Optional[float]:
        """The pacing rate of a concrete key (highest assigned freq matching it), or None."""
        k = self._own(parse_key(key, concrete=True))
        best = None
        with self._lock:
            for item in (self._assignment or {}).get("assignments", []):
                f = item.get("freq")
                if f and self._own(parse_key(item["key"])).matches(k):
                    best = f if best is None else max(best, f)
        return best

    def close(self):
        """Sends what pacing still holds, then a goodbye; stops the threads."""
        if self._stop.is_set():
            return
        with self._lock:
            pending = [t for t in self._topics.values() if t.pending is not None]
            for t in pending:
                self._emit(t, t.pending)
                t.pending = None
        if self._registration is not None:
            try:
                self.write(self._reserved("goodbye"), {})
            except redis.RedisError:
                pass  # Redis away: the Coordinator will see us go silent instead
        self._stop.set()
        for t in self._threads:
            t.join(timeout=2)
        self._pubsub.close()
        self._redis.close()

    # -- data ----------------------------------------------------------------------------------

    def write(self, key: str, value, pub_only: bool = False):
        """Publishes value (JSON-able, or bytes) on key; "@app_id" is added when missing.
        pub_only is accepted for parity with the C++ API: from Python every write is
        publish-only."""
        k = parse_key(key, concrete=True)
        if k.app_id and k.app_id != self.app_id:
            raise BadKey(f"key '{key}' names app '{k.app_id}'; this app is '{self.app_id}'")
        k = self._own(k)
        freq = self.assigned_freq(k.channel)
        with self._lock:
            t = self._topics.setdefault(k.channel, _Topic(k))
            now = time.monotonic()
            if freq is None or (t.pending is None and now >= t.next_allowed):
                if freq is not None:
                    t.next_allowed = now + 1.0 / freq
                self._emit(t, value)
            elif t.pending is not None:
                self.stats["coalesced"] += 1
                t.pending = value
            else:
                t.pending = value
                timer = threading.Timer(t.next_allowed - now, self._release, (t, freq))
                timer.daemon = True
                timer.start()

    def observe(self, pattern: str, callback: Callable[[Record], None]):
        """Calls callback(Record) on the reader thread for every record matching pattern."""
        k = parse_key(pattern)
        glob = k.glob()
        with self._lock:
            first = glob not in self._subs
            self._subs.setdefault(glob, []).append((k, callback))
            if first:
                self._confirmed[glob] = threading.Event()
        if first:
            with self._ps_lock:
                self._pubsub.psubscribe(glob)
            if not self._confirmed[glob].wait(5):
                raise TimeoutError(f"Redis did not confirm PSUBSCRIBE {glob}")

    # -- internals -----------------------------------------------------------------------------

    def _own(self, k: Key) -> Key:
        return k if k.app_id else Key(k.segments, self.app_id, k.specs)

    def _reserved(self, leaf: str, producer: Optional[str] = None) -> str:
        return f"sdnator/apps/{self.app_id}/{self.instance}/{leaf}@{producer or self.app_id}"

    def _register(self):
        self.write(self._reserved("register"), self._registration)

    def _emit(self, t: _Topic, value):
        """Puts one record on Redis now (caller holds _lock: seq order = publish order)."""
        t.seq += 1
        env = {"k": t.key.channel, "a": self.app_id, "i": self.instance,
               "t": time.time_ns(), "s": t.seq}
        if isinstance(value, (bytes, bytearray)):
            env["b"] = base64.b64encode(bytes(value)).decode("ascii")
        else:
            env["v"] = value
        self._redis.publish(t.key.channel, json.dumps(env, separators=(",", ":")))
        self.stats["published"] += 1

    def _release(self, t: _Topic, freq: float):
        with self._lock:
            if t.pending is None or self._stop.is_set():
                return
            t.next_allowed = time.monotonic() + 1.0 / freq
            value, t.pending = t.pending, None
            self._emit(t, value)

    def _on_assignment(self, r: Record):
        a = r.value
        if not (isinstance(a, dict) and isinstance(a.get("epoch"), int)
                and isinstance(a.get("assignments"), list)):
            return
        with self._cond:
            cur = self._assignment
            if cur is not None and r.instance == self._assigned_from and a["epoch"] <= cur["epoch"]:
                return  # stale set from the same Coordinator
            self._assignment, self._assigned_from = a, r.instance
            self._cond.notify_all()

    def _heartbeats(self):
        n = 0
        while not self._stop.wait(self.heartbeat_ms / 1000.0):
            n += 1
            try:
                self.write(self._reserved("heartbeat"),
                           {"seq": n, "heartbeat_ms": self.heartbeat_ms})
            except redis.RedisError:
                pass  # Redis away: the Coordinator sees us silent, we re-register on its hello

    def _reader(self):
        while not self._stop.is_set():
            try:
                with self._ps_lock:
                    subscribed = self._pubsub.subscribed
                    msg = self._pubsub.get_message(timeout=0.05) if subscribed else None
                if msg is None:
                    time.sleep(0.005)
                    continue
                self._dispatch(msg)
            except redis.RedisError:
                time.sleep(0.5)  # redis-py reconnects and re-subscribes on the next call

    def _dispatch(self, msg):
        glob = msg["pattern"].decode() if msg.get("pattern") else None
        if msg["type"] == "psubscribe":
            ev = self._confirmed.get(msg["channel"].decode())
            if ev:
                ev.set()
            return
        if msg["type"] != "pmessage":
            return
        try:
            rec = decode_envelope(msg["data"])
            key = parse_key(msg["channel"].decode(), concrete=True)
            if rec.key != key.channel:
                raise ValueError("envelope key differs from its channel")
        except ValueError:
            self.stats["decode_errors"] += 1
            return
        with self._lock:
            subs = list(self._subs.get(glob, ()))
            if len(self._last_seq) > 100000:
                self._last_seq.clear()  # bounded memory; costs at most one missed gap per key
            last = self._last_seq.get((rec.instance, rec.key))
            if last is not None and rec.seq > last + 1:
                self.stats["gaps"] += rec.seq - last - 1
            self._last_seq[(rec.instance, rec.key)] = rec.seq
        for pattern, callback in subs:
            if pattern.matches(key):
                self.stats["delivered"] += 1
                try:
                    callback(rec)
                except Exception as e:  # a bad callback must not stop the reader thread
                    print(f"sdnator_due: callback for {rec.key} raised {e!r}", file=sys.stderr)

    def _start_thread(self, fn):
        th = threading.Thread(target=fn, daemon=True, name=f"due-{fn.__name__}")
        th.start()
        self._threads.append(th)
