// Imports a `ggprof export --chrome` file into speedscope (npm, its built web app, from the file system) in Debian's
// chromium, as its own command line does (`#localProfilePath=`), and prints what it saw as KEY=VALUE lines:
// the slices speedscope could not nest ("Tried to end X when Y was on the top of the stack", and the frames it
// closed or could not end because of one), and, from the profile it exports again in its own format, the rows and
// slices it built. usage: node speedscope_check.js TRACE.json OUT_DIR
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const [trace, out_dir] = process.argv.slice(2);
const app = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist', 'release', 'index.html');

function say(k, v) { console.log(k + '=' + String(v).replace(/\s+/g, ' ')); }

(async () => {
  // What speedscope's command line writes: a script that hands the file to the page.
  const loader = path.join(path.resolve(out_dir), path.basename(trace) + '.speedscope-load.js');
  fs.writeFileSync(loader, 'speedscope.loadFileFromBase64(' + JSON.stringify(path.basename(trace)) + ', ' +
    JSON.stringify(fs.readFileSync(trace).toString('base64')) + ')');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ggprof-speedscope-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    acceptDownloads: true,
    viewport: { width: 1400, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--allow-file-access-from-files'],
  });
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    const warnings = [], errors = [], imported = [];
    page.on('console', (m) => {
      const t = m.text();
      if (/^Importing as /.test(t)) imported.push(t);
      if (m.type() === 'warning') warnings.push(t);
      if (m.type() === 'error') errors.push(t);
    });
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto('file://' + app + '#localProfilePath=' + loader, { waitUntil: 'load', timeout: 120000 });
    // the Export tab shows once a profile is loaded
    const exportTab = page.getByText('Export');
    await exportTab.waitFor({ timeout: +(process.env.SPEEDSCOPE_TIMEOUT_MS || 300000) });
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: 120000 }), exportTab.click()]);
    const saved = path.join(path.resolve(out_dir), path.basename(trace) + '.speedscope.json');
    await download.saveAs(saved);
    const doc = JSON.parse(fs.readFileSync(saved, 'utf8'));
    let opens = 0, closes = 0;
    for (const p of doc.profiles || []) {
      for (const e of p.events || []) {
        if (e.type === 'O') opens++;
        else if (e.type === 'C') closes++;
      }
    }
    say('imported_as', imported.join('|'));
    say('misnested', warnings.filter((w) => /Tried to end /.test(w)).length);
    say('closed_at_end', warnings.filter((w) => /was still open at end of profile/.test(w)).length);
    say('warnings', warnings.length);
    say('errors', errors.length);
    say('profiles', (doc.profiles || []).length);
    say('frames', ((doc.shared || {}).frames || []).length);
    say('slices', opens);
    say('slices_closed', closes);
    for (const w of warnings.slice(0, 5)) console.error('speedscope: ' + w.slice(0, 300));
    for (const e of errors.slice(0, 5)) console.error('speedscope error: ' + e.slice(0, 300));
  } finally {
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
})().catch((e) => { console.error(e); process.exit(1); });
