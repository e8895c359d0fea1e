// latdoc diagnosis report: draws the charts from the JSON in #latdoc-data with Chart.js
// (embedded before this script). Each <canvas data-chart="NAME" data-index="I"> is drawn by
// DRAW[NAME]; the page's markup (findings, tables, "not measured" notes) is static HTML, so a
// report stays readable with scripts off. Text from the data reaches the page only through
// Chart.js, which paints it on canvases: nothing here writes HTML.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('latdoc-data').textContent);
  var C = {
    blue: '#3949ab', red: '#c62828', teal: '#00897b', amber: '#f9a825', grey: '#9aa1ad',
    purple: '#8e24aa', orange: '#ef6c00', green: '#43a047', sky: '#1e88e5'
  };
  Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", Arial, sans-serif';
  Chart.defaults.font.size = 12;
  Chart.defaults.color = '#394152';
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.plugins.legend.labels.boxWidth = 12;

  // As the page's tables print numbers (report/html_report_data.h FormatNumber): a whole number
  // whole ("16", not "16.0"), else 3-4 significant digits; never "-0".
  function fmt(v) {
    if (v === null || v === undefined) return 'n/a';
    var a = Math.abs(v);
    if (a < 1e-9) return '0';
    if (Number.isInteger(v)) return String(v);
    var s = a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : Number(v.toPrecision(3)).toString();
    return /^-0(\.0*)?$/.test(s) ? s.slice(1) : s;
  }
  // Cut from the middle: both ends of a name (a kernel's family and its template arguments)
  // stay readable.
  function clip(s, n) {
    if (s.length <= n) return s;
    var tail = Math.floor((n - 1) / 2), head = n - 1 - tail;
    return s.slice(0, head) + '\u2026' + s.slice(s.length - tail);
  }
  // Ticks of a logarithmic axis at 1, 2 and 5 times the powers of ten inside [min, max]: round
  // numbers, few enough to be labelled side by side (Chart.js's own log ticks label 50, 60, 70
  // ... at the top of a decade, and the labels ran into each other: "506070").
  function ticks125(scale) {
    var out = [];
    if (!(scale.min > 0) || !(scale.max > 0)) return;
    for (var p = Math.floor(Math.log10(scale.min)); Math.pow(10, p) <= scale.max; p++) {
      [1, 2, 5].forEach(function (m) {
        var v = m * Math.pow(10, p);
        if (p < 0) v = Number(v.toPrecision(1));
        if (v >= scale.min && v <= scale.max) out.push({ value: v });
      });
    }
    if (out.length >= 2) scale.ticks = out;
  }

  // A dashed vertical line at x = options.x with a label (the knee).
  var markerPlugin = {
    id: 'latdocMarker',
    afterDatasetsDraw: function (chart, args, opts) {
      if (opts.x === undefined || opts.x === null) return;
      var xs = chart.scales.x, area = chart.chartArea, ctx = chart.ctx;
      var px = xs.getPixelForValue(opts.x);
      if (!(px >= area.left && px <= area.right)) return;
      ctx.save();
      ctx.strokeStyle = opts.color || C.red;
      ctx.setLineDash([5, 4]);
      ctx.lineWidth = 1.5;
      ctx.beginPath(); ctx.moveTo(px, area.top); ctx.lineTo(px, area.bottom); ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = opts.color || C.red;
      ctx.font = '600 12px ' + Chart.defaults.font.family;
      ctx.textAlign = px > (area.left + area.right) / 2 ? 'right' : 'left';
      ctx.fillText(opts.label || '', px + (ctx.textAlign === 'left' ? 6 : -6), area.top + 14);
      ctx.restore();
    }
  };

  var DRAW = {
    'sweep': function (cv) {
      var s = D.sweep;
      var pts = function (k) {
        return s.steps.filter(function (p) { return p[k] !== null; })
          .map(function (p) { return { x: p.x, y: p[k] }; });
      };
      var xs = s.steps.map(function (p) { return p.x; });
      var logx = xs.length > 2 && xs[0] > 0 && xs[xs.length - 1] / xs[0] >= 16;
      var sets = [];
      [['p99_ttft_ms', 'p99 TTFT (ms)', C.red], ['p99_itl_ms', 'p99 ITL (ms)', C.amber],
       ['p99_e2el_ms', 'p99 E2E latency (ms)', C.purple]].forEach(function (m) {
        var d = pts(m[0]);
        if (d.length) sets.push({ label: m[1], data: d, borderColor: m[2], backgroundColor: m[2],
                                  yAxisID: 'y', tension: 0.15, pointRadius: 3 });
      });
      var tp = pts('output_throughput');
      if (tp.length) sets.push({ label: 'output tokens/s', data: tp, borderColor: C.blue,
                                 backgroundColor: C.blue, borderDash: [6, 3], yAxisID: 'y2',
                                 tension: 0.15, pointRadius: 3 });
      var xname = s.x_name === 'request_rate' ? 'request rate (req/s)' : 'concurrency';
      var knee = s.knee ? s.knee.x : null;
      return new Chart(cv, {
        type: 'line', data: { datasets: sets },
        options: {
          parsing: false, interaction: { mode: 'nearest', intersect: false },
          scales: {
            // Horizontal labels only, and Chart.js leaves out those that would overlap.
            x: { type: logx ? 'logarithmic' : 'linear', title: { display: true, text: xname },
                 afterBuildTicks: logx ? ticks125 : undefined,
                 ticks: { maxRotation: 0, autoSkip: true, autoSkipPadding: 8,
                          callback: function (v) { return fmt(v); } } },
            y: { type: 'linear', position: 'left', beginAtZero: true, title: { display: true, text: 'latency (ms)' } },
            y2: { type: 'linear', position: 'right', beginAtZero: true, display: tp.length > 0,
                  grid: { drawOnChartArea: false }, title: { display: true, text: 'output tokens/s' } }
          },
          plugins: { latdocMarker: { x: knee, label: knee === null ? '' :
            'knee ' + fmt(knee) + (s.knee.reached === false ? ' (not reached)' : '') } }
        },
        plugins: [markerPlugin]
      });
    },

    'ttft-waterfall': function (cv) {
      var w = D.waterfall;
      var segs = w.segments.filter(function (s) { return s.ms !== null; });
      var colors = { network_and_front_end_ms: C.sky, network_ms: C.sky, front_end_ms: C.purple,
                     queue_ms: C.red, prefill_ms: C.teal, server_other_ms: C.grey };
      var labels = segs.map(function (s) { return s.label; }).concat(['client TTFT']);
      var data = segs.map(function (s) { return [s.start_ms, s.start_ms + Math.max(0, s.ms)]; })
        .concat([[0, w.client_ttft_ms]]);
      var bg = segs.map(function (s) { return colors[s.key] || C.grey; }).concat([C.blue]);
      return new Chart(cv, {
        type: 'bar',
        data: { labels: labels, datasets: [{ label: 'ms', data: data, backgroundColor: bg,
                                             borderRadius: 3, barPercentage: 0.7 }] },
        options: {
          indexAxis: 'y',
          scales: { x: { beginAtZero: true, title: { display: true, text: 'ms since the request was sent' } } },
          plugins: {
            legend: { display: false },
            tooltip: { callbacks: { label: function (c) {
              var r = c.raw; return fmt(r[1] - r[0]) + ' ms (' + fmt(r[0]) + ' \u2192 ' + fmt(r[1]) + ')'; } } }
          }
        }
      });
    },

    'gpu-time': function (cv) {
      var g = D.gpu_time;
      return new Chart(cv, {
        type: 'doughnut',
        data: { labels: g.parts.map(function (p) { return p.label; }),
                datasets: [{ data: g.parts.map(function (p) { return p.ms; }),
                             backgroundColor: [C.blue, C.purple, C.amber, C.grey], borderWidth: 1 }] },
        options: {
          cutout: '55%',
          plugins: {
            legend: { position: 'right' },
            tooltip: { callbacks: { label: function (c) {
              return c.label + ': ' + fmt(c.raw) + ' ms (' + fmt(100 * c.raw / g.total_ms) + '%)'; } } }
          }
        }
      });
    },

    'kernels': function (cv) {
      var k = D.kernels;
      return new Chart(cv, {
        type: 'bar',
        // Labels cut from the middle (latdoc made them distinct); the tooltip gives the full name.
        data: { labels: k.items.map(function (i) { return i.label || clip(i.name || '(unnamed)', 44); }),
                datasets: [{ label: 'GPU time (ms)', data: k.items.map(function (i) { return i.total_ms; }),
                             backgroundColor: C.blue, borderRadius: 2 }] },
        options: {
          indexAxis: 'y',
          scales: { x: { beginAtZero: true, title: { display: true, text: 'total GPU time (ms)' } },
                    y: { ticks: { font: { size: 11 } } } },
          plugins: {
            legend: { display: false },
            tooltip: { callbacks: {
              title: function (c) { return k.items[c[0].dataIndex].name; },
              label: function (c) {
                var i = k.items[c.dataIndex];
                return fmt(i.total_ms) + ' ms, ' + fmt(i.count) + ' calls, mean ' + fmt(i.mean_us) +
                       ' us' + (i.busy_pct === null ? '' : ', ' + fmt(i.busy_pct) + '% of busy time');
              } } }
          }
        }
      });
    },

    'idle-timeline': function (cv) {
      var g = D.idle;
      return new Chart(cv, {
        type: 'bar',
        data: { datasets: [{ label: 'idle gap (us)', backgroundColor: C.red, barThickness: 6,
                             data: g.gaps.map(function (x) { return { x: x.at_ms, y: x.dur_us }; }) }] },
        options: {
          parsing: { xAxisKey: 'x', yAxisKey: 'y' },
          scales: {
            x: { type: 'linear', min: 0, max: g.span_ms === null ? undefined : g.span_ms,
                 title: { display: true, text: 'time since trace start (ms)' } },
            y: { beginAtZero: true, title: { display: true, text: 'gap length (us)' } }
          },
          plugins: {
            legend: { display: false },
            tooltip: { callbacks: { label: function (c) {
              var x = g.gaps[c.dataIndex];
              return fmt(x.dur_us) + ' us idle at ' + fmt(x.at_ms) + ' ms, before ' + clip(x.next_op, 60); } } }
          }
        }
      });
    },

    'steps': function (cv) {
      var s = D.steps;
      var labels = s.items.map(function (i) { return String(i.index); });
      return new Chart(cv, {
        type: 'bar',
        data: { labels: labels, datasets: [
          { label: 'GPU busy (ms)', data: s.items.map(function (i) { return i.busy_ms; }), backgroundColor: C.blue },
          { label: 'GPU waiting (ms)', data: s.items.map(function (i) { return Math.max(0, i.wall_ms - i.busy_ms); }),
            backgroundColor: C.grey } ] },
        options: {
          scales: { x: { stacked: true, title: { display: true, text: 'step' } },
                    y: { stacked: true, beginAtZero: true, title: { display: true, text: 'step time (ms)' } } },
          plugins: { tooltip: { callbacks: { footer: function (c) {
            var i = s.items[c[0].dataIndex];
            return 'step ' + fmt(i.wall_ms) + ' ms, GPU busy ' + fmt(100 * i.busy_ms / i.wall_ms) + '%'; } } } }
        }
      });
    },

    'idle-histogram': function (cv) {
      var g = D.idle;
      return new Chart(cv, {
        type: 'bar',
        data: { labels: g.histogram.map(function (b) { return b.label; }),
                datasets: [{ label: 'gaps', data: g.histogram.map(function (b) { return b.count; }),
                             backgroundColor: C.amber, borderRadius: 2 }] },
        options: {
          scales: { x: { title: { display: true, text: 'gap length' } },
                    y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: 'gaps' } } },
          plugins: { legend: { display: false } }
        }
      });
    },

    'server-series': function (cv) {
      var s = D.server_series[Number(cv.getAttribute('data-index'))];
      var xy = function (col) {
        var out = [];
        for (var i = 0; i < s.t_s.length; i++) if (col[i] !== null && col[i] !== undefined) out.push({ x: s.t_s[i], y: col[i] });
        return out;
      };
      var sets = [
        { label: 'running', data: xy(s.running), borderColor: C.blue, backgroundColor: C.blue, yAxisID: 'y' },
        { label: 'waiting', data: xy(s.waiting), borderColor: C.red, backgroundColor: C.red, yAxisID: 'y' },
        { label: 'KV cache used (%)', data: xy(s.kv_pct), borderColor: C.teal, backgroundColor: C.teal,
          borderDash: [6, 3], yAxisID: 'y2' }
      ].filter(function (d) { return d.data.length > 0; });
      sets.forEach(function (d) { d.pointRadius = 0; d.borderWidth = 1.8; d.stepped = true; });
      return new Chart(cv, {
        type: 'line', data: { datasets: sets },
        options: {
          parsing: false, interaction: { mode: 'nearest', axis: 'x', intersect: false },
          scales: {
            // Time since the load began: the axis starts at 0 (Chart.js would round it down to a
            // "nice" -5 s, an empty band before anything was measured). The first scrape can be
            // a few microseconds early; only a series that really starts earlier keeps its start.
            x: { type: 'linear', min: s.t_s.length && s.t_s[0] < -1 ? s.t_s[0] : 0,
                 title: { display: true, text: 'time (s)' } },
            y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: 'requests' } },
            y2: { position: 'right', min: 0, max: 100, grid: { drawOnChartArea: false },
                  title: { display: true, text: 'KV cache (%)' } }
          }
        }
      });
    }
  };

  // The stall timeline (docs/attribution.md): panels on one time axis, stacked top to bottom:
  // ITL p99 per bin with each stall a triangle at its start, as high as it lasted, coloured by
  // its cause; the server's running and waiting; the output token rate with each throughput dip
  // a diamond at its start and rate; and, when diagnose sampled them, the run queue, the busiest
  // server thread's CPU and PSI (--local), the server log's write rate and the GPU kernel time
  // per bin.
  DRAW['attribution-timeline'] = function (cv) {
    var a = D.attribution;
    var xy = function (col) {
      var out = [];
      if (!col) return out;
      for (var i = 0; i < a.t_s.length; i++) if (col[i] !== null && col[i] !== undefined) out.push({ x: a.t_s[i], y: col[i] });
      return out;
    };
    var sets = [
      { label: 'ITL p99 (ms)', data: xy(a.itl_p99_ms), borderColor: C.purple, backgroundColor: C.purple, yAxisID: 'y' },
      { label: 'running', data: xy(a.running), borderColor: C.blue, backgroundColor: C.blue, yAxisID: 'yq', stepped: true },
      { label: 'waiting', data: xy(a.waiting), borderColor: C.red, backgroundColor: C.red, yAxisID: 'yq', stepped: true },
      { label: 'output tokens/s', data: xy(a.output_tok_s), borderColor: C.teal, backgroundColor: C.teal, yAxisID: 'ytok' },
      { label: 'run queue (less the sampler)', data: xy(a.run_queue), borderColor: C.grey, backgroundColor: C.grey, yAxisID: 'yrq', stepped: true },
      { label: 'busiest server thread (% of a CPU)', data: xy(a.thread_busy_pct), borderColor: C.orange, backgroundColor: C.orange, yAxisID: 'ycpu' },
      { label: 'PSI cpu (%)', data: xy(a.psi_cpu_pct), borderColor: C.sky, backgroundColor: C.sky, yAxisID: 'ycpu' },
      { label: 'PSI memory (%)', data: xy(a.psi_memory_pct), borderColor: C.red, backgroundColor: C.red, yAxisID: 'ycpu', borderDash: [4, 3] },
      { label: 'PSI io (%)', data: xy(a.psi_io_pct), borderColor: C.purple, backgroundColor: C.purple, yAxisID: 'ycpu', borderDash: [2, 2] },
      { label: 'log writes (KiB/s)', data: xy(a.log_write_kib_s), borderColor: C.amber, backgroundColor: C.amber, yAxisID: 'ylog' },
      { label: 'GPU kernel time (ms per bin)', data: xy(a.gpu_kernel_ms), borderColor: C.green, backgroundColor: C.green, yAxisID: 'ygpu' }
    ].filter(function (d) { return d.data.length > 0; });
    sets.forEach(function (d) { d.pointRadius = 0; d.borderWidth = 1.6; });
    var used = {};
    sets.forEach(function (d) { used[d.yAxisID] = true; });
    var palette = [C.orange, C.teal, C.amber, C.green, C.sky];
    var causes = [];
    a.stalls.forEach(function (s) { if (causes.indexOf(s.cause) < 0) causes.push(s.cause); });
    var dips = a.dips || [];
    dips.forEach(function (d) { if (causes.indexOf(d.cause) < 0) causes.push(d.cause); });
    causes.forEach(function (c, i) {
      var col = c === 'unexplained' ? C.grey : palette[i % palette.length];
      var mine = a.stalls.filter(function (s) { return s.cause === c; });
      if (mine.length > 0) {
        sets.push({ type: 'scatter', label: 'stall: ' + c, yAxisID: 'y', pointStyle: 'triangle', pointRadius: 6,
                    borderColor: col, backgroundColor: col,
                    data: mine.map(function (s) { return { x: s.at_s, y: s.dur_ms }; }) });
      }
      var dipped = dips.filter(function (d) { return d.cause === c; });
      if (dipped.length > 0 && used.ytok) {
        sets.push({ type: 'scatter', label: 'dip: ' + c, yAxisID: 'ytok', pointStyle: 'rectRot', pointRadius: 6,
                    borderColor: col, backgroundColor: col,
                    data: dipped.map(function (d) { return { x: d.at_s, y: d.rate_tok_s }; }) });
      }
    });
    // Chart.js stacks the axes of one stack bottom to top in the order given: the lowest panel
    // first. Panels without data are left out.
    var panels = [
      ['ygpu', 1, 'GPU ms / bin'], ['ylog', 1, 'log KiB/s'], ['ycpu', 1, 'host CPU, PSI (%)'],
      ['yrq', 1, 'run queue'], ['ytok', 1, 'tokens/s'], ['yq', 1, 'requests'], ['y', 3, 'ITL p99 / stall (ms)']
    ];
    var scales = { x: { type: 'linear', min: 0, title: { display: true, text: 'time since the load began (s)' } } };
    panels.forEach(function (p) {
      if (p[0] !== 'y' && !used[p[0]]) return;
      scales[p[0]] = { stack: 'panels', stackWeight: p[1], offset: true, beginAtZero: true,
                       ticks: p[0] === 'yq' || p[0] === 'yrq' ? { precision: 0, maxTicksLimit: 4 } : { maxTicksLimit: p[1] > 1 ? 8 : 4 },
                       grace: p[1] > 1 ? 0 : '10%',
                       title: { display: true, text: p[2] } };
    });
    // Each panel under the queue's adds to the chart's height, so that none is squeezed.
    var extra = ['ylog', 'ygpu', 'ycpu', 'yrq', 'ytok'].filter(function (k) { return used[k]; }).length;
    if (extra > 0 && cv.parentNode) cv.parentNode.style.height = (360 + 110 * extra) + 'px';
    return new Chart(cv, {
      type: 'line', data: { datasets: sets },
      options: { parsing: false, interaction: { mode: 'nearest', intersect: false }, scales: scales }
    });
  };

  var canvases = document.querySelectorAll('canvas[data-chart]');
  for (var i = 0; i < canvases.length; i++) {
    var cv = canvases[i], name = cv.getAttribute('data-chart');
    if (!DRAW[name]) { console.error('latdoc report: no chart named ' + name); continue; }
    DRAW[name](cv);
  }
})();
