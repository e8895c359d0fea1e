// The HTML report in a real browser: node report_test.cjs REPO_ROOT OUT_DIR (see run.sh).
// Opens OUT_DIR/{example,empty,hostile}.html from disk in headless Chromium (Debian's binary,
// driven by playwright-core from report-assets/) with the network blocked, and checks each
// page's contract. Writes OUT_DIR/example.png, full-page screenshots at 1400 and 800 px wide
// (example-1400.png, example-800.png) and crops of their latency, queue and kernel charts. Exits 1 with one line per failed check.
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

async function openPage(browser, file, width = 1280) {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
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

// The x-axis tick labels of the chart on canvas[data-chart=NAME] as Chart.js placed them: each
// label's text, its box left and right in CSS pixels (measured in the chart's own font), its
// rotation; and the axis' first and last value.
function xTickLabels(name) {
  const cv = document.querySelector(`canvas[data-chart="${name}"]`);
  const chart = cv && window.Chart && window.Chart.getChart(cv);
  if (!chart) return null;
  const x = chart.scales.x;
  const ctx = document.createElement('canvas').getContext('2d');
  const labels = x.getLabelItems().map((it) => {
    ctx.font = it.font.string;
    const text = Array.isArray(it.label) ? it.label.join(' ') : String(it.label);
    const w = ctx.measureText(text).width;
    const px = it.options.translation[0];
    const align = it.options.textAlign;
    const left = align === 'left' ? px : align === 'right' ? px - w : px - w / 2;
    return { text, left, right: left + w, rotation: it.options.rotation };
  });
  return { labels, min: x.min, max: x.max, width: chart.width };
}

// The kernel chart's y labels: their text and their box left and right in CSS pixels.
function kernelLabels() {
  const cv = document.querySelector('canvas[data-chart="kernels"]');
  const chart = cv && window.Chart && window.Chart.getChart(cv);
  if (!chart) return null;
  const ctx = document.createElement('canvas').getContext('2d');
  return chart.scales.y.getLabelItems().map((it) => {
    ctx.font = it.font.string;
    const text = String(it.label);
    const w = ctx.measureText(text).width;
    const px = it.options.translation[0];
    const align = it.options.textAlign;
    const left = align === 'left' ? px : align === 'right' ? px - w : px - w / 2;
    return { text, left, right: left + w };
  });
}

// Problems with a chart's x tick labels: fewer than `least`, any rotated, any two overlapping.
function tickProblems(where, t, least) {
  const out = [];
  if (!t) return [`${where}: no chart`];
  const shown = t.labels.filter((l) => l.text !== '').length;
  if (shown < least) out.push(`${where}: ${shown} x tick labels, want at least ${least}`);
  const byX = t.labels.filter((l) => l.text !== "").sort((a, b) => a.left - b.left);
  for (let i = 0; i < byX.length; i++) {
    if (byX[i].rotation !== 0) out.push(`${where}: tick "${byX[i].text}" rotated ${byX[i].rotation}`);
    if (i > 0 && byX[i].left < byX[i - 1].right + 2) {
      out.push(`${where}: ticks "${byX[i - 1].text}" [${byX[i - 1].left.toFixed(1)}, ${byX[i - 1].right.toFixed(1)}] ` +
               `and "${byX[i].text}" [${byX[i].left.toFixed(1)}, ${byX[i].right.toFixed(1)}] overlap`);
    }
  }
  return out;
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
    // The latency curve's x axis at a wide and a narrow window: horizontal tick labels that do
    // not run into each other (they once printed "506070"); the queue chart's time axis starts
    // at 0. Screenshots of both widths are kept for a look.
    for (const width of [1400, 800]) {
      const { page, problems } = await openPage(browser, 'example.html', width);
      const t = await page.evaluate(xTickLabels, 'sweep');
      tickProblems(`example@${width}: latency curve`, t, 4).forEach((p) => failures.push(p));
      // Kernel names: cut from the middle, different for different kernels, whole on the canvas
      // (they were cut at both ends: "_fort_native_sdpa_sm80_flash_fprop_wmma_...").
      const k = await page.evaluate(kernelLabels);
      check(k && k.length === 12, `example@${width}: ${k && k.length} kernel labels, want 12`);
      if (k) {
        check(new Set(k.map((l) => l.text)).size === k.length, `example@${width}: kernel labels repeat: ${k.map((l) => l.text).join(' | ')}`);
        k.forEach((l) => check(l.left >= 0, `example@${width}: kernel label "${l.text}" starts at ${l.left.toFixed(1)} px, off the canvas`));
      }
      const q = await page.evaluate(xTickLabels, 'server-series');
      check(q && q.min === 0, `example@${width}: queue chart x axis starts at ${q && q.min}, want 0`);
      const png = path.join(out, `example-${width}.png`);
      await page.screenshot({ path: png, fullPage: true });
      await page.locator('#latency figure').first().screenshot({ path: path.join(out, `latency-${width}.png`) });
      await page.locator('#server figure').first().screenshot({ path: path.join(out, `queue-${width}.png`) });
      await page.locator('#gpu figure').nth(1).screenshot({ path: path.join(out, `kernels-${width}.png`) });
      const buf = fs.readFileSync(png);
      check(buf.readUInt32BE(16) === width, `example@${width}: screenshot ${buf.readUInt32BE(16)} px wide`);
      problems.forEach((p) => failures.push(`example@${width}: ` + p));
      console.log(`example@${width}: latency curve x ticks ${t && t.labels.map((l) => l.text).join(' ')}; ` +
                  `queue chart x from ${q && q.min}`);
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
