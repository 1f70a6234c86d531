// Checks a `ggprof export --chrome` file against the Trace Event Format's rules that Perfetto UI and
// chrome://tracing rely on, and prints what it found as KEY=VALUE lines (counts of violations are 0 when good).
// usage: node check_chrome_trace.js TRACE.json
'use strict';
const fs = require('fs');

function say(k, v) { console.log(k + '=' + v); }

let doc;
try {
  doc = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  say('valid_json', 1);
} catch (e) {
  say('valid_json', 0);
  console.error(String(e));
  process.exit(0);
}
const ev = Array.isArray(doc) ? doc : doc.traceEvents;
say('has_trace_events', Array.isArray(ev) ? 1 : 0);
if (!Array.isArray(ev)) process.exit(0);

const isInt = (v) => Number.isInteger(v);
const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
const key = (e) => e.pid + ':' + e.tid;
const bad = { x_fields: 0, x_negative: 0, ns_not_exact: 0, not_monotonic: 0, bad_nesting: 0, unknown_phase: 0,
  m_fields: 0, op_args: 0, copy_args: 0, c_fields: 0, c_not_monotonic: 0 };
const counters = new Map(); // counter events (memory): per pid and name, the last ts and the values' keys
const byCat = {}, tracks = new Map(), lastTs = new Map(), stacks = new Map();
const threadNames = new Map(), processNames = new Set();
let fractional = 0;
const flows = new Map();

for (const e of ev) {
  if (e.ph === 'X') {
    if (typeof e.name !== 'string' || !e.name || !isNum(e.ts) || !isNum(e.dur) || !isInt(e.pid) || !isInt(e.tid) ||
        typeof e.cat !== 'string' || typeof e.args !== 'object') { bad.x_fields++; continue; }
    if (e.ts < 0 || e.dur < 0) bad.x_negative++;
    // microseconds with the nanoseconds kept: ts * 1000 is a whole number of ns
    for (const v of [e.ts, e.dur]) if (Math.abs(v * 1000 - Math.round(v * 1000)) > 1e-3) bad.ns_not_exact++;
    if (!isInt(e.ts)) fractional++;
    byCat[e.cat] = (byCat[e.cat] || 0) + 1;
    const k = key(e);
    if (!tracks.has(k)) tracks.set(k, []);
    tracks.get(k).push(e);
    if (lastTs.has(k) && e.ts < lastTs.get(k)) bad.not_monotonic++;
    lastTs.set(k, e.ts);
    // slices of a row nest or follow each other (compared in integer ns)
    const s = stacks.get(k) || [];
    const a = Math.round(e.ts * 1000), b = a + Math.round(e.dur * 1000);
    while (s.length && s[s.length - 1] <= a) s.pop();
    if (s.length && s[s.length - 1] < b) bad.bad_nesting++;
    s.push(b);
    stacks.set(k, s);
    if (e.cat === 'op') {
      const g = e.args;
      if (typeof g.op !== 'string' || !('tensor' in g) || !Array.isArray(g.shape) || !Array.isArray(g.src_shapes) ||
          !Array.isArray(g.src_types) || g.src_types.length !== g.src_shapes.length || typeof g.type !== 'string' ||
          !isInt(g.bytes) || !isInt(g.node_index) || !isInt(g.graph_id)) bad.op_args++;
    }
    if (e.cat === 'copy') {
      const g = e.args;
      if (typeof g.copy !== 'string' || !Array.isArray(g.shape) || !isInt(g.bytes)) bad.copy_args++;
    }
  } else if (e.ph === 'M') {
    if (!isInt(e.pid) || typeof e.name !== 'string' || typeof e.args !== 'object') { bad.m_fields++; continue; }
    if (e.name === 'process_name' && typeof e.args.name === 'string' && e.args.name) processNames.add(e.pid);
    if (e.name === 'thread_name' && typeof e.args.name === 'string' && e.args.name) threadNames.set(key(e), e.args.name);
  } else if (e.ph === 'C') {
    // a counter: a name, a process, a time, and numbers only in args (Perfetto draws one track per arg)
    if (typeof e.name !== 'string' || !e.name || !isInt(e.pid) || !isNum(e.ts) || e.ts < 0 || typeof e.args !== 'object' ||
        !Object.values(e.args).length || !Object.values(e.args).every(isNum)) { bad.c_fields++; continue; }
    const k = e.pid + ':' + e.name, last = counters.get(k);
    if (last && e.ts < last.ts) bad.c_not_monotonic++;
    counters.set(k, { ts: e.ts, args: e.args, max: Math.max(last ? last.max : 0, Object.values(e.args).reduce((a, b) => a + b, 0)) });
  } else if (e.ph === 's' || e.ph === 'f') {
    if (!flows.has(e.id)) flows.set(e.id, []);
    flows.get(e.id).push(e);
  } else {
    bad.unknown_phase++;
  }
}
for (const [k, v] of Object.entries(bad)) say(k, v);
say('x_events', Object.values(byCat).reduce((a, b) => a + b, 0));
say('x_fractional_ts', fractional);
for (const c of ['op', 'sync', 'copy', 'split', 'graph', 'run', 'batch', 'region', 'idle']) say('cat_' + c, byCat[c] || 0);
say('counters', Array.from(counters.keys()).map((k) => k.split(':').slice(1).join(':')).sort().join('|'));
// the most each counter's kinds reached together at one instant is what `ggprof memory` says a backend held at most
say('counter_max', Array.from(counters.entries()).map(([k, c]) => k.split(':').slice(1).join(':') + '=' + c.max).sort().join('|'));
let unnamedTracks = 0, unnamedPids = 0;
for (const k of tracks.keys()) {
  if (!threadNames.has(k)) unnamedTracks++;
  if (!processNames.has(Number(k.split(':')[0]))) unnamedPids++;
}
say('tracks', tracks.size);
say('track_names', Array.from(tracks.keys()).map((k) => threadNames.get(k)).sort().join('|'));
say('tracks_without_name', unnamedTracks);
say('tracks_without_process_name', unnamedPids);

// Flows: one "s" and one "f" per id, same cat and name; "f" binds with bp "e" to the slice enclosing it.
// The "s" must fall inside a copy slice of its row and the "f" inside an op slice of its row.
const enclosing = (e, cat) => (tracks.get(key(e)) || []).filter((x) => x.cat === cat && x.ts <= e.ts && e.ts <= x.ts + x.dur);
let flowBad = 0, flowBind = 0, flowOrder = 0;
const targets = [];
for (const [id, list] of flows) {
  const s = list.filter((e) => e.ph === 's'), f = list.filter((e) => e.ph === 'f');
  if (s.length !== 1 || f.length !== 1 || s[0].cat !== f[0].cat || s[0].name !== f[0].name || f[0].bp !== 'e' ||
      !isNum(s[0].ts) || !isNum(f[0].ts) || id === undefined) { flowBad++; continue; }
  const from = enclosing(s[0], 'copy'), to = enclosing(f[0], 'op');
  if (from.length !== 1 || to.length !== 1) { flowBind++; continue; }
  // the op starts after the copy ended
  if (to[0].ts < from[0].ts + from[0].dur) flowOrder++;
  targets.push(from[0].args.tensor + '>' + to[0].args.tensor + '@' + to[0].args.node_index);
}
say('flows', flows.size);
say('flow_malformed', flowBad);
say('flow_unbound', flowBind);
say('flow_op_before_copy_end', flowOrder);
say('flow_targets', targets.sort().join(','));
