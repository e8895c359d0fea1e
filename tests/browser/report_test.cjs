// The HTML report in a real browser: node report_test.cjs REPO_ROOT OUT_DIR (see run.sh).
// Opens OUT_DIR/{example,empty,hostile}.html from disk in headless Chromium (Debian's binary,
// driven by playwright-core from report-assets/) with the network blocked, and checks each
// page's contract. Writes OUT_DIR/example.png. Exits 1 with one line per failed check.
'use strict';
const fs = require('fs');
const path = require('path');

const [root, out] = process.argv.slice(2);
const { chromium } = require(path.join(root, 'report-assets/node_modules/playwright-core'));
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); };

// Charts the example must draw, in page order; the empty page must draw none and show a
// "not measured" note for each area instead.
const EXAMPLE_CHARTS = ['sweep', 'ttft-waterfall', 'gpu-time', 'kernels', 'idle-timeline',
                        'idle-histogram', 'server-series', 'server-series'];
const EMPTY_NOTES = ['sweep', 'waterfall', 'kernels', 'idle', 'server_series'];

async function openPage(browser, file) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', async (d) => { problems.push(`dialog opened: ${d.message()}`); await d.dismiss(); });
  // The report must be self-contained: any request but the file itself fails the test.
  const url = 'file://' + path.join(out, file);
  await page.route('**/*', (r) => {
    if (r.request().url() === url) return r.continue();
    problems.push(`network request: ${r.request().url()}`);
    return r.abort();
  });
  await page.goto(url, { waitUntil: 'load' });
  return { page, problems };
}

// For every canvas: its name, the Chart.js chart on it, its points, and how much of it is painted.
function inspectCharts() {
  return Array.from(document.querySelectorAll('canvas[data-chart]')).map((cv) => {
    const chart = window.Chart && window.Chart.getChart(cv);
    const points = chart ? chart.data.datasets.reduce((n, d) => n + d.data.length, 0) : 0;
    let painted = 0;
    if (cv.width > 0 && cv.height > 0) {
      const px = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
      for (let i = 3; i < px.length; i += 4) if (px[i] > 0) painted++;
    }
    return { name: cv.getAttribute('data-chart'), hasChart: !!chart, points,
             width: cv.width, height: cv.height, paintedShare: painted / Math.max(1, cv.width * cv.height) };
  });
}

(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
                                          headless: true, args: ['--no-sandbox'] });
  try {
    {  // The example: every chart drawn with data, no errors, a screenshot.
      const { page, problems } = await openPage(browser, 'example.html');
      const charts = await page.evaluate(inspectCharts);
      check(JSON.stringify(charts.map((c) => c.name)) === JSON.stringify(EXAMPLE_CHARTS),
            `example: charts ${JSON.stringify(charts.map((c) => c.name))}, want ${JSON.stringify(EXAMPLE_CHARTS)}`);
      for (const c of charts) {
        check(c.hasChart, `example: ${c.name}: no Chart.js chart on the canvas`);
        check(c.points > 0, `example: ${c.name}: no data points`);
        check(c.width >= 200 && c.height >= 150, `example: ${c.name}: canvas ${c.width}x${c.height}`);
        check(c.paintedShare > 0.02, `example: ${c.name}: only ${(100 * c.paintedShare).toFixed(2)}% of the canvas painted`);
      }
      check(await page.locator('.not-measured').count() === 0, 'example: shows a "not measured" note');
      const findings = await page.locator('li.finding').count();
      const want = JSON.parse(fs.readFileSync(path.join(root, 'tests/data/report/diagnosis_example.json'))).findings.length;
      check(findings === want, `example: ${findings} findings shown, want ${want}`);
      const png = path.join(out, 'example.png');
      await page.screenshot({ path: png, fullPage: true });
      const size = fs.statSync(png).size;
      const buf = fs.readFileSync(png);
      const w = buf.readUInt32BE(16), h = buf.readUInt32BE(20);
      check(size > 100 * 1024 && size < 20 * 1024 * 1024, `example: screenshot is ${size} bytes`);
      check(w === 1280 && h > 2000, `example: screenshot is ${w}x${h}`);
      problems.forEach((p) => failures.push('example: ' + p));
      console.log(`example: ${charts.length} charts (${charts.map((c) => c.name + ':' + c.points).join(' ')}), ` +
                  `${findings} findings, screenshot ${w}x${h} ${size} bytes`);
    }
    {  // Nothing measured: no canvas, one note per area, still no errors.
      const { page, problems } = await openPage(browser, 'empty.html');
      const charts = await page.evaluate(inspectCharts);
      check(charts.length === 0, `empty: ${charts.length} charts drawn`);
      const notes = await page.locator('.not-measured').evaluateAll((els) => els.map((e) => e.dataset.missing));
      check(JSON.stringify(notes) === JSON.stringify(EMPTY_NOTES), `empty: notes ${JSON.stringify(notes)}`);
      problems.forEach((p) => failures.push('empty: ' + p));
      console.log(`empty: ${notes.length} "not measured" notes`);
    }
    {  // Hostile strings: shown as text, nothing executed, charts still drawn.
      const { page, problems } = await openPage(browser, 'hostile.html');
      const injected = await page.evaluate(() => window.__latdoc_injected === true ||
                                                  document.querySelectorAll('img, iframe, script:not([id="latdoc-data"])').length !== 2);
      check(!injected, 'hostile: markup or script from the input took effect');
      const title = await page.locator('li.finding .title').first().textContent();
      check(title.includes('<script>'), `hostile: title shown as "${title}"`);
      const charts = await page.evaluate(inspectCharts);
      check(charts.length > 0 && charts.every((c) => c.hasChart && c.points > 0), 'hostile: charts not drawn');
      problems.forEach((p) => failures.push('hostile: ' + p));
      console.log(`hostile: ${charts.length} charts, no injection`);
    }
  } finally {
    await browser.close();
  }
  if (failures.length) {
    failures.forEach((f) => console.error('FAIL ' + f));
    process.exit(1);
  }
  console.log('browser test: ok');
})().catch((e) => { console.error('FAIL ' + (e && e.stack || e)); process.exit(1); });
