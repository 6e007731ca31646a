// sdnator dashboard: the live view the controller serves at / (index.html, style.css, this file;
// compiled into the binary by src/northbound/embed.cmake). One ES module, no libraries, no build.
//
// It reads the REST API under /api/v1 (src/northbound/README.md) and follows the Server-Sent
// Events stream /api/v1/events (`tick` every second, `rotation` on each epoch, `topology` on each
// change). If the stream fails or goes quiet it polls the plain endpoints every 2 s instead;
// #conn shows live / polling / offline. API errors ({error, field}) go to #messages.
//
// Panels: #topology (SVG graph, switches layered edge -> aggregation -> core), #rotations (CPAM
// timeline, countdown, VIP states), #mapping (name, real IP, VIP), #rppt (latency histogram with
// client-side quantiles), #flows (flow table sizes, PacketIn rate), #apps (Coordinator view).
// The #fleet panel (printer fleet, shown only when /api/v1/fleet has data) lives in fleet.js,
// which imports the helpers exported at the end of this file.
//
// Hooks for the headless test: in #topology-svg every switch is `.switch[data-dpid]`, every host
// `.host[data-mac]`, every link `.link` (states in data-state); after each render body gets
// data-topology="ready" and #topology-summary reads "<N> switches, <L> links, <H> hosts".
// URL option: ?poll=1 never opens the event stream (polling only; handy for headless runs).
// When the API needs a bearer token, open the page as /#token=SECRET: the fragment never reaches
// the server's request log; the token is kept in sessionStorage for this tab, sent as an
// Authorization header, and (EventSource cannot set headers) as access_token on the stream.

const API = '/api/v1';
const POLL_MS = 2000;
const SVG_NS = 'http://www.w3.org/2000/svg';
const MU = '\u00b5';
const DASH = '\u2014';
const params = new URLSearchParams(location.search);
const TOKEN = (() => {
  const m = /(?:^|[#&])token=([^&]*)/.exec(location.hash);
  try {
    if (m) sessionStorage.setItem('sdnator-token', decodeURIComponent(m[1]));
    return sessionStorage.getItem('sdnator-token') || '';
  } catch (e) {
    return m ? decodeURIComponent(m[1]) : '';
  }
})();
const AUTH = TOKEN ? { Authorization: `Bearer ${TOKEN}` } : {};
const collator = new Intl.Collator('en', { numeric: true });

// ---- small helpers ---------------------------------------------------------------------------

const $ = (id) => document.getElementById(id);

// Fills an element: attributes (null/false skipped; `text` sets the text) and children.
function fill(e, attrs, kids) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'text') e.textContent = String(v);
    else e.setAttribute(k, String(v));
  }
  for (const k of kids.flat()) if (k != null && k !== false) e.append(k);
  return e;
}
const h = (tag, attrs, ...kids) => fill(document.createElement(tag), attrs, kids); // HTML: h('td', {class: 'x'}, 'text')
const s = (tag, attrs, ...kids) => fill(document.createElementNS(SVG_NS, tag), attrs, kids); // SVG
const r1 = (v) => Math.round(v * 10) / 10;
const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const fmtInt = (v) => (typeof v === 'number' && Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : DASH);
const shortDpid = (d) => { const x = String(d || '?').replace(/^0+(?=.)/, ''); return x.length > 6 ? `\u2026${x.slice(-4)}` : x; };
const cmpStr = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

function fmtUs(us) {
  if (!(us >= 0)) return DASH;
  if (us < 1000) return `${us < 10 ? r1(us) : Math.round(us)} ${MU}s`;
  if (us < 1e6) return `${(us / 1000).toPrecision(3)} ms`;
  return `${(us / 1e6).toPrecision(3)} s`;
}
function fmtDur(ms) {
  ms = Math.abs(ms);
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${r1(ms / 1000)} s`;
  if (ms < 3600000) return `${Math.floor(ms / 60000)}m${String(Math.floor((ms % 60000) / 1000)).padStart(2, '0')}s`;
  return `${Math.floor(ms / 3600000)}h${String(Math.floor((ms % 3600000) / 60000)).padStart(2, '0')}m`;
}
function fmtMs(ms) {
  if (typeof ms !== 'number') return DASH;
  return ms < 10 ? `${ms.toFixed(2)} ms` : ms < 1000 ? `${ms.toFixed(1)} ms` : `${(ms / 1000).toFixed(2)} s`;
}
// Sizes an SVG's viewBox to its box on screen (1 unit = 1 px) so text is never stretched.
function fit(svg, w, hgt) {
  const W = Math.round(svg.clientWidth) || w, H = Math.round(svg.clientHeight) || hgt;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  return [W, H];
}
// Axis label of a round span: 30s, 2m, 1h.
const fmtSpan = (ms) => (ms % 3600000 < 1 ? `${Math.round(ms / 3600000)}h`
  : ms % 60000 < 1 ? `${Math.round(ms / 60000)}m` : `${Math.round(ms / 1000)}s`);
const fmtClock = (ms) => new Date(ms).toLocaleTimeString('en-GB', { hour12: false });

// ---- state -----------------------------------------------------------------------------------

const st = {
  mode: 'connecting',     // live | polling | offline
  skew: 0,                // server clock - local clock (ms), from tick.time_ms
  lastTickAt: 0,          // local ms of the last tick
  tickTopo: undefined,    // topology_version of the last tick
  topoKey: undefined,     // version (or JSON) of the rendered topology
  epoch: undefined,       // last epoch seen (tick, cpam, rotation)
  cpam: null,             // GET /cpam
  cpamDown: null,         // text when CPAM is not running (409) or unavailable
  next: null,             // {epoch, ms}: the newest next_rotation_ms known
  mapping: null,          // GET /cpam/mapping, hosts sorted by name
  changed: new Set(),     // names whose VIP changed since the previous mapping seen
  rotations: [],          // rotation records, oldest first
  rppt: {},               // name -> {count, buckets}
  rpptBase: {},           // name -> histogram at page load (for "since page load")
  flows: null, flowSig: '', flowRows: new Map(),
  rx: null,               // {t, v}: previous rx_packet_in sample
  rates: [],              // PacketIns/s, last 120 samples
  apps: null,             // GET /apps
};
const serverNow = () => Date.now() + st.skew;
const cpamOk = () => !st.cpamDown && st.cpam != null;

// ---- messages --------------------------------------------------------------------------------

// Recent messages, newest last; a repeated text bumps a counter instead of adding a line.
const shown = new Map(); // text -> {el, n, timer}
function notify(text, kind = 'error') {
  let m = shown.get(text);
  if (!m) {
    m = { el: h('div', { class: `msg ${kind}`, title: 'click to dismiss' }, text, h('span', { class: 'n' })), n: 0 };
    m.el.addEventListener('click', () => drop(text));
    shown.set(text, m);
    $('messages').append(m.el);
    if (shown.size > 4) drop(shown.keys().next().value);
  }
  m.n += 1;
  if (m.n > 1) m.el.lastChild.textContent = ` \u00d7${m.n}`;
  clearTimeout(m.timer);
  m.timer = setTimeout(() => drop(text), kind === 'error' ? 12000 : 5000);
}
function drop(text) {
  const m = shown.get(text);
  if (m) { clearTimeout(m.timer); m.el.remove(); shown.delete(text); }
}
// Reports a failed request; network failures only mark the connection (no message flood).
function report(what, e) {
  if (e && e.status === 0) return;
  const field = e && e.field ? ` (field ${e.field})` : '';
  notify(`${what}: ${(e && e.message) || e}${field}`);
}
const guard = (fn) => (...a) => {
  try { fn(...a); } catch (e) { console.error(e); notify(`dashboard: ${e.message}`); }
};
window.addEventListener('unhandledrejection', (ev) => { ev.preventDefault(); report('dashboard', ev.reason); });

// ---- API -------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message, field) { super(message); this.status = status; this.field = field; }
}
async function api(path, opts = {}) {
  let res;
  try {
    res = await fetch(API + path, { cache: 'no-store', ...opts, headers: { Accept: 'application/json', ...AUTH, ...(opts.headers || {}) } });
  } catch (e) {
    throw new ApiError(0, `network error (${e.message})`);
  }
  // Until ticks give the server clock, the Date header does (to a second; big skews only).
  const date = Date.parse(res.headers.get('Date') || '');
  if (!st.lastTickAt && date && Math.abs(date + 500 - Date.now() - st.skew) > 2000) st.skew = date + 500 - Date.now();
  const text = await res.text().catch(() => '');
  let body = null;
  if (text) {
    try { body = JSON.parse(text); } catch { if (res.ok) throw new ApiError(res.status, `${path}: response is not JSON`); }
  }
  if (!res.ok) {
    const msg = body && typeof body.error === 'string' ? body.error : `HTTP ${res.status} ${res.statusText}`;
    throw new ApiError(res.status, msg, body && body.field);
  }
  return body;
}

// ---- connection: event stream, polling fallback ------------------------------------------------

let es = null;
let pollTimer = null;
let reopenTimer = null;
const MODE_TITLES = {
  live: 'live: following /api/v1/events',
  polling: `polling the API every ${POLL_MS / 1000} s (event stream unavailable)`,
  offline: 'the controller does not answer',
  connecting: 'connecting',
};

function setMode(m) {
  st.mode = m;
  const c = $('conn');
  c.dataset.state = m;
  c.querySelector('.label').textContent = m;
  c.title = MODE_TITLES[m];
  if (!st.flows) renderFlows();
}

function openStream() {
  reopenTimer = null;
  if (params.get('poll') === '1' || typeof EventSource !== 'function') { startPolling(); return; }
  try {
    es = new EventSource(TOKEN ? `${API}/events?access_token=${encodeURIComponent(TOKEN)}` : `${API}/events`);
  } catch (e) {
    report('event stream', e);
    startPolling();
    return;
  }
  const on = (type, fn) => es.addEventListener(type, (ev) => {
    let d;
    try { d = JSON.parse(ev.data); } catch { notify(`event ${type}: data is not JSON`); return; }
    guard(fn)(d);
  });
  on('tick', onTick);
  on('rotation', onRotation);
  on('topology', () => refreshTopology());
  es.onerror = () => {
    // CONNECTING: the browser retries by itself; CLOSED (bad status or type): retry in 10 s.
    if (es && es.readyState === EventSource.CLOSED) {
      es.close();
      es = null;
      if (!reopenTimer) reopenTimer = setTimeout(openStream, 10000);
    }
    startPolling();
  };
}

function startPolling() {
  if (pollTimer) return;
  setMode(st.mode === 'offline' ? 'offline' : 'polling');
  pollTimer = setInterval(guard(pollOnce), POLL_MS);
  pollOnce();
}
function stopPolling() {
  clearInterval(pollTimer);
  pollTimer = null;
}

// One round of polling: the endpoints the ticks would otherwise tell us about.
async function pollOnce() {
  if (!(await refreshHealth())) { if (st.mode !== 'live') setMode('offline'); return; }
  if (st.mode === 'live') return;
  setMode('polling');
  refreshTopology();
  refreshApps();
  const epoch = st.epoch;
  refreshCpam().then((became) => {
    if (!became && cpamOk() && (st.epoch !== epoch || !st.mapping)) { refreshMapping(); refreshRotations(); }
  });
  // The tick the stream would have sent (RPPT buckets, flow counts, PacketIns), fetched once.
  const t = await load('/tick', 'tick');
  if (t && typeof t === 'object') {
    if (t.flows && typeof t.flows === 'object') { st.flows = t.flows; renderFlows(); }
    if (t.rppt && typeof t.rppt === 'object') { st.rppt = t.rppt; renderRppt(); }
    if (typeof t.rx_packet_in === 'number') addRx(typeof t.time_ms === 'number' ? t.time_ms : Date.now(), t.rx_packet_in);
  }
}

function onTick(d) {
  st.lastTickAt = Date.now();
  if (typeof d.time_ms === 'number') st.skew = d.time_ms - Date.now();
  if (st.mode !== 'live') { stopPolling(); setMode('live'); }
  if (d.topology_version !== st.tickTopo) {
    st.tickTopo = d.topology_version;
    if (d.topology_version !== st.topoKey) refreshTopology();
  }
  if (d.epoch != null && d.epoch !== st.epoch) newEpoch(d.epoch);
  if (d.epoch != null) noteNext(d.epoch, d.next_rotation_ms); // keeps the countdown exact
  if (st.cpam && typeof d.rotating === 'boolean') st.cpam.rotating = d.rotating;
  if (d.flows && typeof d.flows === 'object') { st.flows = d.flows; renderFlows(); }
  if (d.rppt && typeof d.rppt === 'object') { st.rppt = d.rppt; renderRppt(); }
  if (typeof d.rx_packet_in === 'number') addRx(typeof d.time_ms === 'number' ? d.time_ms : Date.now(), d.rx_packet_in);
  if (typeof d.switches === 'number') { st.switches = d.switches; renderHealth(); }
}

function onRotation(rec) {
  const v = rec && (rec.value || rec);
  if (!v || v.epoch == null) return;
  const rv = (r) => r.value || r;
  const last = st.rotations.length ? rv(st.rotations[st.rotations.length - 1]).epoch : null;
  if (last != null && v.epoch < last) { refreshRotations(); newEpoch(v.epoch); return; } // restarted
  if (!st.rotations.some((r) => rv(r).epoch === v.epoch && rv(r).time_ms === v.time_ms)) {
    st.rotations.push(rec.value ? rec : { value: v });
    if (st.rotations.length > 200) st.rotations.splice(0, st.rotations.length - 200);
  }
  if (v.epoch !== st.epoch) newEpoch(v.epoch);
  renderTimeline();
}

function newEpoch(epoch) {
  st.epoch = epoch;
  refreshCpam().then((became) => { if (!became && cpamOk()) refreshMapping(); });
}

// ---- fetches ---------------------------------------------------------------------------------

// GET that reports failures (except the statuses in `quiet`) and resolves null instead of throwing.
async function load(path, what, quiet = []) {
  try { return await api(path); } catch (e) { if (!quiet.includes(e.status)) report(what, e); return null; }
}

function renderHealth(hl) {
  if (hl) { st.health = hl; st.switches = undefined; } // ticks update the count between health checks
  const x = st.health;
  if (!x) return;
  const el = $('health');
  const sw = st.switches ?? x.switches;
  el.textContent = [x.version && `v${x.version}`, typeof x.uptime_s === 'number' && `up ${fmtDur(x.uptime_s * 1000)}`,
    typeof sw === 'number' && (document.body.dataset.runtime === 'none' ? 'no switch runtime' : `${fmtInt(sw)} switches`), x.status !== 'ok' && `status ${x.status}`].filter(Boolean).join(' \u00b7 ');
  el.dataset.status = x.status === 'ok' ? 'ok' : 'warn';
  el.title = `status: ${x.status}`;
}
async function refreshHealth() {
  try {
    renderHealth(await api('/health'));
    return true;
  } catch (e) {
    report('health', e);
    if (e.status === 0 && st.mode !== 'live') setMode('offline');
    return false;
  }
}

// One topology request at a time; a change noticed meanwhile fetches again once it is done.
let topoBusy = false;
let topoAgain = false;
async function refreshTopology() {
  if (topoBusy) { topoAgain = true; return; }
  topoBusy = true;
  try {
    do {
      topoAgain = false;
      const t = await api('/topology');
      if (!t || typeof t !== 'object') throw new ApiError(-1, 'unexpected topology shape');
      const key = t.version != null ? t.version : JSON.stringify(t);
      if (key !== st.topoKey || document.body.dataset.topology !== 'ready') {
        st.topo = t;
        guard(renderTopology)(t);
        st.topoKey = key;
      }
    } while (topoAgain);
  } catch (e) {
    report('topology', e);
  } finally {
    topoBusy = false;
  }
}

// Resolves true when CPAM just became available (the mapping and history are then fetched too).
async function refreshCpam() {
  const wasDown = !cpamOk();
  try {
    const c = await api('/cpam');
    st.cpam = c;
    st.cpamDown = c && c.running === false ? 'CPAM not running' : null;
    if (c && c.epoch != null) { st.epoch = c.epoch; noteNext(c.epoch, c.next_rotation_ms); }
  } catch (e) {
    st.cpam = null;
    st.cpamDown = e.status === 409 ? 'CPAM not running' : `CPAM unavailable${e.status ? ` (${e.message})` : ''}`;
    if (e.status !== 409 && e.status !== 404) report('cpam', e);
  }
  renderCpam();
  if (wasDown && cpamOk()) { refreshMapping(); refreshRotations(); return true; }
  return false;
}

async function refreshMapping() {
  const m = await load('/cpam/mapping', 'mapping', [409]);
  if (m && Array.isArray(m.hosts)) {
    m.hosts.sort((a, b) => collator.compare(String(a.name), String(b.name)));
    const old = st.mapping;
    if (!old) st.changed = new Set();
    else if (old.epoch !== m.epoch) {
      const prev = new Map(old.hosts.map((x) => [x.name, x.vip]));
      st.changed = new Set(m.hosts.filter((x) => prev.has(x.name) && prev.get(x.name) !== x.vip).map((x) => x.name));
    }
    st.mapping = m;
    noteNext(m.epoch, m.next_rotation_ms);
  }
  renderMapping();
}

async function refreshRotations() {
  const r = await load('/cpam/rotations?limit=50', 'rotations', [409]);
  if (Array.isArray(r)) {
    const ep = (x) => num((x.value || x).epoch);
    st.rotations = r.filter((x) => x && (x.value || x).epoch != null).sort((a, b) => ep(a) - ep(b));
  }
  renderTimeline();
}

async function refreshApps() {
  const a = await load('/apps', 'apps');
  if (a) { st.apps = a; st.appsAt = serverNow(); }
  if (a || st.apps) renderApps();
  else $('apps-body').replaceChildren(h('tr', {}, h('td', { colspan: 5, class: 'notice' }, 'apps unavailable')));
}

// Keeps the newest next_rotation_ms of /cpam and /cpam/mapping.
function noteNext(epoch, ms) {
  if (typeof ms === 'number' && (!st.next || num(epoch) >= num(st.next.epoch))) st.next = { epoch, ms };
}

async function rotateNow() {
  const b = $('rotate-now');
  b.disabled = true;
  try {
    const r = await api('/cpam/rotate', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    notify(`rotation requested (from epoch ${r && r.epoch != null ? r.epoch : '?'})`, 'info');
  } catch (e) {
    report('rotate', e.status === 0 ? new ApiError(-1, e.message) : e);
  }
  setTimeout(() => { b.disabled = !cpamOk(); }, 1000);
}

// ---- topology --------------------------------------------------------------------------------

const T = { rowH: 92, swH: 24, gap: 14, top: 30 };
const maxOf = (it) => { let m = 0; for (const v of it) m = Math.max(m, v); return m; };

// Places switches in rows: the switches hosts hang off at the bottom, each other switch one row
// above per hop away from them (edge -> aggregation -> core). Without hosts (or when every
// switch has some) rows are the BFS distance from the best-connected switches, those on top.
// `aspect` (height/width of the panel) spreads the rows to fill it.
function topoLayout(t, aspect) {
  const nodes = new Map();
  for (const d of t.switches || []) if (d && d.dpid) nodes.set(d.dpid, { d, nbr: new Set(), hosts: [], level: 0 });
  const links = (t.links || []).filter((l) => l && l.a && l.b && nodes.has(l.a.dpid) && nodes.has(l.b.dpid));
  for (const l of links) {
    if (l.a.dpid === l.b.dpid) continue;
    nodes.get(l.a.dpid).nbr.add(l.b.dpid);
    nodes.get(l.b.dpid).nbr.add(l.a.dpid);
  }
  const loose = []; // hosts on switches the topology does not list
  for (const x of t.hosts || []) if (x) (nodes.get(x.at && x.at.dpid)?.hosts || loose).push(x);
  for (const n of nodes.values()) n.hosts.sort((a, b) => num(a.at.port) - num(b.at.port) || cmpStr(String(a.mac), String(b.mac)));

  const all = [...nodes.values()];
  const bfs = (seeds) => {
    const dist = new Map(seeds.map((n) => [n.d.dpid, 0]));
    for (let q = [...seeds], i = 0; i < q.length; i++) {
      for (const m of q[i].nbr) if (!dist.has(m)) { dist.set(m, dist.get(q[i].d.dpid) + 1); q.push(nodes.get(m)); }
    }
    return dist;
  };
  let seeds = all.filter((n) => n.hosts.length);
  if (!seeds.length) seeds = all.filter((n) => (n.d.ports || []).some((p) => p.role === 'edge'));
  const bottomUp = seeds.length > 0 && seeds.length < all.length;
  if (bottomUp) {
    const dist = bfs(seeds), top = maxOf(dist.values());
    for (const n of all) n.level = top - (dist.get(n.d.dpid) ?? 0); // unreachable: bottom row
  } else {
    const deg = maxOf(all.map((n) => n.nbr.size));
    const dist = bfs(all.filter((n) => n.nbr.size === deg)), last = maxOf(dist.values());
    for (const n of all) n.level = dist.get(n.d.dpid) ?? last + (deg ? 1 : 0);
  }
  const rows = Array.from({ length: maxOf(all.map((n) => n.level)) + 1 }, () => []);
  for (const n of all) rows[n.level].push(n);
  for (const r of rows) r.sort((a, b) => cmpStr(a.d.dpid, b.d.dpid));
  // Rows away from the anchor row (edge row, or the root row) follow their neighbours' mean position.
  const order = bottomUp ? [...rows.keys()].reverse() : [...rows.keys()];
  for (let i = 1; i < order.length; i++) {
    const ref = rows[order[i - 1]], row = rows[order[i]];
    const pos = new Map(ref.map((n, j) => [n.d.dpid, (j + 0.5) / ref.length]));
    const bc = new Map(row.map((n, j) => {
      const ps = [...n.nbr].filter((m) => pos.has(m)).map((m) => pos.get(m));
      return [n, ps.length ? ps.reduce((a, b) => a + b, 0) / ps.length : (j + 0.5) / row.length];
    }));
    row.sort((a, b) => bc.get(a) - bc.get(b) || cmpStr(a.d.dpid, b.d.dpid));
  }

  // Geometry: each switch gets a slot wide enough for its host grid.
  const nh = (t.hosts || []).length;
  const pitch = nh <= 24 ? 54 : nh <= 64 ? 15 : nh <= 200 ? 11 : 9;
  const labels = nh <= 24;
  const perHostLines = nh <= 64 && maxOf(all.map((n) => n.hosts.length)) <= 8;
  const hostTop = perHostLines ? 46 : 34;
  const grid = (k, maxCols = Infinity) => {
    const cols = k <= 4 ? k : Math.min(k, maxCols, Math.max(4, Math.ceil(Math.sqrt(k * (k > 16 ? 1.2 : 2.5)))));
    return { cols, rows: cols ? Math.ceil(k / cols) : 0 };
  };
  const swW = Math.max(34, 16 + 7 * maxOf(all.map((n) => shortDpid(n.d.dpid).length)));
  for (const n of all) {
    n.grid = grid(n.hosts.length);
    n.w = Math.max(swW, n.grid.cols * pitch) + T.gap;
  }
  const width = Math.max(800, maxOf(rows.map((r) => r.reduce((a, n) => a + n.w, 0))));
  // Height each row needs below its switches; spare room (to fill the panel) widens the gaps.
  const below = rows.map((r) => {
    const hr = maxOf(r.map((n) => n.grid.rows));
    return hr ? hostTop + hr * pitch + (labels ? 14 : 4) : T.swH;
  });
  const looseGrid = loose.length ? grid(loose.length, Math.floor(width / pitch) - 2) : null;
  const span = (i) => (i < rows.length - 1 ? Math.max(T.rowH, below[i] + 40) : below[i]);
  const natural = T.top + 12 + (looseGrid ? 44 + looseGrid.rows * pitch : 0) + rows.reduce((a, r, i) => a + span(i), 0);
  const gaps = Math.max(0, rows.length - 1);
  const spare = Math.max(0, aspect * width - natural);
  const perGap = gaps ? Math.min(spare / gaps, T.rowH * 3) : 0;
  const margin = (spare - perGap * gaps) / 2;
  let y = T.top + margin;
  rows.forEach((r, i) => {
    const extra = (width - r.reduce((a, n) => a + n.w, 0)) / Math.max(1, r.length);
    let x = 0;
    for (const n of r) { n.x = x + (n.w + extra) / 2; n.y = y; x += n.w + extra; }
    y += span(i) + (i < gaps ? perGap : 0);
  });
  const looseAt = looseGrid && { x: width / 2, y: y + 44, grid: looseGrid };
  return { nodes, links, loose, looseAt, width, height: natural + perGap * gaps + 2 * margin, pitch, perHostLines, hostTop, labels, swW };
}

// Position of the i-th host of a grid centred on x0, first row at y0.
const hostCells = (grid, x0, y0, pitch) => (i) =>
  [x0 - ((grid.cols - 1) * pitch) / 2 + (i % grid.cols) * pitch, y0 + Math.floor(i / grid.cols) * pitch];

// Redraws the whole graph (every element is replaced, none leak); sets the test hooks.
function renderTopology(t) {
  const svg = $('topology-svg');
  const L = topoLayout(t, svg.clientWidth ? clamp(svg.clientHeight / svg.clientWidth, 0.2, 3) : 0.5);
  svg.setAttribute('viewBox', `0 0 ${Math.round(L.width)} ${Math.round(L.height)}`);
  const [gLinks, gStubs, gSw, gHosts] = ['links', 'stubs', 'switches', 'hosts'].map((c) => s('g', { class: c }));

  // Links; parallel links between one pair fan out a little.
  const pair = (l) => [l.a.dpid, l.b.dpid].sort().join('-');
  const total = new Map();
  for (const l of L.links) total.set(pair(l), (total.get(pair(l)) || 0) + 1);
  const seen = new Map();
  let linksDown = 0;
  for (const l of L.links) {
    const A = L.nodes.get(l.a.dpid), B = L.nodes.get(l.b.dpid), k = pair(l);
    const i = seen.get(k) || 0;
    seen.set(k, i + 1);
    const off = (i - (total.get(k) - 1) / 2) * 6;
    const dx = B.x - A.x, dy = B.y - A.y, len = Math.hypot(dx, dy) || 1;
    const ox = (-dy / len) * off, oy = (dx / len) * off;
    const state = l.up === false ? 'down' : 'up';
    if (state === 'down') linksDown++;
    gLinks.append(s('line', { class: 'link', 'data-state': state, x1: r1(A.x + ox), y1: r1(A.y + oy), x2: r1(B.x + ox), y2: r1(B.y + oy) },
      s('title', { text: `link ${l.a.dpid} port ${l.a.port} \u2194 ${l.b.dpid} port ${l.b.port}\nstate: ${state}` })));
  }

  let swDown = 0;
  const badge = (kind, v, x) => s('g', { class: `badge ${kind}`, transform: `translate(${x},${-T.swH / 2})` },
    s('circle', { r: 7 }), s('text', { y: 3, text: v > 99 ? '99+' : v }));
  for (const n of L.nodes.values()) {
    const d = n.d, ports = Array.isArray(d.ports) ? d.ports : [];
    const cnt = {};
    for (const p of ports) cnt[p.role] = (cnt[p.role] || 0) + 1;
    const state = d.up === false ? 'down' : 'up';
    if (state === 'down') swDown++;
    const title = `switch ${d.dpid} (${state})\nports: ${ports.map((p) => `${p.port}:${p.role}`).join(' ') || 'none'}\nhosts: ${n.hosts.length}`;
    gSw.append(s('g', { class: 'switch', 'data-dpid': d.dpid, 'data-state': state, transform: `translate(${r1(n.x)},${r1(n.y)})` },
      s('title', { text: title }),
      s('rect', { x: -L.swW / 2, y: -T.swH / 2, width: L.swW, height: T.swH, rx: 5 }),
      s('text', { y: 4, text: shortDpid(d.dpid) }),
      cnt.down && badge('down', cnt.down, L.swW / 2 - 2), cnt.pending && badge('pending', cnt.pending, -L.swW / 2 + 2)));
  }

  const states = { up: 0, moved: 0, gone: 0 };
  const addHost = (x, cx, cy) => {
    const state = ['up', 'moved', 'gone'].includes(x.state) ? x.state : 'up';
    states[state]++;
    const at = x.at ? `at ${x.at.dpid} port ${x.at.port}` : 'location unknown';
    gHosts.append(s('circle', { class: 'host', 'data-mac': x.mac, 'data-state': state, 'data-ip': x.ipv4 || null,
      cx: r1(cx), cy: r1(cy), r: r1(Math.min(6, L.pitch * 0.34)) },
    s('title', { text: `host ${x.mac}\n${x.ipv4 || 'no IPv4'}\n${at}\nstate: ${x.state}` })));
    if (L.labels) gHosts.append(s('text', { class: 'hlabel', x: r1(cx), y: r1(cy + 16), text: x.ipv4 || String(x.mac).slice(-5) }));
  };
  for (const n of L.nodes.values()) {
    if (!n.hosts.length) continue;
    const y0 = n.y + L.hostTop, top = n.y + T.swH / 2;
    const cell = hostCells(n.grid, n.x, y0, L.pitch);
    if (!L.perHostLines) { // many hosts: one stub to a box holding the grid
      const w = n.grid.cols * L.pitch;
      gStubs.append(s('line', { x1: r1(n.x), y1: r1(top), x2: r1(n.x), y2: r1(y0 - L.pitch / 2) }),
        s('rect', { class: 'pool', x: r1(n.x - w / 2), y: r1(y0 - L.pitch / 2), width: r1(w), height: r1(n.grid.rows * L.pitch), rx: 3 }));
    }
    n.hosts.forEach((x, i) => {
      const [cx, cy] = cell(i);
      if (L.perHostLines) gStubs.append(s('line', { x1: r1(n.x), y1: r1(top), x2: r1(cx), y2: r1(cy) }));
      addHost(x, cx, cy);
    });
  }
  if (L.loose.length) {
    const a = L.looseAt, cell = hostCells(a.grid, a.x, a.y, L.pitch);
    gStubs.append(s('text', { class: 'caption', x: r1(a.x), y: r1(a.y - 20), text: `${L.loose.length} host(s) on unknown switches` }));
    L.loose.forEach((x, i) => addHost(x, ...cell(i)));
  }
  if (!L.nodes.size) gSw.append(s('text', { class: 'caption', x: L.width / 2, y: 60, text: 'no switches connected' }));
  svg.replaceChildren(gLinks, gStubs, gSw, gHosts);

  const N = (t.switches || []).length, E = (t.links || []).length, H = (t.hosts || []).length;
  $('topology-summary').textContent = `${N} switches, ${E} links, ${H} hosts`;
  $('topology-detail').textContent = [swDown && `${swDown} switch${swDown > 1 ? 'es' : ''} down`,
    linksDown && `${linksDown} link${linksDown > 1 ? 's' : ''} down`, states.moved && `${states.moved} moved`,
    states.gone && `${states.gone} gone`, t.version != null && `v${t.version}`].filter(Boolean).join(' \u00b7 ');
  document.body.dataset.topology = 'ready';
}

const TOPO_HINT = 'hover a switch, link or host for details; click a host to find it in the mapping';
function topoHover(ev) {
  const title = ev.target.closest('.switch, .host, .link')?.querySelector('title');
  $('topology-info').textContent = title ? title.textContent.replace(/\n/g, ' \u00b7 ') : TOPO_HINT;
}
function topoClick(ev) {
  const ip = ev.target.closest('.host')?.dataset.ip;
  if (ip) { $('mapping-filter').value = ip; renderMapping(); }
}

// ---- CPAM: rotations, countdown, VIP states, mapping ----------------------------------------

const VIP_STATES = ['primary', 'grace', 'reserved', 'quarantine', 'free'];
const CPAM_BAD = ['stale_vip', 'real_blocked', 'spoofed', 'setup_failed']; // highlighted when non-zero
const CPAM_COUNTERS = ['packet_ins', 'sessions_bound', 'live_sessions', 'dns_answered', ...CPAM_BAD];

function renderCpam() {
  const ok = cpamOk();
  $('cpam-notice').hidden = ok;
  $('cpam-notice').textContent = st.cpamDown || 'CPAM not running';
  $('rotate-now').disabled = !ok;
  const c = st.cpam || {};
  $('cpam-epoch').textContent = ok && c.epoch != null ? String(c.epoch) : DASH;
  $('cpam-interval').textContent = ok && c.interval_ms ? fmtDur(c.interval_ms) : DASH;
  $('cpam-state').textContent = ok ? `${fmtInt(c.hosts)} hosts${c.rotating ? ' \u00b7 rotating' : ''}` : '';
  const vs = (ok && c.vip_states) || {};
  const totalVips = VIP_STATES.reduce((a, k) => a + num(vs[k]), 0);
  $('vip-bar').replaceChildren(...VIP_STATES.filter((k) => num(vs[k]) > 0).map((k) =>
    h('span', { class: `seg ${k}`, style: `flex-grow:${num(vs[k])}`, title: `${k}: ${fmtInt(vs[k])}` })));
  $('vip-bar').title = `${fmtInt(totalVips)} VIPs`;
  $('vip-legend').replaceChildren(...VIP_STATES.map((k) => h('span', {}, h('i', { class: `seg ${k}` }), `${k} ${fmtInt(num(vs[k]))}`)));
  const l = c.last_rotation;
  $('cpam-last').textContent = ok && l && l.epoch != null
    ? `last: epoch ${l.epoch}, ${fmtMs(l.duration_ms)}, ${fmtInt(l.rotated)}/${fmtInt(l.hosts)} rotated, ` +
      `${fmtInt(l.preinstalled)} pre-installed${num(l.preinstall_failed) ? `, ${fmtInt(l.preinstall_failed)} failed` : ''}` +
      `${l.pool_exhausted ? ', POOL EXHAUSTED' : ''}`
    : '';
  const cn = (ok && c.counters) || {};
  $('cpam-counters').replaceChildren(...CPAM_COUNTERS.filter((k) => k in cn).map((k) =>
    h('span', { class: `chip${num(cn[k]) && CPAM_BAD.includes(k) ? ' warn' : ''}` }, `${k.replace(/_/g, ' ')} `, h('b', {}, fmtInt(cn[k])))));
  renderCountdown();
  const key = `${ok}|${st.next && st.next.ms}|${c.interval_ms}`;
  if (key !== st.tlKey) { st.tlKey = key; renderTimeline(); }
  renderMapping();
}

function renderCountdown() {
  const el = $('cpam-countdown');
  const bar = $('cpam-progress');
  if (!cpamOk() || !st.next) { el.textContent = DASH; bar.style.width = '0%'; return; }
  const iv = num(st.cpam.interval_ms) || 30000;
  const left = st.next.ms - serverNow();
  el.textContent = left > 0 ? `${(left / 1000).toFixed(1)} s` : st.cpam.rotating ? 'rotating\u2026' : 'due';
  bar.style.width = `${clamp(100 * (1 - left / iv), 0, 100)}%`;
}

const TICK_STEPS = [5e3, 1e4, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5];
// Drawn against the time of drawing, then slid left each second by a transform (so a hovered
// mark keeps its tooltip); redrawn on new data and every 30 s.
let tl = null;
function renderTimeline() {
  const svg = $('rotations-svg');
  tl = null;
  if (!cpamOk() && !st.rotations.length) { svg.replaceChildren(); return; }
  const [W, H] = fit(svg, 600, 120);
  const P = 10, base = H - 20;
  const now = serverNow();
  const iv = num(st.cpam && st.cpam.interval_ms) || 30000;
  const span = clamp(iv * 30, 60000, 3600000);
  const t0 = now - span, t1 = now + span * 0.12;
  const k = (W - 2 * P) / (t1 - t0);
  const x = (t) => r1(P + (t - t0) * k);
  const out = [s('defs', {}, s('clipPath', { id: 'tl-clip' }, s('rect', { x: P, y: 0, width: W - 2 * P, height: H }))),
    s('line', { class: 'axis', x1: P, y1: base, x2: W - P, y2: base })];
  const step = TICK_STEPS.find((v) => span / v <= 6) || 36e5;
  for (let t = now - step; t > t0; t -= step) {
    out.push(s('line', { class: 'grid', x1: x(t), y1: 8, x2: x(t), y2: base + 4 }),
      s('text', { class: 'tick', x: x(t), y: H - 5, text: `-${fmtSpan(now - t)}` }));
  }
  out.push(s('line', { class: 'now', x1: x(now), y1: 4, x2: x(now), y2: base + 4 }),
    s('text', { class: 'tick', x: x(now), y: H - 5, text: 'now' }));
  const moving = s('g', {});
  const marks = st.rotations.map((r) => r.value || r).filter((v) => typeof v.time_ms === 'number' && v.time_ms >= t0 - 60000);
  const maxDur = Math.max(1, ...marks.map((v) => num(v.duration_ms)));
  marks.forEach((v, i) => {
    const hgt = 6 + (base - 26) * Math.sqrt(num(v.duration_ms) / maxDur);
    const bad = num(v.preinstall_failed) > 0 || !!v.pool_exhausted;
    const failed = num(v.preinstall_failed) ? `, ${fmtInt(v.preinstall_failed)} failed` : '';
    const title = [`epoch ${v.epoch} at ${fmtClock(v.time_ms)}`, `duration ${fmtMs(v.duration_ms)}`,
      `rotated ${fmtInt(v.rotated)} of ${fmtInt(v.hosts)} hosts`,
      `pre-installed ${fmtInt(v.preinstalled)}${failed}${v.preinstall_confirmed === false ? ' (unconfirmed)' : ''}`,
      v.pool_exhausted && 'POOL EXHAUSTED', `grace ${fmtInt(v.grace)}, quarantine ${fmtInt(v.quarantine)}, free ${fmtInt(v.free)}`,
    ].filter(Boolean).join('\n');
    moving.append(s('g', { class: 'mark', 'data-state': bad ? 'warn' : i === marks.length - 1 ? 'last' : 'ok', 'data-epoch': v.epoch },
      s('title', { text: title }),
      s('rect', { class: 'hit', x: r1(x(v.time_ms) - 5), y: 0, width: 10, height: base }),
      s('rect', { class: 'bar', x: r1(x(v.time_ms) - 1.5), y: r1(base - hgt), width: 3, height: r1(hgt) })));
  });
  if (cpamOk() && st.next && st.next.ms > now - iv) {
    const nx = x(Math.min(st.next.ms, t1));
    moving.append(s('line', { class: 'next', x1: nx, y1: 10, x2: nx, y2: base }), s('text', { class: 'tick next', x: nx, y: 10, text: 'next' }));
  }
  const shown = marks.filter((v) => v.time_ms >= t0).length;
  out.push(s('g', { 'clip-path': 'url(#tl-clip)' }, moving),
    s('text', { class: 'tick start', x: P, y: 12, text: shown ? `${shown} rotations, longest ${fmtMs(maxDur)}` : 'no rotations in view' }));
  svg.replaceChildren(...out);
  tl = { moving, now, k };
}
function slideTimeline() {
  const dt = tl ? serverNow() - tl.now : -1;
  if (dt < 0 || dt > 30000) renderTimeline();
  else tl.moving.setAttribute('transform', `translate(${r1(-dt * tl.k)},0)`);
}

function renderMapping() {
  const tb = $('mapping-body');
  const meta = $('mapping-meta');
  if (!cpamOk()) {
    tb.replaceChildren(h('tr', {}, h('td', { colspan: 3, class: 'notice' }, st.cpamDown || 'loading\u2026')));
    meta.textContent = '';
    return;
  }
  const m = st.mapping;
  if (!m) { tb.replaceChildren(); return; }
  const f = $('mapping-filter').value.trim().toLowerCase();
  const rows = [];
  for (const x of m.hosts) {
    if (f && !`${x.name} ${x.real_ip} ${x.vip}`.toLowerCase().includes(f)) continue;
    const ch = st.changed.has(x.name);
    rows.push(h('tr', { class: ch ? 'changed' : null, title: ch ? 'VIP changed at the last epoch' : null },
      h('td', {}, String(x.name)), h('td', {}, x.real_ip || DASH), h('td', { class: 'vip' }, x.vip || DASH)));
  }
  if (!rows.length) rows.push(h('tr', {}, h('td', { colspan: 3, class: 'notice' }, f ? 'no match' : 'no protected hosts')));
  tb.replaceChildren(...rows);
  meta.textContent = `epoch ${m.epoch} \u00b7 ${f ? `${rows.length}/` : ''}${m.hosts.length} hosts \u00b7 ${st.changed.size} changed`;
}

// ---- RPPT histogram --------------------------------------------------------------------------

const PER_DECADE = 4, DECADES = 7; // bins from 1 us to 10 s
const NBINS = PER_DECADE * DECADES;

// [[upper_us, n]...] sorted, per-bucket counts (cumulative input is detected and undone).
function normBuckets(hist) {
  const b = (Array.isArray(hist && hist.buckets) ? hist.buckets : [])
    .filter((x) => Array.isArray(x) && x.length >= 2).map(([u, n]) => [Number(u), num(Number(n))])
    .sort((a, b) => a[0] - b[0]);
  const sum = b.reduce((a, x) => a + x[1], 0);
  const mono = b.every((x, i) => i === 0 || x[1] >= b[i - 1][1]);
  if (b.length > 1 && mono && hist.count && sum > hist.count * 1.01) return b.map((x, i) => [x[0], x[1] - (i ? b[i - 1][1] : 0)]);
  return b;
}
function quantile(b, total, q) {
  if (!total) return null;
  const rank = Math.max(1, Math.round(q * total));
  let seen = 0;
  for (const [u, n] of b) { seen += n; if (seen >= rank) return u; }
  return b.length ? b[b.length - 1][0] : null;
}
const binOf = (u) => clamp(Math.ceil(Math.log10(Math.max(u, 1e-3)) * PER_DECADE - 1e-9) - 1, 0, NBINS - 1);
const xOfUs = (u, W, P) => P + (clamp(Math.log10(Math.max(u, 1)), 0, DECADES) / DECADES) * (W - 2 * P);

function renderRppt() {
  const sel = $('rppt-select');
  const names = Object.keys(st.rppt);
  for (const n of names) {
    if (![...sel.options].some((o) => o.value === n)) sel.append(h('option', { value: n }, n));
    const cur = st.rppt[n];
    const base = st.rpptBase[n];
    if (!base || num(cur && cur.count) < num(base.count)) st.rpptBase[n] = { count: num(cur && cur.count), buckets: normBuckets(cur) };
  }
  const name = sel.value;
  const hist = st.rppt[name];
  const svg = $('rppt-svg');
  const stats = $('rppt-stats');
  if (!hist) {
    stats.textContent = names.length ? `no histogram ${name}` : 'waiting for data\u2026';
    svg.replaceChildren();
    return;
  }
  let b = normBuckets(hist);
  let total = b.reduce((a, x) => a + x[1], 0);
  const delta = $('rppt-delta').checked;
  if (delta) {
    const base = new Map((st.rpptBase[name] || { buckets: [] }).buckets);
    b = b.map(([u, n]) => [u, Math.max(0, n - (base.get(u) || 0))]).filter((x) => x[1] > 0);
    total = b.reduce((a, x) => a + x[1], 0);
  }
  const bins = new Array(NBINS).fill(0);
  for (const [u, n] of b) bins[binOf(u)] += n;
  const q = (p) => quantile(b, total, p);
  const p50 = q(0.5), p90 = q(0.9), p99 = q(0.99);
  stats.replaceChildren(
    h('span', {}, 'count ', h('b', {}, fmtInt(delta ? total : num(hist.count) || total))),
    h('span', {}, 'p50 ', h('b', {}, p50 == null ? DASH : fmtUs(p50))),
    h('span', {}, 'p90 ', h('b', {}, p90 == null ? DASH : fmtUs(p90))),
    h('span', {}, 'p99 ', h('b', {}, p99 == null ? DASH : fmtUs(p99))),
    h('span', { class: 'muted' }, delta ? 'since page load' : 'since start'));

  const c = rpptChart(svg);
  const max = Math.max(1, ...bins);
  bins.forEach((n, i) => {
    const hh = n ? Math.max(1.5, (c.base - 42) * (n / max)) : 0; // the top 42 px hold the labels
    const { rect, title } = c.bars[i];
    rect.setAttribute('y', r1(c.base - hh));
    rect.setAttribute('height', r1(hh));
    const pct = ((100 * n) / Math.max(1, total)).toFixed(1);
    title.textContent = `${fmtUs(10 ** (i / PER_DECADE))} \u2013 ${fmtUs(10 ** ((i + 1) / PER_DECADE))}: ${fmtInt(n)} (${pct} %)`;
  });
  c.maxLabel.textContent = `max bin ${fmtInt(max)}`;
  c.caption.textContent = total ? '' : 'no samples yet';
  [p50, p99].forEach((v, i) => {
    const { line, text } = c.qs[i];
    const xx = v == null ? -99 : r1(xOfUs(v, c.W, c.P));
    for (const [el, attr] of [[line, 'x1'], [line, 'x2'], [text, 'x']]) el.setAttribute(attr, xx);
  });
}

// The chart's elements, made once per size: each tick only moves them (tooltips survive).
let rp = null;
function rpptChart(svg) {
  const [W, H] = fit(svg, 600, 220);
  if (rp && rp.W === W && rp.H === H && svg.firstChild) return rp;
  const P = 14, base = H - 22, bw = (W - 2 * P) / NBINS;
  const out = [];
  for (let d = 0; d <= DECADES; d++) {
    const xx = r1(P + d * PER_DECADE * bw);
    out.push(s('line', { class: 'grid', x1: xx, y1: 16, x2: xx, y2: base }),
      s('text', { class: `tick${d === 0 ? ' start' : d === DECADES ? ' end' : ''}`, x: xx, y: H - 6,
        text: ['1 ', '10 ', '100 '][d % 3] + [`${MU}s`, 'ms', 's'][Math.floor(d / 3)] })); // 1 us .. 10 s
  }
  const bars = Array.from({ length: NBINS }, (_, i) => {
    const title = s('title', {});
    const rect = s('rect', { class: 'bar', x: r1(P + i * bw + 1), y: base, width: r1(bw - 2), height: 0 }, title);
    out.push(rect);
    return { rect, title };
  });
  const qs = ['p50', 'p99'].map((label, i) => {
    const q = { line: s('line', { class: `q ${label}`, y1: 14, y2: base }),
      text: s('text', { class: `tick q ${label}`, y: 24 + 12 * i, text: label }) };
    out.push(q.line, q.text);
    return q;
  });
  const maxLabel = s('text', { class: 'tick start', x: P, y: 12 });
  const caption = s('text', { class: 'caption', x: W / 2, y: H / 2 });
  out.push(s('line', { class: 'axis', x1: P, y1: base, x2: W - P, y2: base }), maxLabel, caption);
  svg.replaceChildren(...out);
  rp = { W, H, P, base, bars, qs, maxLabel, caption };
  return rp;
}

// ---- flows and PacketIn rate -----------------------------------------------------------------

function renderFlows() {
  const flows = st.flows || {};
  const keys = Object.keys(flows).sort();
  const box = $('flows-list');
  const sig = keys.length ? keys.join(',') : `none:${st.mode}`;
  if (sig !== st.flowSig) {
    st.flowSig = sig;
    st.flowRows = new Map();
    box.replaceChildren(...keys.map((k) => {
      const r = { bar: h('span', { class: 'fill' }), n: h('span', { class: 'num' }) };
      st.flowRows.set(k, r);
      return h('div', { class: 'frow', title: `switch ${k}` }, h('span', { class: 'lbl' }, shortDpid(k)), h('span', { class: 'bar' }, r.bar), r.n);
    }));
    const why = 'no flow counts yet';
    if (!keys.length) box.append(h('div', { class: 'notice' }, why));
  }
  let total = 0, max = 1;
  for (const k of keys) { total += num(flows[k]); max = Math.max(max, num(flows[k])); }
  for (const k of keys) {
    const r = st.flowRows.get(k);
    r.bar.style.width = `${(100 * num(flows[k])) / max}%`;
    r.n.textContent = fmtInt(num(flows[k]));
  }
  $('flows-total').textContent = `${fmtInt(total)} flows on ${keys.length} switches`;
}

function addRx(t, v) {
  const p = st.rx;
  st.rx = { t, v };
  if (!p || t <= p.t || v < p.v) return;
  st.rates.push((v - p.v) / ((t - p.t) / 1000));
  if (st.rates.length > 120) st.rates.shift();
  renderSpark();
}

function renderSpark() {
  const svg = $('pktin-svg');
  const r = st.rates;
  const [W, H] = fit(svg, 600, 56);
  const max = Math.max(1, ...r);
  const n = 120;
  const pts = r.map((v, i) => `${r1(W - (r.length - 1 - i) * (W / (n - 1)))},${r1(H - 3 - (v / max) * (H - 8))}`);
  const out = [];
  if (pts.length > 1) {
    out.push(s('path', { class: 'area', d: `M${pts[0].split(',')[0]},${H} L${pts.join(' L')} L${W},${H} Z` }),
      s('polyline', { class: 'line', points: pts.join(' ') }));
  }
  svg.replaceChildren(...out);
  const cur = r.length ? r[r.length - 1] : 0;
  $('pktin-rate').textContent = `now ${fmtInt(cur)}/s \u00b7 peak ${fmtInt(r.length ? max : 0)}/s (2 min)`;
}

// ---- apps and Coordinator --------------------------------------------------------------------

// The table is rebuilt only when the snapshot changes (beyond heartbeat times); ages and states
// are updated in place every second.
let appRows = []; // [{inst, age: td, state: span}]
function renderApps() {
  const a = st.apps;
  const tb = $('apps-body');
  if (!a) { tb.replaceChildren(h('tr', {}, h('td', { colspan: 5, class: 'notice' }, 'loading\u2026'))); return; }
  const co = (a.coordinator && typeof a.coordinator === 'object') ? a.coordinator : {};
  const insts = Array.isArray(co.instances) ? co.instances : [];
  const id = (x) => `${x.app_id}\u0000${x.instance}`;
  const sig = JSON.stringify(a, (k, v) => (k === 'last_seen_ns' ? undefined : v));
  if (sig === st.appsSig) {
    const byId = new Map(insts.map((i) => [id(i), i]));
    for (const r of appRows) r.inst = byId.get(id(r.inst)) || r.inst;
    updateAppAges();
    return;
  }
  st.appsSig = sig;
  const sets = new Map((Array.isArray(co.assignments) ? co.assignments : []).map((x) => [id(x), x]));
  const rows = [];
  appRows = [];
  for (const i of insts) {
    const hb = num(i.registration && i.registration.heartbeat_ms);
    const set = sets.get(id(i));
    const items = set && Array.isArray(set.assignments) ? set.assignments : [];
    const asgTitle = items.map((x) => `${x.key}${x.freq ? ` @${x.freq}` : ''} \u2192 ${(x.consumers || []).join(', ') || 'nobody'}`).join('\n');
    const roles = i.registration && Array.isArray(i.registration.roles) ? i.registration.roles.join('+') : '';
    const r = { inst: i, age: h('td', { title: hb ? `heartbeat every ${fmtDur(hb)}` : null }), state: h('span', {}) };
    appRows.push(r);
    rows.push(h('tr', {}, h('td', {}, String(i.app_id)), h('td', { title: roles ? `roles: ${roles}` : null }, String(i.instance)),
      h('td', {}, r.state), r.age,
      h('td', { title: asgTitle || null }, set ? `${items.length} key${items.length === 1 ? '' : 's'}` +
        `${set.active === false ? ' (inactive)' : ''}${set.epoch != null ? ` \u00b7 e${set.epoch}` : ''}` : DASH)));
  }
  // Apps that run in-process without a Coordinator registration.
  const known = new Set(insts.map((i) => i.app_id));
  const apps = Array.isArray(a.apps) ? a.apps : [];
  for (const x of apps) {
    if (known.has(x.name)) continue;
    rows.push(h('tr', {}, h('td', {}, String(x.name)), h('td', {}, DASH),
      h('td', {}, h('span', { class: 'state local' }, 'local')), h('td', {}, DASH), h('td', {}, DASH)));
  }
  if (!rows.length) rows.push(h('tr', {}, h('td', { colspan: 5, class: 'notice' }, 'no apps')));
  tb.replaceChildren(...rows);
  const uns = Array.isArray(co.unsatisfied) ? co.unsatisfied : [];
  $('apps-unsatisfied').replaceChildren(...uns.slice(0, 8).map((u) =>
    h('div', { class: 'warn' }, `unsatisfied: ${u.consumer} wants ${u.key} from ${u.producer}` +
      `${u.wanted ? ` @${u.wanted}` : ''}${u.capped ? ` (capped ${u.capped})` : ''}`)),
  ...(uns.length > 8 ? [h('div', { class: 'muted' }, `\u2026 and ${uns.length - 8} more`)] : []));
  $('apps-counters-body').replaceChildren(...apps.map((x) => h('div', { class: 'chips' }, h('b', {}, String(x.name)),
    ...Object.entries(x.counters || {}).filter(([, v]) => typeof v === 'number')
      .map(([k, v]) => h('span', { class: 'chip' }, `${k} `, h('b', {}, fmtInt(v)))))));
  updateAppAges();
}

function updateAppAges() {
  const now = serverNow();
  const counts = {};
  for (const r of appRows) {
    const i = r.inst;
    const hb = num(i.registration && i.registration.heartbeat_ms);
    let age = typeof i.last_seen_ns === 'number' ? now - i.last_seen_ns / 1e6 : null;
    if (age != null && (age < -60000 || age > 3e11)) age = null; // not a Unix clock: do not guess
    // Late: no heartbeat for 3 intervals as of the snapshot (not as of now: it may be 2 s old).
    const lag = age == null ? 0 : age - (now - (st.appsAt || now));
    const state = i.status === 'offline' ? 'offline' : hb && lag > 3 * hb + 500 ? 'late' : i.active === false ? 'standby' : 'active';
    counts[state] = (counts[state] || 0) + 1;
    r.age.textContent = age == null ? DASH : `${fmtDur(Math.max(0, age))} ago`;
    r.state.className = `state ${state}`;
    r.state.textContent = state;
    r.state.title = `status ${i.status}, ${i.active ? 'active' : 'standby'}`;
  }
  const co = (st.apps && st.apps.coordinator) || {};
  $('apps-meta').textContent = [`${appRows.length} instances`, ...Object.entries(counts).map(([k, v]) => `${v} ${k}`),
    co.epoch != null ? `epoch ${co.epoch}` : null].filter(Boolean).join(' \u00b7 ');
}

// ---- start -----------------------------------------------------------------------------------

const startedAt = Date.now();
function start() {
  $('mapping-filter').addEventListener('input', guard(renderMapping));
  $('rppt-select').addEventListener('change', guard(renderRppt));
  $('rppt-delta').addEventListener('change', guard(renderRppt));
  $('rotate-now').addEventListener('click', () => { rotateNow(); });
  $('topology-svg').addEventListener('mouseover', guard(topoHover));
  $('topology-svg').addEventListener('click', guard(topoClick));
  let resizeTimer = null;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(guard(() => { if (st.topo) renderTopology(st.topo); renderTimeline(); renderRppt(); renderSpark(); }), 150);
  });
  for (const f of [renderCpam, renderApps, renderFlows, renderRppt]) f();
  for (const f of [refreshHealth, refreshTopology, refreshCpam, refreshApps]) f();
  openStream();
  setInterval(guard(renderCountdown), 250);
  setInterval(guard(() => {
    slideTimeline();
    updateAppAges();
    // A stream that stays open but sends nothing counts as failed.
    if ((st.mode === 'live' || st.mode === 'connecting') && Date.now() - (st.lastTickAt || startedAt) > 5000) startPolling();
  }), 1000);
  // While live, what ticks do not carry is fetched now and then (polling fetches it itself).
  const whileLive = (fn, ms) => setInterval(guard(() => { if (st.mode === 'live') fn(); }), ms);
  whileLive(refreshApps, 2000);
  whileLive(refreshCpam, 5000);
  whileLive(refreshHealth, 10000);
}

guard(start)();

// For fleet.js (one module instance: both load '/app.js').
export { api, ApiError, h, $, notify, report, guard, num, fmtInt, fmtMs, renderHealth, DASH };
