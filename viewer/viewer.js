// ggprof's HTML timeline: reads the trace embedded by `ggprof export --html` and draws it; no network, no libraries.
(function () {
  'use strict';

  const marks = { script: performance.now() };
  const D = JSON.parse(document.getElementById('ggprof-data').textContent);
  marks.parsed = performance.now();
  const $ = (id) => document.getElementById(id);

  // ---------------------------------------------------------------- data: columns into typed arrays
  // Each column is a string of zigzag-coded integers, 5 bits a character, the last character of a number
  // from LAST and the others from MORE (export_html.c writes them). Records come sorted by lane, then start.
  const LAST = '0123456789ABCDEFGHIJKLMNOPQRSTUV', MORE = 'WXYZabcdefghijklmnopqrstuvwxyz$%';
  const DIGIT = new Int8Array(128).fill(-1);
  for (let i = 0; i < 32; i++) { DIGIT[LAST.charCodeAt(i)] = i; DIGIT[MORE.charCodeAt(i)] = 32 + i; }
  // One output type (Float64Array) keeps this loop monomorphic: it is most of the start-up of a 1M-record page.
  function decode(s, n) {
    const out = new Float64Array(n);
    if (s === '') return out; // a column of zeros is left empty
    let acc = 0, j = 0;
    for (let p = 0; p < s.length; p++) {
      const v = DIGIT[s.charCodeAt(p)];
      if (v >= 32) { acc = acc * 32 + (v - 32); continue; }
      if (v < 0 || j === n) throw new Error('ggprof viewer: bad data in a column at character ' + p);
      acc = acc * 32 + v;
      if (acc < 1073741824) out[j++] = acc & 1 ? -(acc >> 1) - 1 : acc >> 1; // small ints: no float division
      else { const h = Math.floor(acc / 2); out[j++] = acc - 2 * h === 1 ? -h - 1 : h; }
      acc = 0;
    }
    if (j !== n) throw new Error('ggprof viewer: a column has ' + j + ' values, expected ' + n);
    return out;
  }
  const N = D.n_shown;
  const C = D.cols;
  // What the first paint needs; the rest (tensor, node, graph, bytes) is decoded right after it.
  const dur = decode(C.d, N);
  const sig = decode(C.s, N);
  const start = decode(C.t, N); // the gap after the previous record of the lane
  marks.decoded = performance.now();
  // sigs[s] = [name index, shapes index, types, output, bytes, bytes read + written (the roofline model; -1: none)]
  const sigKind = new Float64Array(D.sigs.length), sigBytes = new Float64Array(D.sigs.length);
  D.sigs.forEach((g, k) => { sigKind[k] = g[0]; sigBytes[k] = g[4]; });
  const kind = new Float64Array(N);
  const lanes = [];
  {
    let p = 0;
    for (const l of D.lanes) {
      const L = { name: l.name, pid: l.pid, kind: l.kind, begin: p, end: p + l.n, maxDur: 0 };
      let end = 0;
      for (let i = L.begin; i < L.end; i++) {
        start[i] += end;
        end = start[i] + dur[i];
        kind[i] = sigKind[sig[i]];
        if (dur[i] > L.maxDur) L.maxDur = dur[i];
      }
      lanes.push(L);
      p = L.end;
    }
  }
  let tensor = null, node = null, graph = null, bytes = null;
  function decodeRest() {
    tensor = decode(C.tn, N);
    node = decode(C.n, N);
    const g = decode(C.g, N); // the change of graph id
    const b = decode(C.b, N); // the difference from the bytes of the record's signature
    for (const L of lanes) {
      let acc = 0;
      for (let i = L.begin; i < L.end; i++) {
        acc += g[i];
        g[i] = acc;
        b[i] += sigBytes[sig[i]];
      }
    }
    graph = g;
    bytes = b;
  }
  marks.columns = performance.now();
  const span = Math.max(D.span_ns, 1);
  const names = D.names.map((n) => n[0]);
  const rtype = D.names.map((n) => n[1]); // 0 OP, 1 COPY, 2 SYNC, 3 a split that has no op records
  const TYPE_LABEL = ['OP', 'COPY', 'SYNC', 'SPLIT'];

  // Total time per name, over every record (the stats are exact even when the timeline is sampled).
  const nameTotal = new Float64Array(names.length);
  for (let i = 0; i < D.stats.k.length; i++) nameTotal[D.stats.k[i]] += D.stats.total[i];

  // Colours: hues spread by rank of total time, so the ops that matter most differ most. Sync waits are grey.
  const colour = [];
  {
    const order = names.map((_, k) => k).sort((a, b) => nameTotal[b] - nameTotal[a]);
    let rank = 0;
    for (const k of order) {
      if (rtype[k] === 2) colour[k] = 'hsl(210, 8%, ' + (62 + (rank % 3) * 8) + '%)';
      else if (rtype[k] === 3) colour[k] = 'hsl(195, 35%, 70%)';
      else colour[k] = 'hsl(' + Math.round((rank * 137.508 + 12) % 360) + ', ' + (rtype[k] === 1 ? '85%, 38%)' : '62%, 54%)');
      rank++;
    }
  }

  // ---------------------------------------------------------------- formatting
  function fmtDur(ns) {
    const a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return (ns / 1e3).toFixed(a < 1e4 ? 3 : 2) + ' µs';
    if (a < 1e9) return (ns / 1e6).toFixed(a < 1e7 ? 3 : 2) + ' ms';
    return (ns / 1e9).toFixed(3) + ' s';
  }
  function fmtBytes(b) {
    if (b < 1024) return b + ' B';
    if (b < 1048576) return (b / 1024).toFixed(1) + ' KiB';
    if (b < 1073741824) return (b / 1048576).toFixed(2) + ' MiB';
    return (b / 1073741824).toFixed(2) + ' GiB';
  }
  // Bandwidth is the roofline model's, as top-ops shows it: bytes the op reads and writes (computed by ggprof,
  // analyzer/roofline.c) over its time, in GB/s (bytes per nanosecond). rw < 0: the model has no bytes for it.
  function fmtGBs(rw, ns) {
    if (rw < 0 || !ns) return '';
    return (rw / ns).toFixed(2);
  }

  // ---------------------------------------------------------------- where the time went: the run lanes
  // Per process, its wall time cut into report's accounting categories: slices that tile it, laid by ggprof
  // (ggprof_accounting_slices, analyzer/accounting.c; export --chrome's run row), times from t0. Drawn above the
  // op lanes; the page only draws them.
  const runs = (D.run || []).map((r) => {
    const R = { pid: r.pid, start: r.start, wall: r.wall_ns, cats: r.cats, t: r.t, d: r.d, c: r.c, maxDur: 0, drawn: 0 };
    R.name = (D.run.length > 1 ? 'time went · pid ' + r.pid : 'where the time went');
    for (const x of r.d) if (x > R.maxDur) R.maxDur = x;
    return R;
  });
  // Per thread of the program, under its process's run lane: its llama_decode calls (batches), regions (llama.cpp's
  // set-up calls ggprof timed, or the program's own) and idle spans, as export --chrome's thread rows have them
  // (ggprof_thread_slices_load, analyzer/accounting.c), by start, longest first. A slice inside another is drawn
  // inset, one level deeper (T.lv).
  const tnames = D.thread_names || [];
  const threads = (D.threads || []).map((x) => {
    const T = { pid: x.pid, tid: x.tid, t: x.t, d: x.d, w: x.w, n: x.n, v: x.v, maxDur: 0, drawn: 0,
      lv: new Uint8Array(x.t.length) };
    T.name = 'thread ' + x.tid + (D.run && D.run.length > 1 ? ' · pid ' + x.pid : '');
    const ends = [];
    for (let j = 0; j < x.t.length; j++) {
      if (x.d[j] > T.maxDur) T.maxDur = x.d[j];
      while (ends.length && ends[ends.length - 1] <= x.t[j]) ends.pop();
      T.lv[j] = Math.min(ends.length, 3);
      ends.push(x.t[j] + x.d[j]);
    }
    return T;
  });
  // The rows above the op lanes: each process's run lane, then its threads' lanes; threads of a process with no
  // run lane after them.
  const tops = [];
  for (const R of runs) {
    tops.push({ run: R });
    for (const T of threads) if (T.pid === R.pid) tops.push({ thread: T });
  }
  for (const T of threads) if (!runs.some((R) => R.pid === T.pid)) tops.push({ thread: T });
  const THREAD_COLOUR = ['#43aa8b', '#2f80ed', '#d5d9de']; // a program's region, a batch, idle
  const LLAMA_REGION_COLOUR = '#8d99ae';
  const sliceLabel = (T, j) => T.n[j] >= 0 ? tnames[T.n[j]] : T.w[j] === 0 ? 'region' : T.w[j] === 1 ? 'llama_decode' : 'idle';

  // A colour per category, the same in the lanes, their legend and the accounting's bars: fixed ones, and blues and
  // greens for compute per backend, in the order first met.
  const CAT_FIXED = { startup: '#9aa4ae', loading: '#6c7a89', context_setup: '#b9a37e', copies: '#e8590c',
    graph_build: '#ae3ec9', host_gaps: '#f2c94c', idle: '#c9ced4', other: '#e6e9ec' };
  const catColours = new Map();
  function catColour(name) {
    if (CAT_FIXED[name]) return CAT_FIXED[name];
    if (!catColours.has(name)) catColours.set(name, 'hsl(' + (205 + 47 * catColours.size) % 360 + ', 55%, 48%)');
    return catColours.get(name);
  }

  // ---------------------------------------------------------------- search
  let query = '';
  let nameMatch = new Uint8Array(names.length), tensorMatch = new Uint8Array(D.tensors.length);
  const matches = (i) => nameMatch[kind[i]] === 1 || (tensor !== null && tensorMatch[tensor[i]] === 1);
  function setQuery(q) {
    query = q.trim().toLowerCase();
    nameMatch = new Uint8Array(names.length);
    tensorMatch = new Uint8Array(D.tensors.length);
    let n = 0;
    if (query) {
      names.forEach((s, k) => { if (s.toLowerCase().includes(query)) nameMatch[k] = 1; });
      D.tensors.forEach((s, k) => { if (s && s.toLowerCase().includes(query)) tensorMatch[k] = 1; });
      for (let i = 0; i < N; i++) if (matches(i)) n++;
    }
    $('search-count').textContent = query ? n + ' match' + (n === 1 ? '' : 'es') : '';
    $('search-count').dataset.count = String(n);
    schedule();
  }

  // ---------------------------------------------------------------- view
  const GUTTER = 150, AXIS_H = 22, LANE_H = 26, LANE_GAP = 6, MEM_H = 40;
  // memory tracks (ggprof memory): bytes a backend of a process holds over time, under the op lanes
  const mems = D.memory || [];
  const ROW = LANE_H + LANE_GAP;
  const laneTop = AXIS_H + tops.length * ROW; // the op lanes, under the run and thread lanes
  const memTop = () => laneTop + lanes.length * ROW;
  const tl = $('timeline'), mm = $('minimap');
  const ctx = tl.getContext('2d'), mctx = mm.getContext('2d');
  let v0 = -span * 0.01, v1 = span * 1.01;
  let plotW = 800, dpr = 1;
  let colBusy, colBest, colBestDur, colMatch;

  // wide: a preset may show more than the trace (1 s of a 90 ms run); wheel and drag never widen past that.
  function setView(a, b, wide) {
    let w = Math.max(b - a, 50);
    w = Math.min(w, wide ? Math.max(w, span * 1.2) : Math.max(span * 1.2, v1 - v0));
    let c = (a + b) / 2;
    if (c < 0 || c > span) c = Math.min(Math.max(c, 0), span);
    v0 = c - w / 2;
    v1 = c + w / 2;
    const r = $('range');
    r.textContent = 'view ' + fmtDur(v0) + ' … ' + fmtDur(v1) + '  (' + fmtDur(v1 - v0) + ')';
    r.dataset.v0 = String(v0);
    r.dataset.v1 = String(v1);
    schedule();
  }

  function lowerBound(arr, lo, hi, x) {
    while (lo < hi) {
      const m = (lo + hi) >>> 1;
      if (arr[m] < x) lo = m + 1; else hi = m;
    }
    return lo;
  }

  function resize() {
    dpr = window.devicePixelRatio || 1;
    const w = tl.parentElement.clientWidth;
    const h = memTop() + mems.length * (MEM_H + LANE_GAP) + 4;
    tl.style.height = h + 'px';
    tl.width = Math.round(w * dpr);
    tl.height = Math.round(h * dpr);
    plotW = Math.max(w - GUTTER, 50);
    colBusy = new Float64Array(plotW + 1);
    colBest = new Int32Array(plotW + 1);
    colBestDur = new Float64Array(plotW + 1);
    colMatch = new Uint8Array(plotW + 1);
    mm.width = Math.round(mm.clientWidth * dpr);
    mm.height = Math.round(44 * dpr);
    buildMinimap();
    schedule();
  }

  let pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  }

  function niceStep(raw) {
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
  }

  function draw() {
    const W = tl.width / dpr, H = tl.height / dpr;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const npp = (v1 - v0) / plotW;
    // time axis
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillStyle = '#555';
    ctx.strokeStyle = '#e4e8ec';
    ctx.lineWidth = 1;
    const step = niceStep(npp * 110);
    for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      const x = GUTTER + (t - v0) / npp;
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, AXIS_H - 4);
      ctx.lineTo(Math.round(x) + 0.5, H);
      ctx.stroke();
      ctx.fillText(fmtDur(t), x + 3, AXIS_H - 8);
    }
    for (let ri = 0; ri < tops.length; ri++) {
      if (tops[ri].run) drawRun(tops[ri].run, AXIS_H + ri * ROW, npp); else drawThread(tops[ri].thread, AXIS_H + ri * ROW, npp);
    }
    for (let li = 0; li < lanes.length; li++) drawLane(lanes[li], laneTop + li * ROW, npp);
    for (let mi = 0; mi < mems.length; mi++) drawMem(mems[mi], memTop() + mi * (MEM_H + LANE_GAP), npp);
    drawWindows(W, H, npp);
    // lane labels over the gutter
    ctx.globalAlpha = 1;
    ctx.fillStyle = '#fafbfc';
    ctx.fillRect(0, 0, GUTTER - 4, H);
    ctx.fillStyle = '#1d232a';
    ctx.font = '12px system-ui, sans-serif';
    for (let ri = 0; ri < tops.length; ri++) {
      const nm = tops[ri].run ? tops[ri].run.name : tops[ri].thread.name;
      ctx.fillText(clip(nm, GUTTER - 12, 6.6), 6, AXIS_H + ri * ROW + LANE_H / 2 + 4);
    }
    for (let li = 0; li < lanes.length; li++) {
      const y = laneTop + li * ROW;
      ctx.fillText(clip(lanes[li].name, GUTTER - 12, 6.6), 6, y + LANE_H / 2 + 4);
    }
    for (let mi = 0; mi < mems.length; mi++) {
      const y = memTop() + mi * (MEM_H + LANE_GAP);
      ctx.fillText(clip(mems[mi].name, GUTTER - 12, 6.6), 6, y + 14);
      ctx.fillStyle = '#555';
      ctx.fillText(fmtBytes(mems[mi].max) + ' max', 6, y + 30);
      ctx.fillStyle = '#1d232a';
    }
    drawMinimapView();
  }

  // record's capture windows (--delay, --duration, SIGUSR1): a green band on the axis for each, and the time
  // outside them greyed over the lanes (nothing was recorded there)
  const windows = D.windows || [];
  function drawWindows(W, H, npp) {
    if (!windows.length) return;
    const xOf = t => GUTTER + Math.min(Math.max((t - v0) / npp, -1), plotW + 1);
    ctx.fillStyle = 'rgba(40, 50, 60, 0.10)';
    let from = v0;
    for (const w of windows) {
      if (w[0] > from) ctx.fillRect(xOf(from), AXIS_H, xOf(w[0]) - xOf(from), H - AXIS_H);
      from = Math.max(from, w[1]);
    }
    if (from < v1) ctx.fillRect(xOf(from), AXIS_H, xOf(v1) - xOf(from), H - AXIS_H);
    ctx.fillStyle = 'rgba(46, 160, 67, 0.55)';
    for (const w of windows) ctx.fillRect(xOf(w[0]), AXIS_H - 4, Math.max(xOf(w[1]) - xOf(w[0]), 1), 3);
  }

  function clip(s, px, charW) {
    const n = Math.floor(px / charW);
    return s.length <= n ? s : n > 1 ? s.slice(0, n - 1) + '…' : '';
  }

  // A step chart of what the backend holds, scaled to its most; the process's peak as a red line.
  const PEAK_COLOUR = '#d1242f';
  function drawMem(M, y, npp) {
    ctx.fillStyle = '#f3f5f7';
    ctx.fillRect(GUTTER, y, plotW, MEM_H);
    const top = Math.max(M.max, 1), xOf = (t) => Math.min(Math.max((t - v0) / npp, 0), plotW);
    ctx.fillStyle = '#6f42c1';
    ctx.globalAlpha = 0.55;
    for (let i = 0; i < M.t.length; i++) {
      const a = xOf(M.t[i]), b = i + 1 < M.t.length ? xOf(M.t[i + 1]) : plotW;
      const h = (M.v[i] / top) * (MEM_H - 2);
      if (b > a && h > 0) ctx.fillRect(GUTTER + a, y + MEM_H - h, b - a, h);
    }
    ctx.globalAlpha = 1;
    if (M.peak_t >= v0 && M.peak_t <= v1) {
      const x = Math.round(GUTTER + (M.peak_t - v0) / npp);
      ctx.fillStyle = PEAK_COLOUR;
      ctx.fillRect(x - 1, y, 3, MEM_H);
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillText('peak ' + fmtBytes(M.at_peak), Math.min(x + 4, GUTTER + plotW - 90), y + 11);
    }
  }

  // A lane of few slices (a run's categories, a thread's calls, regions and idle spans): each slice in view drawn
  // at least a pixel wide, inset by inset(j) pixels (a nested one), labelled where wide enough; L.drawn counts them
  // (what the tests read).
  function drawSlices(L, y, npp, colour, inset, label) {
    ctx.fillStyle = '#f3f5f7';
    ctx.fillRect(GUTTER, y, plotW, LANE_H);
    ctx.font = '11px system-ui, sans-serif';
    L.drawn = 0;
    for (let j = lowerBound(L.t, 0, L.t.length, v0 - L.maxDur); j < L.t.length; j++) {
      const s = L.t[j], e = s + L.d[j];
      if (s > v1) break;
      if (e < v0) continue;
      const a = Math.max((s - v0) / npp, 0), b = Math.min((e - v0) / npp, plotW), d = inset(j);
      ctx.fillStyle = colour(j);
      ctx.fillRect(GUTTER + a, y + d, Math.max(b - a, 1), LANE_H - 2 * d);
      L.drawn++;
      if (b - a > 40) {
        ctx.fillStyle = '#111';
        ctx.fillText(clip(label(j), b - a - 6, 6.2), GUTTER + a + 3, y + LANE_H / 2 + 4);
      }
    }
  }

  function drawRun(R, y, npp) {
    drawSlices(R, y, npp, (j) => catColour(R.cats[R.c[j]]), () => 0, (j) => R.cats[R.c[j]]);
  }

  function drawThread(T, y, npp) {
    drawSlices(T, y, npp, (j) => (T.w[j] === 0 && T.v[j][0] < 0 ? LLAMA_REGION_COLOUR : THREAD_COLOUR[T.w[j]]),
      (j) => 3 * T.lv[j], (j) => sliceLabel(T, j));
  }

  function drawLane(L, y, npp) {
    ctx.fillStyle = '#f3f5f7';
    ctx.fillRect(GUTTER, y, plotW, LANE_H);
    colBusy.fill(0);
    colBestDur.fill(0);
    colMatch.fill(0);
    colBest.fill(-1);
    const searching = query !== '';
    let i = lowerBound(start, L.begin, L.end, v0 - L.maxDur);
    ctx.font = '11px system-ui, sans-serif';
    for (; i < L.end; i++) {
      const s = start[i];
      if (s > v1) break;
      const e = s + dur[i];
      if (e < v0) continue;
      const x0 = (s - v0) / npp, x1 = (e - v0) / npp;
      const hit = searching && matches(i);
      if (x1 - x0 >= 1.5) {
        const a = Math.max(x0, 0), b = Math.min(x1, plotW);
        ctx.globalAlpha = searching && !hit ? 0.18 : 1;
        ctx.fillStyle = colour[kind[i]];
        ctx.fillRect(GUTTER + a, y, Math.max(b - a - 0.5, 1), LANE_H);
        if (hit) {
          ctx.strokeStyle = '#111';
          ctx.lineWidth = 2;
          ctx.strokeRect(GUTTER + a + 1, y + 1, Math.max(b - a - 2, 1), LANE_H - 2);
        }
        if (b - a > 40) {
          ctx.fillStyle = '#111';
          ctx.fillText(clip(names[kind[i]], b - a - 6, 6.2), GUTTER + a + 3, y + LANE_H / 2 + 4);
        }
      } else {
        // narrower than a pixel and a half: summed into its pixel column
        const c = Math.min(Math.max(Math.floor(x0), 0), plotW);
        colBusy[c] += Math.min(e, v1) - Math.max(s, v0);
        if (dur[i] > colBestDur[c]) { colBestDur[c] = dur[i]; colBest[c] = i; }
        if (hit) colMatch[c] = 1;
      }
    }
    for (let c = 0; c <= plotW; c++) {
      if (colBest[c] < 0) continue;
      const fill = Math.min(colBusy[c] / npp, 1);
      ctx.globalAlpha = searching && !colMatch[c] ? 0.15 : 0.35 + 0.65 * fill;
      ctx.fillStyle = searching && colMatch[c] ? '#111' : colour[kind[colBest[c]]];
      ctx.fillRect(GUTTER + c, y, 1, LANE_H);
    }
    ctx.globalAlpha = 1;
  }

  // ---------------------------------------------------------------- minimap: the whole trace, once per width
  let mmImage = null;
  function buildMinimap() {
    const W = mm.width, H = mm.height;
    const off = document.createElement('canvas');
    off.width = W;
    off.height = H;
    const o = off.getContext('2d');
    const band = H / Math.max(lanes.length, 1);
    const busy = new Float64Array(W), best = new Int32Array(W), bestOv = new Float64Array(W);
    const nspp = span / W;
    lanes.forEach((L, li) => {
      busy.fill(0);
      bestOv.fill(0);
      best.fill(-1);
      for (let i = L.begin; i < L.end; i++) {
        const s = start[i], e = s + dur[i];
        const c0 = Math.min(Math.floor(s / nspp), W - 1), c1 = Math.min(Math.floor(e / nspp), W - 1);
        for (let c = c0; c <= c1; c++) {
          const ov = Math.min(e, (c + 1) * nspp) - Math.max(s, c * nspp);
          busy[c] += ov;
          if (ov > bestOv[c]) { bestOv[c] = ov; best[c] = i; }
        }
      }
      for (let c = 0; c < W; c++) {
        if (best[c] < 0) continue;
        o.globalAlpha = 0.35 + 0.65 * Math.min(busy[c] / nspp, 1);
        o.fillStyle = colour[kind[best[c]]];
        o.fillRect(c, li * band, 1, Math.max(band - 1, 1));
      }
    });
    mmImage = off;
  }
  function drawMinimapView() {
    const W = mm.width, H = mm.height;
    mctx.setTransform(1, 0, 0, 1, 0, 0);
    mctx.clearRect(0, 0, W, H);
    if (mmImage) mctx.drawImage(mmImage, 0, 0);
    let a = (v0 / span) * W, b = (v1 / span) * W;
    if (b - a < 3) { const m = (a + b) / 2; a = m - 1.5; b = m + 1.5; }
    mctx.fillStyle = 'rgba(40, 110, 200, 0.16)';
    mctx.fillRect(a, 0, b - a, H);
    mctx.strokeStyle = 'rgba(20, 80, 170, 0.9)';
    mctx.lineWidth = Math.max(dpr, 1);
    mctx.strokeRect(a, 0.5, b - a, H - 1);
  }

  // ---------------------------------------------------------------- hover: the record under the pointer
  function pick(clientX, clientY) {
    const r = tl.getBoundingClientRect();
    const x = clientX - r.left - GUTTER, y0 = clientY - r.top - AXIS_H;
    if (x < 0 || y0 < 0) return null;
    const npp = (v1 - v0) / plotW, t = v0 + x * npp, tol = 2 * npp;
    const ri = Math.floor(y0 / ROW);
    if (ri < tops.length && tops[ri].thread) { // a thread lane: the deepest slice under the pointer, else the
      if (y0 - ri * ROW > LANE_H) return null; // longest within 2 px
      const T = tops[ri].thread;
      let j = -1, cov = false;
      for (let k = lowerBound(T.t, 0, T.t.length, t - tol - T.maxDur); k < T.t.length && T.t[k] <= t + tol; k++) {
        const e = T.t[k] + T.d[k];
        if (e < t - tol) continue;
        const c = T.t[k] <= t && e >= t;
        if (j < 0 || (c && !cov) || (c && cov && T.lv[k] >= T.lv[j]) || (!c && !cov && T.d[k] > T.d[j])) { j = k; cov = c; }
      }
      return j < 0 ? null : { thread: T, j: j };
    }
    if (ri < tops.length) { // a run lane: the slice under the pointer (they tile), else the nearest within 2 px
      if (y0 - ri * ROW > LANE_H) return null;
      const R = tops[ri].run;
      let lo = 0, hi = R.t.length; // j: the last slice starting at or before t
      while (lo < hi) { const m = (lo + hi) >>> 1; if (R.t[m] <= t) lo = m + 1; else hi = m; }
      let j = lo - 1;
      if (j < 0 || t > R.t[j] + R.d[j]) {
        const k = j + 1 < R.t.length && R.t[j + 1] - t <= tol ? j + 1 : j >= 0 && t - R.t[j] - R.d[j] <= tol ? j : -1;
        if (k < 0) return null;
        j = k;
      }
      return { run: R, j: j };
    }
    const y = y0 - tops.length * ROW;
    const li = Math.floor(y / ROW);
    if (li >= lanes.length || y - li * ROW > LANE_H) return null;
    const L = lanes[li];
    let bestI = -1, covering = false, n = 0;
    for (let i = lowerBound(start, L.begin, L.end, t - tol - L.maxDur); i < L.end && start[i] <= t + tol; i++) {
      const e = start[i] + dur[i];
      if (e < t - tol) continue;
      n++;
      const cov = start[i] <= t && e >= t;
      if (bestI < 0 || (cov && !covering) || (cov === covering && dur[i] > dur[bestI])) { bestI = i; covering = cov; }
    }
    return bestI < 0 ? null : { i: bestI, n: n, lane: L };
  }

  function row(tbody, k, v) {
    if (v === '' || v === undefined || v === null) return;
    const tr = document.createElement('tr');
    const a = document.createElement('td'), b = document.createElement('td');
    a.textContent = k;
    b.textContent = v;
    tr.append(a, b);
    tbody.append(tr);
  }

  // Where each node ran and why (docs/placement.md): per plan [pid, first graph, next plan's first graph (-1: none),
  // {node index: [reason, ran on, instead of]}], only the nodes that fell back listed. null: placement unknown.
  const plans = D.placements || [];
  function placementOf(pid, g, n) {
    let best = null;
    for (const pl of plans) {
      if (pl[0] === pid && g >= pl[1] && (pl[2] < 0 || g < pl[2]) && (!best || pl[1] > best[1])) best = pl;
    }
    return best ? best[3][n] || 'preferred' : null;
  }

  const tip = $('tooltip');
  function place(clientX, clientY) {
    tip.hidden = false;
    const w = tip.offsetWidth, h = tip.offsetHeight;
    let x = clientX + 14, y = clientY + 14;
    if (x + w > window.innerWidth - 4) x = Math.max(clientX - w - 14, 4);
    if (y + h > window.innerHeight - 4) y = Math.max(clientY - h - 14, 4);
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
  function showRunTip(p, clientX, clientY) {
    const R = p.run, j = p.j, name = R.cats[R.c[j]];
    let total = 0;
    for (let k = 0; k < R.t.length; k++) if (R.c[k] === R.c[j]) total += R.d[k];
    tip.replaceChildren();
    const head = document.createElement('b');
    head.textContent = name;
    const sub = document.createElement('span');
    sub.textContent = '  where the time went, pid ' + R.pid;
    const t = document.createElement('table');
    const body = document.createElement('tbody');
    row(body, 'category', name);
    row(body, 'duration', fmtDur(R.d[j]));
    row(body, 'start', '+' + fmtDur(R.t[j]));
    row(body, 'category total', fmtDur(total) + ' (' + (100 * total / Math.max(R.wall, 1)).toFixed(1) + '% of ' + fmtDur(R.wall) + ')');
    t.append(body);
    tip.append(head, sub, t);
    tip.dataset.index = '';
    tip.dataset.run = R.pid + ':' + j;
    place(clientX, clientY);
  }
  function showThreadTip(p, clientX, clientY) {
    const T = p.thread, j = p.j, w = T.w[j], v = T.v[j];
    tip.replaceChildren();
    const head = document.createElement('b');
    head.textContent = sliceLabel(T, j);
    const sub = document.createElement('span');
    sub.textContent = '  ' + ['region', 'batch', 'idle'][w] + ' on thread ' + T.tid + ', pid ' + T.pid;
    const t = document.createElement('table');
    const body = document.createElement('tbody');
    if (w === 0) row(body, 'region', v[0] < 0 ? 'from llama.cpp (its set-up call, timed by ggprof)' : 'from the program (depth ' + v[0] + ')');
    if (w === 1) {
      row(body, 'batch', String(v[0]));
      row(body, 'tokens', String(v[1]));
      row(body, 'sequences', String(v[2]));
      row(body, 'outputs', String(v[3]));
      if (v[4] !== 0) row(body, 'status', String(v[4]));
    }
    if (w === 2) row(body, 'idle', 'the thread blocked');
    row(body, 'duration', fmtDur(T.d[j]));
    row(body, 'start', '+' + fmtDur(T.t[j]));
    t.append(body);
    tip.append(head, sub, t);
    tip.dataset.index = '';
    tip.dataset.run = '';
    tip.dataset.thread = T.pid + ':' + T.tid + ':' + j;
    place(clientX, clientY);
  }
  function showTip(p, clientX, clientY) {
    tip.dataset.thread = '';
    if (p.thread) { showThreadTip(p, clientX, clientY); return; }
    if (p.run) { showRunTip(p, clientX, clientY); return; }
    const i = p.i, sg = D.sigs[sig[i]];
    tip.replaceChildren();
    const head = document.createElement('b');
    head.textContent = names[kind[i]];
    const sub = document.createElement('span');
    sub.textContent = '  ' + TYPE_LABEL[rtype[kind[i]]] + ' on ' + p.lane.name;
    const t = document.createElement('table');
    const body = document.createElement('tbody');
    row(body, 'tensor', D.tensors[tensor[i]]);
    row(body, 'duration', fmtDur(dur[i]));
    row(body, 'start', '+' + fmtDur(start[i]));
    row(body, rtype[kind[i]] === 1 ? 'shape' : 'source shapes', D.shapes[sg[1]]);
    row(body, rtype[kind[i]] === 1 ? 'type' : 'source types', sg[2]);
    row(body, 'output', sg[3]);
    const op = rtype[kind[i]] === 0;
    row(body, op ? 'output bytes' : 'bytes', bytes[i] ? fmtBytes(bytes[i]) + ' (' + bytes[i] + ')' : '');
    row(body, 'bytes read+written', sg[5] >= 0 ? fmtBytes(sg[5]) + ' (' + sg[5] + ')' : '');
    const gbs = fmtGBs(sg[5], dur[i]);
    row(body, 'bandwidth', gbs ? gbs + ' GB/s (bytes read+written)' : '');
    const where = rtype[kind[i]] === 3 ? ', split ' + node[i] : node[i] >= 0 ? ', node ' + node[i] : '';
    row(body, 'graph', graph[i] >= 0 ? String(graph[i]) + where : '');
    const pl = rtype[kind[i]] === 0 && graph[i] >= 0 && node[i] >= 0 ? placementOf(p.lane.pid, graph[i], node[i]) : null;
    if (pl) {
      row(body, 'backend', pl === 'preferred' ? p.lane.name + ' (the best backend it has)' :
        pl[1] + ', not ' + pl[2] + ': ' + pl[0].replace(/_/g, ' '));
    }
    if (p.n > 1) row(body, 'nearby', p.n + ' records within 2 px: this one is under the pointer, or the longest');
    t.append(body);
    tip.append(head, sub, t);
    tip.dataset.run = '';
    tip.dataset.index = String(i);
    place(clientX, clientY);
  }

  // ---------------------------------------------------------------- input: wheel zoom, drag pan, minimap, presets
  let drag = null;
  tl.addEventListener('wheel', (e) => {
    e.preventDefault();
    const r = tl.getBoundingClientRect();
    const x = Math.min(Math.max(e.clientX - r.left - GUTTER, 0), plotW);
    const t = v0 + (x / plotW) * (v1 - v0);
    const d = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaMode === 2 ? e.deltaY * 400 : e.deltaY;
    const f = Math.exp(Math.max(Math.min(d, 600), -600) * 0.0015);
    // keep the time under the pointer where it is
    const w = Math.max((v1 - v0) * f, 50);
    const a = t - (x / plotW) * w;
    setView(a, a + w);
  }, { passive: false });
  tl.addEventListener('mousedown', (e) => {
    drag = { x: e.clientX, v0: v0, v1: v1 };
    tl.classList.add('dragging');
    tip.hidden = true;
    e.preventDefault();
  });
  window.addEventListener('mouseup', () => { drag = null; tl.classList.remove('dragging'); });
  window.addEventListener('mousemove', (e) => {
    if (drag) {
      const shift = ((e.clientX - drag.x) / plotW) * (drag.v1 - drag.v0);
      setView(drag.v0 - shift, drag.v1 - shift);
      return;
    }
    if (e.target !== tl) { tip.hidden = true; return; }
    const p = tensor !== null ? pick(e.clientX, e.clientY) : null;
    if (p) showTip(p, e.clientX, e.clientY); else tip.hidden = true;
  });
  tl.addEventListener('mouseleave', () => { tip.hidden = true; });
  let mmDrag = false;
  const mmMove = (e) => {
    const r = mm.getBoundingClientRect();
    const t = ((e.clientX - r.left) / r.width) * span, w = v1 - v0;
    setView(t - w / 2, t + w / 2);
  };
  mm.addEventListener('mousedown', (e) => { mmDrag = true; mmMove(e); });
  window.addEventListener('mouseup', () => { mmDrag = false; });
  mm.addEventListener('mousemove', (e) => { if (mmDrag) mmMove(e); });
  for (const b of document.querySelectorAll('#zoom button')) {
    b.addEventListener('click', () => {
      const w = Number(b.dataset.zoom);
      if (!w) setView(-span * 0.01, span * 1.01, true);
      else { const c = (v0 + v1) / 2; setView(c - w / 2, c + w / 2, true); }
    });
  }
  let searchTimer = 0;
  $('search').addEventListener('input', (e) => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => setQuery(e.target.value), 120);
  });
  window.addEventListener('resize', resize);

  // ---------------------------------------------------------------- stats tree: operation -> backend -> shapes
  function buildStats() {
    const S = D.stats, total = D.total_ns || 1;
    const ops = new Map();
    const acc = (n, i) => {
      n.count += S.count[i]; n.total += S.total[i]; n.rw = n.rw < 0 || S.rw[i] < 0 ? -1 : n.rw + S.rw[i];
      n.min = Math.min(n.min, S.min[i]); n.max = Math.max(n.max, S.max[i]);
    };
    const mk = (label, level) => ({ label, level, count: 0, total: 0, rw: 0, min: Infinity, max: 0, kids: new Map(), tr: null, open: false, built: false });
    for (let i = 0; i < S.k.length; i++) {
      const k = S.k[i];
      if (!ops.has(k)) { const n = mk(names[k], 0); n.k = k; ops.set(k, n); }
      const op = ops.get(k);
      acc(op, i);
      const ln = S.lane[i];
      if (!op.kids.has(ln)) op.kids.set(ln, mk(lanes[ln] ? lanes[ln].name : 'lane ' + ln, 1));
      const be = op.kids.get(ln);
      acc(be, i);
      const leaf = mk(D.shapes[S.shape[i]] || '(no sources)', 2);
      acc(leaf, i);
      be.kids.set(i, leaf);
    }
    const tbody = document.querySelector('#stats tbody');
    const sorted = (m) => Array.from(m.values()).sort((a, b) => b.total - a.total);
    const makeRow = (n) => {
      const tr = document.createElement('tr');
      tr.className = 'lvl' + n.level;
      const first = document.createElement('td');
      const tw = document.createElement('span');
      tw.className = 'tw';
      tw.textContent = n.level < 2 ? '▸' : '';
      first.append(tw);
      if (n.level === 0) {
        const sw = document.createElement('i');
        sw.className = 'sw';
        sw.style.background = colour[n.k];
        first.append(sw);
      }
      first.append(document.createTextNode(n.label));
      tr.append(first);
      const cells = [(100 * n.total / total).toFixed(1) + '%', String(n.count), (n.total / 1e6).toFixed(3),
        (n.total / n.count / 1e3).toFixed(2), (n.min / 1e3).toFixed(2), (n.max / 1e3).toFixed(2), fmtGBs(n.rw, n.total)];
      for (const c of cells) { const td = document.createElement('td'); td.textContent = c; tr.append(td); }
      n.tr = tr;
      n.tw = tw;
      if (n.level < 2) tr.addEventListener('click', () => toggle(n));
      return tr;
    };
    const hide = (n) => {
      for (const c of n.kids.values()) { if (c.tr) { c.tr.hidden = true; hide(c); } }
      n.open = false;
      if (n.tw) n.tw.textContent = n.level < 2 ? '▸' : '';
    };
    function toggle(n) {
      if (n.open) { hide(n); return; }
      if (!n.built) {
        let after = n.tr;
        for (const c of sorted(n.kids)) { const tr = makeRow(c); after.after(tr); after = tr; }
        n.built = true;
      }
      for (const c of n.kids.values()) c.tr.hidden = false;
      n.open = true;
      n.tw.textContent = '▾';
    }
    for (const n of sorted(ops)) tbody.append(makeRow(n));
  }

  // ---------------------------------------------------------------- heat map: layer x op
  // The cells come computed: each OP record's layer is ggprof's (analyzer/layers.c, what `rollup --by layer`
  // groups); -1 is no layer.
  function buildHeat() {
    const H = D.heat, el = $('heat');
    if (!H.ns.length) { el.textContent = 'No OP records.'; return; }
    const byOp = new Map(), layers = new Set(), cell = new Map(), count = new Map();
    for (let i = 0; i < H.ns.length; i++) {
      byOp.set(H.k[i], (byOp.get(H.k[i]) || 0) + H.ns[i]);
      layers.add(H.layer[i]);
      cell.set(H.layer[i] + ':' + H.k[i], H.ns[i]);
      count.set(H.layer[i] + ':' + H.k[i], H.n[i]);
    }
    const ops = Array.from(byOp.keys()).sort((a, b) => byOp.get(b) - byOp.get(a));
    const rows = Array.from(layers).sort((a, b) => (a < 0) - (b < 0) || a - b);
    let max = 0;
    for (const v of cell.values()) max = Math.max(max, v);
    const table = document.createElement('table');
    const head = document.createElement('tr');
    const corner = document.createElement('th');
    corner.textContent = 'layer';
    head.append(corner);
    for (const k of ops) { const th = document.createElement('th'); th.textContent = names[k]; head.append(th); }
    const all = document.createElement('th');
    all.textContent = 'all ops';
    head.append(all);
    table.append(head);
    for (const l of rows) {
      const tr = document.createElement('tr');
      const th = document.createElement('th');
      th.textContent = l < 0 ? 'no layer' : String(l);
      tr.append(th);
      let sum = 0;
      for (const k of ops) {
        const v = cell.get(l + ':' + k) || 0;
        sum += v;
        const td = document.createElement('td');
        if (v) {
          const a = Math.sqrt(v / max);
          td.style.background = 'rgba(214, 69, 45, ' + a.toFixed(3) + ')';
          if (a > 0.6) td.style.color = '#fff';
          td.textContent = (v / 1e6).toFixed(2);
          const c = count.get(l + ':' + k);
          td.title = 'layer ' + (l < 0 ? '(none)' : l) + ', ' + names[k] + ': ' + fmtDur(v) + ' in ' + c + (c === 1 ? ' record' : ' records');
        } else {
          td.className = 'empty';
          td.textContent = '·';
        }
        tr.append(td);
      }
      const td = document.createElement('td');
      td.textContent = (sum / 1e6).toFixed(2);
      tr.append(td);
      table.append(tr);
    }
    el.replaceChildren(table);
  }

  // ---------------------------------------------------------------- findings and the run's accounting
  // Both come computed, the objects `ggprof report --format json` writes (analyzer/findings.c, accounting.c): the
  // findings ranked by the time at stake (the five first shown, as report prints them), each process's wall time
  // in categories that add up to it. Every string is set as text.
  const FINDINGS_SHOWN = 5;
  function buildFindings() {
    const F = D.findings || [], tbody = document.querySelector('#findings tbody');
    if (!F.length) {
      const tr = document.createElement('tr'), td = document.createElement('td');
      td.colSpan = 5;
      td.textContent = D.findings ? 'No rule fired: nothing stands out in this trace.' : 'Not computed for this page.';
      tr.append(td);
      tbody.append(tr);
    }
    F.slice(0, FINDINGS_SHOWN).forEach((f, i) => {
      const tr = document.createElement('tr');
      tr.dataset.rule = f.rule;
      tr.dataset.ns = String(f.at_stake_ns);
      const cell = (cls, text) => { const td = document.createElement('td'); td.className = cls; if (text !== undefined) td.textContent = text; tr.append(td); return td; };
      cell('n', String(i + 1));
      const rule = cell('rule', f.rule);
      if (f.pid) { const p = document.createElement('span'); p.textContent = ' pid ' + f.pid; rule.append(p); }
      const st = cell('stake', (f.at_stake_ns / 1e6).toFixed(3));
      st.title = f.at_stake_ns ? fmtDur(f.at_stake_ns) : 'memory, not time';
      const ev = cell('ev');
      for (const k of Object.keys(f.evidence || {})) {
        const s = document.createElement('span'), b = document.createElement('b');
        b.textContent = k + '=';
        s.dataset.key = k;
        s.append(b, document.createTextNode(String(f.evidence[k])));
        ev.append(s);
      }
      cell('advice', f.advice);
      tbody.append(tr);
    });
    $('findings-more').textContent = F.length > FINDINGS_SHOWN
      ? '… and ' + (F.length - FINDINGS_SHOWN) + ' more (ggprof report --format json lists them all)' : '';
    // the accounting: a stacked bar per process, its categories in their order, and their times
    const A = D.accounting || [], el = $('accounting');
    for (const p of A) {
      const head = document.createElement('div');
      head.className = 'proc';
      head.textContent = 'pid ' + p.pid + ': ' + fmtDur(p.wall_ns) + ' of wall time' + (p.start_known ? ', from the process\'s start' : ', from its first record');
      const bar = document.createElement('div'), cats = document.createElement('div');
      bar.className = 'bar';
      cats.className = 'cats';
      bar.dataset.pid = String(p.pid);
      for (const name of Object.keys(p.categories)) {
        const ns = p.categories[name], c = catColour(name), share = p.wall_ns > 0 ? ns / p.wall_ns : 0;
        const seg = document.createElement('i');
        seg.style.width = (100 * share).toFixed(3) + '%';
        seg.style.background = c;
        seg.title = name + ': ' + fmtDur(ns) + ' (' + (100 * share).toFixed(1) + '%)';
        seg.dataset.cat = name;
        seg.dataset.ns = String(ns);
        bar.append(seg);
        if (!ns) continue;
        const s = document.createElement('span'), sw = document.createElement('i');
        sw.style.background = c;
        s.append(sw, document.createTextNode(name + ' ' + fmtDur(ns) + ' (' + (100 * share).toFixed(1) + '%)'));
        cats.append(s);
      }
      el.append(head, bar, cats);
    }
  }

  // the run lanes' categories: a swatch each, in report's order, and their time over every process
  function buildRunLegend() {
    const el = $('run-legend'), total = new Map();
    for (const R of runs) {
      for (const name of R.cats) if (!total.has(name)) total.set(name, 0);
      for (let j = 0; j < R.t.length; j++) total.set(R.cats[R.c[j]], total.get(R.cats[R.c[j]]) + R.d[j]);
    }
    if (!runs.length) { el.hidden = true; return; }
    const label = document.createElement('span');
    label.textContent = 'where the time went:';
    el.append(label);
    for (const [name, ns] of total) {
      if (!ns) continue;
      const s = document.createElement('span'), sw = document.createElement('i');
      s.className = 'item';
      s.dataset.cat = name;
      sw.style.background = catColour(name);
      s.append(sw, document.createTextNode(name + ' ' + fmtDur(ns)));
      el.append(s);
    }
  }

  function buildLegend() {
    const el = $('legend');
    const order = names.map((_, k) => k).sort((a, b) => nameTotal[b] - nameTotal[a]).slice(0, 24);
    const total = D.total_ns || 1;
    for (const k of order) {
      const s = document.createElement('span');
      s.className = 'item';
      const sw = document.createElement('i');
      sw.style.background = colour[k];
      s.append(sw, document.createTextNode(names[k] + ' ' + (100 * nameTotal[k] / total).toFixed(1) + '%'));
      el.append(s);
    }
  }

  // ---------------------------------------------------------------- start
  document.title = 'ggprof: ' + D.title.split(' ')[0].split('/').pop();
  $('summary').textContent = D.title + '  ·  ' + D.n_records + ' records' +
    (D.stride > 1 ? ' (timeline shows 1 in ' + D.stride + ': ' + N + ')' : '') + '  ·  ' + fmtDur(D.span_ns) +
    '  ·  ' + lanes.length + (lanes.length === 1 ? ' lane' : ' lanes');
  buildFindings();
  buildRunLegend();
  buildLegend();
  resize();
  marks.minimap = performance.now();
  setView(v0, v1);
  draw();
  pending = false;
  marks.drawn = performance.now();
  // What the tests and the first-paint benchmark read.
  const api = window.ggprof = {
    lanes: lanes.map((L) => L.name),
    records: N,
    firstDrawMs: performance.now(),
    view: () => ({ v0: v0, v1: v1 }),
    setView: setView,
    // the longest record named name: its index
    find: (name) => {
      let best = -1;
      for (let i = 0; i < N; i++) if (names[kind[i]] === name && (best < 0 || dur[i] > dur[best])) best = i;
      return best;
    },
    // the longest OP record of a node that ran off its scheduler's best device (docs/placement.md), or -1
    fallback: () => {
      let best = -1;
      for (let i = 0; i < N; i++) {
        if (rtype[kind[i]] !== 0 || graph[i] < 0 || node[i] < 0) continue;
        const li = lanes.findIndex((L) => i >= L.begin && i < L.end);
        const pl = placementOf(lanes[li].pid, graph[i], node[i]);
        if (pl && pl !== 'preferred' && (best < 0 || dur[i] > dur[best])) best = i;
      }
      return best;
    },
    // the graph ids of the shown records, in order
    graphs: () => Array.from(new Set(graph)).filter((g) => g >= 0).sort((a, b) => a - b),
    // shows record i over the middle half of the view, scrolls its lane into the window, and returns its centre on
    // the page (a findings panel or many lanes above it can push the lane below the fold)
    focus: (i) => {
      setView(start[i] - dur[i] * 0.5, start[i] + dur[i] * 1.5);
      draw();
      const p = api.locate(i);
      if (p.y < LANE_H || p.y > window.innerHeight - LANE_H) {
        window.scrollBy(0, p.y - window.innerHeight / 2);
        return api.locate(i);
      }
      return p;
    },
    // the centre of record i on the page, in the current view
    locate: (i) => {
      const li = lanes.findIndex((L) => i >= L.begin && i < L.end);
      const r = tl.getBoundingClientRect(), npp = (v1 - v0) / plotW;
      return { x: r.left + GUTTER + (start[i] + dur[i] / 2 - v0) / npp, y: r.top + laneTop + li * ROW + LANE_H / 2 };
    },
    name: (i) => names[kind[i]],
    // the time records of graph g cover, and its longest record named name
    graph: (g, name) => {
      let a = Infinity, b = -Infinity, best = -1;
      for (let i = 0; i < N; i++) {
        if (graph[i] !== g) continue;
        a = Math.min(a, start[i]);
        b = Math.max(b, start[i] + dur[i]);
        if (names[kind[i]] === name && (best < 0 || dur[i] > dur[best])) best = i;
      }
      return { v0: a, v1: b, longest: best };
    },
    tensor: (i) => D.tensors[tensor[i]],
    // memory tracks: their names, and the colour drawn where track m marks its process's peak
    memory: mems.map((M) => ({ name: M.name, max: M.max, atPeak: M.at_peak, peakT: M.peak_t })),
    memPeakPixel: (m) => {
      const M = mems[m], npp = (v1 - v0) / plotW;
      const x = Math.round(GUTTER + (M.peak_t - v0) / npp), y = memTop() + m * (MEM_H + LANE_GAP) + MEM_H - 3;
      const d = ctx.getImageData(x * dpr, y * dpr, 1, 1).data;
      return [d[0], d[1], d[2]];
    },
    // the run lanes as drawn: per process its slices (start, duration, category), how many the last draw drew, and
    // the centre on the page of slice j of lane r in the current view
    runs: () => runs.map((R) => ({ pid: R.pid, name: R.name, start: R.start, wall: R.wall, drawn: R.drawn,
      slices: Array.from(R.t, (t, j) => [t, R.d[j], R.cats[R.c[j]]]) })),
    locateRun: (r, j) => {
      const R = runs[r], rc = tl.getBoundingClientRect(), npp = (v1 - v0) / plotW, row = tops.findIndex((x) => x.run === R);
      return { x: rc.left + GUTTER + (R.t[j] + R.d[j] / 2 - v0) / npp, y: rc.top + AXIS_H + row * ROW + LANE_H / 2 };
    },
    // the thread lanes as drawn: per lane its row among the rows above the op lanes, its slices (start, duration,
    // what: region/batch/idle, label, values), how many the last draw drew; and the centre on the page of slice j
    threads: () => threads.map((T) => ({ pid: T.pid, tid: T.tid, name: T.name, drawn: T.drawn,
      row: tops.findIndex((x) => x.thread === T),
      slices: Array.from(T.t, (t, j) => [t, T.d[j], ['region', 'batch', 'idle'][T.w[j]], sliceLabel(T, j), T.v[j], T.lv[j]]) })),
    locateThread: (l, j) => {
      const T = threads[l], rc = tl.getBoundingClientRect(), npp = (v1 - v0) / plotW, row = tops.findIndex((x) => x.thread === T);
      return { x: rc.left + GUTTER + (T.t[j] + T.d[j] / 2 - v0) / npp, y: rc.top + AXIS_H + row * ROW + LANE_H / 2 };
    },
    span: span,
    plotWidth: () => plotW,
    draw: draw,
    nRecords: D.n_records,
    marks: marks,
  };
  requestAnimationFrame(() => {
    api.firstPaintMs = performance.now();
    document.body.dataset.painted = '1';
    // the tables come after the first paint: a large trace shows its timeline first
    setTimeout(() => {
      decodeRest();
      if (query) setQuery(query);
      buildStats();
      buildHeat();
      document.body.dataset.ready = '1';
    }, 0);
  });
})();
