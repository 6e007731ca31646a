// sdnator dashboard, the #fleet panel: the additive-manufacturing fleet of src/apps/fleet/ as
// GET /api/v1/fleet reports it (printer states, digital twins, sensors, the run, the latest
// scheduling decision). An ES module beside app.js, whose fetch helper (and so its bearer token
// from #token=) it uses; no libraries.
//
// The panel stays hidden until /api/v1/fleet answers 200 (asked at load, then every 30 s); while
// shown it refreshes every second, and hides again on a 404. It also asks /api/v1/switches once:
// a 503 means this process has no switch runtime (`sdnator fleet run --api`), and body gets
// data-runtime="none": the network panels then read "no switch runtime", and are hidden while
// the fleet panel is shown (style.css).
//
// Hooks for headless runs: body data-fleet="on|off"; one `tr[data-printer]` per printer in
// #fleet-body (data-status, data-anomaly); #fleet-summary holds the summary chips.

import { api, h, $, report, num, fmtInt, fmtMs, renderHealth, DASH } from '/app.js';

const CHECK_MS = 30000;  // while hidden (each miss is a counted 404)
const REFRESH_MS = 1000; // while shown
const STATUSES = ['idle', 'printing', 'maintenance', 'booting', 'unreachable'];
const DEG = '\u00b0C';

const fl = {
  shown: false,
  data: null,      // the last 200 body
  rows: new Map(), // name -> the row's cells (rebuilt when the set of printers changes)
  sig: '',
  runtime: undefined, // 'none' | 'switches' once known
};

// ---- formatting --------------------------------------------------------------------------

const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
// Simulated minutes as h:mm.
function hm(min) {
  if (!isNum(min)) return DASH;
  const m = Math.max(0, Math.round(min));
  return `${Math.floor(m / 60)}:${String(m % 60).padStart(2, '0')}`;
}
const obj = (v) => (v && typeof v === 'object' && !Array.isArray(v) ? v : null);
const chip = (label, value, cls) => h('span', { class: `chip${cls ? ` ${cls}` : ''}` }, `${label} `, h('b', {}, String(value)));
// "k: v" lines of an object's plain fields (for tooltips).
const fields = (o) => Object.entries(obj(o) || {}).filter(([, v]) => v == null || typeof v !== 'object')
  .map(([k, v]) => `${k}: ${v}`).join('\n');

// ---- no switch runtime --------------------------------------------------------------------

async function checkRuntime() {
  try {
    await api('/switches');
    fl.runtime = 'switches';
  } catch (e) {
    if (e.status === 503) fl.runtime = 'none';
    else if (e.status !== 0) fl.runtime = 'switches'; // some other answer: the runtime is there
  }
  if (fl.runtime) {
    document.body.dataset.runtime = fl.runtime;
    renderHealth(); // "no switch runtime" instead of "0 switches"
  }
}

// ---- polling ------------------------------------------------------------------------------

async function refresh() {
  if (!fl.runtime) await checkRuntime();
  try {
    const d = await api('/fleet');
    if (!obj(d) || !Array.isArray(d.printers)) throw new Error('unexpected /fleet shape');
    fl.data = d;
    show(true);
    $('fleet').dataset.stale = 'false';
    render(d);
  } catch (e) {
    if (e.status === 404) show(false);
    else if (e.status === 0) { if (fl.shown) $('fleet').dataset.stale = 'true'; } // app.js marks the connection
    else report('fleet', e);
  }
}

function loop() {
  refresh().finally(() => setTimeout(loop, fl.shown ? REFRESH_MS : CHECK_MS));
}

function show(on) {
  if (on === fl.shown) return;
  fl.shown = on;
  $('fleet').hidden = !on;
  document.body.dataset.fleet = on ? 'on' : 'off';
  // Panels now shown or hidden change size: SVGs that fit their box redraw on resize.
  window.dispatchEvent(new Event('resize'));
}

// ---- rendering ----------------------------------------------------------------------------

function render(d) {
  const printers = d.printers.filter(obj);
  renderSummary(d, printers);
  renderTable(printers, d.sim_min);
}

function renderSummary(d, printers) {
  const f = obj(d.fleet);
  const st = (p) => (obj(p.state) || {}).status;
  const count = (pred) => printers.filter(pred).length;
  const total = f && isNum(f.printers) ? f.printers : printers.length;
  const printing = f && isNum(f.printing) ? f.printing : count((p) => st(p) === 'printing');
  const maint = f && isNum(f.in_maintenance) ? f.in_maintenance : count((p) => st(p) === 'maintenance');
  const anomalies = f && isNum(f.anomalies) ? f.anomalies : count((p) => obj(p.anomaly) && p.anomaly.anomaly === true);
  const chips = [chip('sim', hm(d.sim_min)), chip('printing', `${fmtInt(printing)}/${fmtInt(total)}`),
    chip('in maintenance', fmtInt(maint), maint ? 'warn' : ''), chip('anomalies', fmtInt(anomalies), anomalies ? 'bad' : '')];
  if (f && isNum(f.online) && f.online !== total) chips.push(chip('online', `${fmtInt(f.online)}/${fmtInt(total)}`, 'warn'));
  const run = obj(d.run);
  const cfg = run && (obj(run.config) || obj(run.result));
  if (cfg && (cfg.algorithm || cfg.scenario)) chips.push(chip('scheduler', [cfg.algorithm, cfg.scenario].filter(Boolean).join(' \u00b7 ')));
  if (run && run.phase === 'end') {
    const r = obj(run.result) || {};
    chips.push(chip('run', r.ok === false ? 'failed' : `done, makespan ${hm(r.makespan_min)}`, r.ok === false ? 'bad' : ''));
  }
  const dec = obj(d.decision);
  if (dec) {
    const c = chip('decision', [dec.algorithm, dec.trigger, isNum(dec.solve_ms) ? fmtMs(dec.solve_ms) : null].filter(Boolean).join(' \u00b7 '));
    c.title = [`at ${hm(dec.sim_min)}`, isNum(dec.jobs) && `${dec.jobs} jobs`, dec.note && `note: ${dec.note}`,
      dec.fell_back && 'fell back to LPT'].filter(Boolean).join('\n');
    chips.push(c);
  }
  $('fleet-summary').replaceChildren(...chips);
  $('fleet-meta').textContent = `${fmtInt(printers.length)} printers${d.truncated ? ' (first 1000)' : ''}`;
}

const COLS = ['printer', 'status', 'job', 'progress', 'queue', 'finish', 'speed', 'anomaly', 'hotend', 'bed'];

function makeRow(name) {
  const c = Object.fromEntries(COLS.map((k) => [k, h('td', { class: `f-${k}` })]));
  c.printer.textContent = name;
  c.statusEl = h('span', { class: 'fstate' });
  c.status.append(c.statusEl);
  c.fill = h('span', { class: 'fill' });
  c.pct = h('span', { class: 'pct' });
  c.progress.append(h('span', { class: 'pbar' }, c.fill), c.pct);
  c.tr = h('tr', { 'data-printer': name }, ...COLS.map((k) => c[k]));
  return c;
}

function renderTable(printers, simMin) {
  const names = printers.map((p) => String(p.name));
  const sig = names.join('\u0000');
  const tb = $('fleet-body');
  if (sig !== fl.sig) {
    fl.sig = sig;
    fl.rows = new Map(names.map((n) => [n, makeRow(n)]));
    tb.replaceChildren(...[...fl.rows.values()].map((c) => c.tr));
    if (!names.length) tb.append(h('tr', {}, h('td', { colspan: COLS.length, class: 'notice' }, 'no printers yet')));
  }
  for (const p of printers) updateRow(fl.rows.get(String(p.name)), p, simMin);
}

function temp(td, s) {
  const x = obj(s);
  if (!x || !isNum(x.current)) { td.textContent = DASH; td.className = 'f-temp'; td.title = ''; return; }
  const off = isNum(x.target) && x.target > 0 && Math.abs(x.current - x.target) > 5;
  td.textContent = `${x.current.toFixed(1)} / ${isNum(x.target) ? Math.round(x.target) : '?'} ${DEG}`;
  td.className = `f-temp${off ? ' off' : ''}`;
  td.title = `current ${x.current.toFixed(2)} ${DEG}, target ${x.target} ${DEG}${x.job_state ? `\njob ${x.job_state}` : ''}`;
}

function updateRow(c, p, simMin) {
  const s = obj(p.state) || {};
  const m = obj(p.machine);
  const q = obj(p.queue);
  const a = obj(p.anomaly);
  const job = obj(s.job);

  const status = typeof s.status === 'string' ? s.status : (m && m.status) || 'unknown';
  const pending = s.maintenance_pending === true || (m && m.maintenance_pending === true);
  c.statusEl.className = `fstate ${STATUSES.includes(status) ? status : 'other'}`;
  c.statusEl.textContent = pending && status !== 'maintenance' ? `${status} \u2192 maint.` : status;
  c.tr.dataset.status = status;
  c.status.title = [m && isNum(m.maintenance_until) && m.maintenance_until > num(simMin) && `maintenance until ${hm(m.maintenance_until)}`,
    m && typeof m.available === 'boolean' && `twin: ${m.available ? 'available' : 'not available'}`,
    pending && 'maintenance pending'].filter(Boolean).join('\n');

  if (job) {
    const st = job.state && job.state !== 'printing' ? ` (${job.state})` : '';
    c.job.textContent = `${job.name || DASH}${st}`;
    c.job.title = fields(job.spec) || fields(job);
    const pr = isNum(job.progress) ? Math.min(1, Math.max(0, job.progress)) : 0;
    c.fill.style.width = `${(100 * pr).toFixed(1)}%`;
    c.pct.textContent = `${Math.round(100 * pr)} %`;
    c.progress.title = isNum(job.time_total_s) ? `${hm(num(job.time_elapsed_s) / 60)} of ${hm(job.time_total_s / 60)} (h:mm)` : '';
  } else {
    c.job.textContent = DASH;
    c.job.title = '';
    c.fill.style.width = '0%';
    c.pct.textContent = '';
    c.progress.title = '';
  }

  const ql = isNum(s.queue_length) ? s.queue_length : q && isNum(q.length) ? q.length : null;
  c.queue.textContent = ql == null ? DASH : fmtInt(ql);
  c.queue.title = q ? [`twin: ${fmtInt(q.length)} queued`, Array.isArray(q.jobs) && q.jobs.length && `jobs: ${q.jobs.slice(0, 20).join(', ')}${q.jobs.length > 20 ? ', \u2026' : ''}`,
    isNum(q.average_wait) && `average wait ${q.average_wait.toFixed(1)} min`].filter(Boolean).join('\n') : '';
  c.finish.textContent = q ? hm(q.finish_time) : DASH;
  c.finish.title = m && isNum(m.current_end) ? `current job ends at ${hm(m.current_end)}` : '';
  c.speed.textContent = m && isNum(m.speed) ? `\u00d7${m.speed.toFixed(2)}` : DASH;
  c.speed.title = m ? `print time factor learned by the twin (1 = nominal)${isNum(m.setup) ? `; setup ${m.setup.toFixed(1)} min per job` : ''}` : '';

  const bad = a && a.anomaly === true;
  c.tr.dataset.anomaly = bad ? 'true' : 'false';
  c.anomaly.replaceChildren(bad
    ? h('span', { class: 'flag' }, `\u2691 ${a.sensor || '?'} ${isNum(a.residual) ? `${a.residual.toFixed(1)} ${DEG}` : ''}`)
    : h('span', { class: 'muted' }, a ? 'ok' : DASH));
  c.anomaly.title = a ? `at ${hm(a.sim_min)}` : '';
  temp(c.hotend, p.hotend);
  temp(c.bed, p.bed);
}

// ---- start --------------------------------------------------------------------------------

document.body.dataset.fleet = 'off';
loop();
