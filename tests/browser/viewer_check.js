// Drives an exported ggprof HTML timeline in Debian's chromium (playwright-core) and prints what it saw as
// KEY=VALUE lines; the end-to-end test asserts on them.
// usage: node viewer_check.js PAGE.html OUT_DIR [--bench] [--screenshot=PNG] [--height=PX]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const [page_path, out_dir] = process.argv.slice(2);
const bench = process.argv.includes('--bench');
const shot = (process.argv.find((a) => a.startsWith('--screenshot=')) || '').slice(13);
// --height=N: a short window, so that the op lanes lie below the fold and hovering must scroll to them
const height = Number((process.argv.find((a) => a.startsWith('--height=')) || '--height=900').slice(9));
const url = 'file://' + path.resolve(page_path);

function say(k, v) { console.log(k + '=' + String(v).replace(/\s+/g, ' ')); }

(async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ggprof-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: height },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    const consoleErrors = [], pageErrors = [], external = [];
    const tip = async () => page.evaluate(() => { const t = document.getElementById('tooltip'); return t.hidden ? '' : t.innerText; });
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('request', (r) => { if (r.url() !== url) external.push(r.url()); });

    const t0 = Date.now();
    await page.goto(url, { waitUntil: 'load', timeout: 120000 });
    await page.waitForFunction(() => document.body.dataset.painted === '1', null, { timeout: 120000 });
    say('first_paint_ms', (await page.evaluate(() => window.ggprof.firstPaintMs)).toFixed(0));
    say('load_wall_ms', Date.now() - t0);
    say('marks', JSON.stringify(await page.evaluate(() => {
      const m = window.ggprof.marks, o = {};
      for (const k in m) o[k] = Math.round(m[k]);
      const nav = performance.getEntriesByType('navigation')[0];
      if (nav) { o.responseEnd = Math.round(nav.responseEnd); o.domInteractive = Math.round(nav.domInteractive); }
      return o;
    })));
    await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 120000 });
    say('records_shown', await page.evaluate(() => window.ggprof.records));
    say('lanes', await page.evaluate(() => window.ggprof.lanes.join('|')));
    // the findings panel as drawn: each row's rule and exact time at stake (ns), its evidence as the page shows it
    // (JSON, read back by the test), the "more" line; what in the panel is not the page's own markup; the
    // accounting's bars (pid: category=ns, in order)
    const findings = await page.evaluate(() => Array.from(document.querySelectorAll('#findings tbody tr[data-rule]')).map((tr) => ({
      rule: tr.dataset.rule, ns: tr.dataset.ns, text: tr.cells[1].textContent, stake_text: tr.cells[2].textContent,
      evidence: Object.fromEntries(Array.from(tr.cells[3].querySelectorAll('span')).map((s) => [s.dataset.key, s.lastChild.textContent])),
      advice: tr.cells[4].textContent }))); // eslint-disable-line
    say('findings_rules', findings.map((f) => f.rule).join('|'));
    say('findings_ns', findings.map((f) => f.ns).join('|'));
    say('findings_stake_text', findings.map((f) => f.stake_text).join('|'));
    say('findings_json', JSON.stringify(findings));
    say('findings_more', await page.evaluate(() => document.getElementById('findings-more').textContent));
    say('findings_none_row', await page.evaluate(() => document.querySelectorAll('#findings tbody tr:not([data-rule])').length));
    say('findings_foreign_elements', await page.evaluate(() =>
      document.querySelectorAll('#findings-panel img, #findings-panel script, #findings-panel b:not(#findings td.ev span > b)').length));
    say('findings_panel_above_timeline', await page.evaluate(() =>
      document.getElementById('findings-panel').getBoundingClientRect().top < document.getElementById('timeline').getBoundingClientRect().top ? 1 : 0));
    say('accounting_bars', await page.evaluate(() => Array.from(document.querySelectorAll('#accounting .bar')).map((b) =>
      b.dataset.pid + ':' + Array.from(b.children).map((i) => i.dataset.cat + '=' + i.dataset.ns).join(',')).join(';')));
    say('accounting_bar_width_pct', await page.evaluate(() => Array.from(document.querySelectorAll('#accounting .bar')).map((b) =>
      Array.from(b.children).reduce((a, i) => a + parseFloat(i.style.width), 0).toFixed(1)).join(';')));
    // memory tracks (ggprof memory): names, and the colour at each one's peak mark (red when it is drawn)
    say('memory_tracks', await page.evaluate(() => window.ggprof.memory.map((m) => m.name + ':' + m.max).join('|')));
    say('memory_peak_pixels', await page.evaluate(() => {
      const g = window.ggprof, v = g.view();
      g.setView(v.v0, v.v1);
      g.draw();
      return g.memory.map((m, i) => g.memPeakPixel(i).join(',')).join('|');
    }));

    // How long a redraw of the whole trace and of a zoomed view takes (every record is visited when zoomed out).
    const frame = await page.evaluate(() => {
      const g = window.ggprof, v = g.view(), t = [];
      for (let k = 0; k < 5; k++) {
        const a = performance.now();
        g.setView(v.v0, v.v1);
        g.draw();
        t.push(performance.now() - a);
      }
      g.setView(v.v0, v.v1);
      return Math.min(...t);
    });
    say('redraw_all_ms', frame.toFixed(1));
    if (bench) return;

    // the run lanes ("where the time went"), in the whole view: per process its slices as the page holds them (their
    // count, the ones the draw drew, their sum and gaps, each category's sum) and whether the view covers the run
    await page.click('button[data-zoom="0"]');
    say('run_json', JSON.stringify(await page.evaluate(() => {
      const g = window.ggprof, v = g.view();
      g.draw();
      return (g.runs ? g.runs() : []).map((R) => { // a page without run lanes: none
        const cats = {};
        let sum = 0, gaps = 0;
        R.slices.forEach((s, j) => {
          cats[s[2]] = (cats[s[2]] || 0) + s[1];
          sum += s[1];
          if (j === 0 ? s[0] !== R.start : s[0] !== R.slices[j - 1][0] + R.slices[j - 1][1]) gaps++;
        });
        return { pid: R.pid, name: R.name, n: R.slices.length, drawn: R.drawn, sum, gaps, cats,
          in_view: v.v0 <= R.start && v.v1 >= R.start + R.wall ? 1 : 0 };
      });
    })));
    say('run_lanes_above_ops', await page.evaluate(() => {
      const g = window.ggprof, r = g.runs ? g.runs() : [];
      return r.length && g.records ? (g.locateRun(r.length - 1, 0).y < g.locate(0).y ? 1 : 0) : -1;
    }));
    // hover the longest slice of each run lane: its tooltip
    const runHover = [];
    for (let r = 0; r < (await page.evaluate(() => window.ggprof.runs ? window.ggprof.runs().length : 0)); r++) {
      const h = await page.evaluate((r) => {
        const g = window.ggprof, R = g.runs()[r];
        let j = 0;
        R.slices.forEach((s, k) => { if (s[1] > R.slices[j][1]) j = k; });
        const p = g.locateRun(r, j);
        return { x: p.x, y: p.y, j, pid: R.pid, cat: R.slices[j][2] };
      }, r);
      await page.mouse.move(h.x, h.y);
      await page.waitForFunction((want) => !document.getElementById('tooltip').hidden &&
        document.getElementById('tooltip').dataset.run === want, h.pid + ':' + h.j, { timeout: 5000 }).catch(() => {});
      const text = await tip();
      runHover.push(h.pid + ':' + (text.startsWith(h.cat) && /category/.test(text) && /duration/.test(text) && /start/.test(text) ? 1 : 0));
    }
    say('run_tooltips', runHover.join(' '));
    // the thread lanes (llama_decode calls, regions, idle), in the whole view: per lane its slices of each kind, the
    // ones the draw drew, and whether it sits under its process's run lane and above the op lanes
    say('thread_json', JSON.stringify(await page.evaluate(() => {
      const g = window.ggprof;
      g.draw();
      const runRow = (pid) => { const r = g.runs().findIndex((R) => R.pid === pid); return r < 0 ? -1 : g.locateRun(r, 0).y; };
      return (g.threads ? g.threads() : []).map((T, l) => {
        const n = { region: 0, batch: 0, idle: 0, llama: 0 };
        T.slices.forEach((s) => { n[s[2]]++; if (s[2] === 'region' && s[4][0] < 0) n.llama++; });
        const y = g.locateThread(l, 0).y;
        return Object.assign({ pid: T.pid, tid: T.tid, n: T.slices.length, drawn: T.drawn,
          placed: y > runRow(T.pid) && (!g.records || y < g.locate(0).y) ? 1 : 0 }, n);
      });
    })));
    // hover the longest batch and the longest region of llama.cpp: their tooltips
    const threadHover = [];
    for (const want of ['batch', 'region']) {
      const h = await page.evaluate((want) => {
        const g = window.ggprof, ts = g.threads ? g.threads() : [];
        let best = null;
        // the longest whose middle no other slice of its lane covers (an idle span inside a model load, the
        // thread blocked reading the file, would take the hover: the innermost slice under the pointer)
        const alone = (T, j) => { const s = T.slices[j], m = s[0] + s[1] / 2;
          return T.slices.every((t, k) => k === j || !(t[0] <= m && m < t[0] + t[1])); };
        ts.forEach((T, l) => T.slices.forEach((s, j) => {
          if (s[2] === want && (want !== 'region' || s[4][0] < 0) && (!best || s[1] > best.d) && alone(T, j)) best = { l, j, d: s[1], pid: T.pid, tid: T.tid };
        }));
        if (!best) return null;
        const p = g.locateThread(best.l, best.j);
        return Object.assign(best, { x: p.x, y: p.y });
      }, want);
      if (!h) { threadHover.push(want + ':none'); continue; }
      await page.mouse.move(h.x, h.y);
      await page.waitForFunction((k) => !document.getElementById('tooltip').hidden &&
        document.getElementById('tooltip').dataset.thread === k, h.pid + ':' + h.tid + ':' + h.j, { timeout: 5000 }).catch(() => {});
      const text = await tip();
      const fields = want === 'batch' ? ['tokens', 'sequences', 'outputs', 'duration'] : ['from llama.cpp', 'duration'];
      threadHover.push(want + ':' + (fields.every((f) => text.includes(f)) ? 1 : 0));
    }
    say('thread_tooltips', threadHover.join(' '));
    await page.mouse.move(0, 0);
    await page.mouse.move(0, 0);

    // hover: the longest MUL_MAT, brought into view, then the pointer on it
    const hover = await page.evaluate(() => {
      const g = window.ggprof, i = g.find('MUL_MAT');
      if (i < 0) return null;
      const p = g.focus(i);
      return { i, x: p.x, y: p.y, tensor: g.tensor(i) };
    });
    if (hover) {
      await page.mouse.move(hover.x, hover.y);
      await page.waitForFunction(() => !document.getElementById('tooltip').hidden, null, { timeout: 5000 }).catch(() => {});
      const text = await tip();
      say('tooltip', text);
      say('tooltip_op', /MUL_MAT/.test(text) ? 1 : 0);
      say('tooltip_tensor', hover.tensor && text.includes(hover.tensor) ? 1 : 0);
      say('tooltip_fields', ['duration', 'source shapes', 'source types', 'bytes', 'bandwidth'].filter((f) => text.includes(f)).length);
      say('tooltip_gbs', /[0-9.]+ (GB|MB|TB)\/s/.test(text) ? 1 : 0);
      say('tooltip_index_is_hovered', (await page.evaluate(() => document.getElementById('tooltip').dataset.index)) === String(hover.i) ? 1 : 0);
    }
    // hover: the longest record of a node that fell back (a trace with placements), its tooltip's backend row
    const fb = await page.evaluate(() => {
      const g = window.ggprof, i = g.fallback();
      if (i < 0) return null;
      const p = g.focus(i);
      return { i, x: p.x, y: p.y };
    });
    if (fb) {
      await page.mouse.move(fb.x, fb.y);
      await page.waitForFunction((i) => !document.getElementById('tooltip').hidden &&
        document.getElementById('tooltip').dataset.index === String(i), fb.i, { timeout: 5000 }).catch(() => {});
      say('tooltip_fallback', await tip());
    }

    const view = () => page.evaluate(() => window.ggprof.view());
    const range = () => page.evaluate(() => { const r = document.getElementById('range'); return { v0: +r.dataset.v0, v1: +r.dataset.v1, text: r.textContent }; });
    // presets
    await page.click('button[data-zoom="0"]');
    const all = await range();
    say('all_width_ns', Math.round(all.v1 - all.v0));
    await page.click('button[data-zoom="1e6"]');
    await page.waitForTimeout(50);
    const ms = await range();
    say('preset_1ms_width_ns', Math.round(ms.v1 - ms.v0));
    say('range_text', ms.text);
    await page.click('button[data-zoom="1e5"]');
    const us = await range();
    say('preset_100us_width_ns', Math.round(us.v1 - us.v0));
    say('preset_keeps_centre', Math.abs((us.v0 + us.v1) / 2 - (ms.v0 + ms.v1) / 2) < 1 ? 1 : 0);
    await page.click('button[data-zoom="0"]');

    // wheel zoom around the pointer
    const box = await page.locator('#timeline').boundingBox();
    const px = box.x + 150 + (box.width - 150) * 0.3, py = box.y + 30;
    const before = await view();
    const plotW = await page.evaluate(() => window.ggprof.plotWidth());
    const tAt = (v) => v.v0 + ((px - box.x - 150) / plotW) * (v.v1 - v.v0);
    await page.mouse.move(px, py);
    await page.mouse.wheel(0, -400);
    await page.waitForTimeout(100);
    const after = await view();
    say('wheel_zoomed_in', after.v1 - after.v0 < (before.v1 - before.v0) * 0.9 ? 1 : 0);
    say('wheel_keeps_pointer_time', Math.abs(tAt(after) - tAt(before)) <= (before.v1 - before.v0) / plotW ? 1 : 0);
    const r2 = await range();
    say('range_follows_wheel', Math.abs(r2.v0 - after.v0) < 1e-6 && Math.abs(r2.v1 - after.v1) < 1e-6 ? 1 : 0);
    // drag pans by the distance moved
    await page.mouse.down();
    await page.mouse.move(px + 100, py, { steps: 4 });
    await page.mouse.up();
    const panned = await view();
    const expect = (100 / plotW) * (after.v1 - after.v0);
    say('drag_pans', Math.abs((after.v0 - panned.v0) - expect) < expect * 0.02 + 1 ? 1 : 0);

    // stats tree: operation -> backend -> shapes
    const visible = (sel) => page.evaluate((s) => Array.from(document.querySelectorAll(s)).filter((e) => !e.hidden).length, sel);
    say('stats_lvl0', await visible('#stats tr.lvl0'));
    say('stats_lvl0_count_sum', await page.evaluate(() => Array.from(document.querySelectorAll('#stats tr.lvl0')).reduce((a, tr) => a + Number(tr.cells[2].textContent), 0)));
    say('stats_lvl1_before', await visible('#stats tr.lvl1'));
    await page.click('#stats tr.lvl0 >> nth=0');
    say('stats_lvl1_after', await visible('#stats tr.lvl1'));
    await page.click('#stats tr.lvl1 >> nth=0');
    say('stats_lvl2_after', await visible('#stats tr.lvl2'));
    say('stats_first_op', await page.evaluate(() => document.querySelector('#stats tr.lvl0').cells[0].textContent.replace(/^[▸▾]/, '')));
    await page.click('#stats tr.lvl0 >> nth=0');
    say('stats_collapsed_lvl2', await visible('#stats tr.lvl2'));
    await page.click('#stats tr.lvl0 >> nth=0');

    // search highlights: the count, and the canvas changes
    const pixels = () => page.evaluate(() => document.getElementById('timeline').toDataURL());
    await page.click('button[data-zoom="0"]');
    await page.waitForTimeout(50);
    const plain = await pixels();
    await page.fill('#search', 'MUL_MAT');
    await page.waitForFunction(() => document.getElementById('search-count').dataset.count !== undefined &&
      document.getElementById('search-count').textContent !== '', null, { timeout: 5000 });
    await page.waitForTimeout(100);
    say('search_count', await page.evaluate(() => document.getElementById('search-count').dataset.count));
    say('search_changes_canvas', (await pixels()) !== plain ? 1 : 0);
    await page.fill('#search', '');
    await page.waitForTimeout(200);

    // heat map rows
    say('heat_layers', await page.evaluate(() => Array.from(document.querySelectorAll('#heat tr th:first-child')).slice(1).map((t) => t.textContent).join(',')));

    // a screenshot: one decode step (a graph from the middle of the run), the first operation's shapes, a tooltip
    await page.click('#stats tr.lvl1 >> nth=0');
    const g = await page.evaluate(() => {
      const api = window.ggprof, n = api.graphs();
      const r = api.graph(n[Math.floor(n.length / 2)], 'MUL_MAT');
      const w = r.v1 - r.v0;
      api.setView(r.v0 - w * 0.03, r.v1 + w * 0.03);
      api.draw();
      return r;
    });
    if (g.longest >= 0) {
      const p = await page.evaluate((i) => window.ggprof.locate(i), g.longest);
      await page.mouse.move(p.x, p.y);
      await page.waitForTimeout(150);
    }
    const file = shot || path.join(out_dir, 'viewer.png');
    await page.screenshot({ path: file, fullPage: false });
    say('screenshot', file);

    say('console_errors', consoleErrors.length);
    say('page_errors', pageErrors.length);
    say('external_requests', external.length);
    for (const e of consoleErrors.concat(pageErrors, external)) console.error('browser: ' + e);
  } finally {
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
})().catch((e) => { console.error(e); process.exit(1); });
