// The dashboard's page: it reads the run logs' records from the server's
// event stream and draws them. No library: the charts are plain SVG drawn
// here, and nothing is loaded from anywhere but this server.
(function () {
  'use strict';

  const SVG = 'http://www.w3.org/2000/svg';
  // Okabe–Ito: told apart with any colour vision. Ordered so that the first
  // colours differ most; yellow, pale on white, comes last.
  // MUTED marks what is not one run or device (style.css's --muted), INK a
  // mark over the lines (--ink).
  const MUTED = '#5d6773', INK = '#1c232b';
  const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#F0E442'];
  // Beyond the palette, a dash pattern tells the lines apart.
  const DASHES = ['', '7 3', '2 3', '8 3 2 3'];
  // Past this many points, a chart draws its lines only: circles would
  // cost more than they show.
  const MAX_POINTS = 3000;

  const colour = (i) => PALETTE[i % PALETTE.length];
  const dashOf = (i) => DASHES[Math.floor(i / PALETTE.length) % DASHES.length];

  // ---- state: the records of each run, by kind ----

  let runs = [];
  let instance = null;
  let source = null;

  function newRun(name) {
    return {
      name: name, records: 0, config: null, evals: [], merges: [], asyncs: [],
      faults: [], resumes: [], restarts: [], warnings: [], notes: [], done: null, rates: [], mark: { samples: 0, t: 0 },
    };
  }

  function runAt(i) {
    while (runs.length <= i) runs.push(newRun('run ' + runs.length));
    return runs[i];
  }

  const isNum = (v) => typeof v === 'number' && isFinite(v);

  function onRecord(i, rec) {
    const r = runAt(i);
    r.records++;
    switch (rec.event) {
      case 'config': r.config = rec; break;
      case 'eval':
        r.evals.push(rec);
        // Samples per second since the previous evaluation (or the start,
        // or the point a resumed run took up from).
        if (isNum(rec.samples) && isNum(rec.train_seconds)) {
          const dt = rec.train_seconds - r.mark.t;
          if (dt > 0 && rec.samples >= r.mark.samples) {
            r.rates.push({ x: rec.train_seconds, y: (rec.samples - r.mark.samples) / dt });
          }
          r.mark = { samples: rec.samples, t: rec.train_seconds };
        }
        break;
      case 'merge': r.merges.push(rec); break;
      case 'async': r.asyncs.push(rec); break;
      case 'fault': r.faults.push(rec); break;
      case 'resume':
        r.resumes.push(rec);
        if (isNum(rec.samples) && isNum(rec.train_seconds)) r.mark = { samples: rec.samples, t: rec.train_seconds };
        break;
      case 'restart': {
        // A restarted job's account (hetsgd launch), at its first step:
        // placed where it resumed.
        const last = r.resumes[r.resumes.length - 1];
        r.restarts.push(Object.assign({ t: last ? last.train_seconds : 0 }, rec));
        break;
      }
      case 'warning': r.warnings.push(rec); break;
      case 'note': r.notes.push(rec); break;
      case 'done': r.done = rec; break;
    }
  }

  // ---- the event stream ----

  function connect() {
    source = new EventSource('events');
    source.onopen = () => setStatus('live');
    source.onerror = () => setStatus(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
    source.addEventListener('hello', (e) => {
      const h = JSON.parse(e.data);
      if (instance !== null && instance !== h.instance) {
        // Another server: what this page holds may not be its runs.
        source.close();
        instance = null;
        runs = [];
        schedule();
        connect();
        return;
      }
      instance = h.instance;
      h.runs.forEach((name, i) => { runAt(i).name = name; });
      schedule();
    });
    source.addEventListener('run', (e) => {
      const d = JSON.parse(e.data);
      runAt(d.run).name = d.name;
      schedule();
    });
    source.addEventListener('reset', (e) => {
      const d = JSON.parse(e.data);
      runs[d.run] = newRun(runAt(d.run).name);
      schedule();
    });
    source.onmessage = (e) => {
      const run = parseInt(e.lastEventId, 10);
      let rec;
      try { rec = JSON.parse(e.data); } catch (err) { return; }
      if (!(run >= 0) || rec === null || typeof rec !== 'object' || Array.isArray(rec)) return;
      onRecord(run, rec);
      schedule();
    };
  }

  let statusWord = 'connecting…';
  function setStatus(s) {
    const el = document.getElementById('status');
    el.className = 'status ' + s;
    statusWord = { live: 'live', reconnecting: 'reconnecting…', closed: 'disconnected' }[s] || s;
    schedule();
  }

  // Records come in bursts (a late page receives a whole history at once):
  // drawing at most every 150 ms keeps the page responsive.
  let timer = null;
  function schedule() {
    if (timer === null) timer = setTimeout(() => { timer = null; render(); }, 150);
  }
  window.addEventListener('resize', schedule);

  // ---- numbers ----

  function fmt(v, sig) {
    if (!isNum(v)) return v === undefined || v === null ? '—' : String(v);
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return v.toLocaleString('en-US');
    const a = Math.abs(v);
    if (a !== 0 && (a < 1e-4 || a >= 1e9)) return v.toExponential((sig || 4) - 1);
    return String(parseFloat(v.toPrecision(sig || 4)));
  }

  function fmtSeconds(v) {
    return isNum(v) ? fmt(v, 3) + ' s' : '—';
  }

  // niceScale picks round tick steps (1, 2 or 5 × 10^k) for lo..hi. The
  // axis ends at a tick when one is near, else just past the data: an axis
  // rounded up to its next tick could leave a fifth of the chart empty.
  function niceScale(lo, hi, n) {
    if (!(hi > lo)) {
      const pad = Math.abs(lo) > 0 ? Math.abs(lo) * 0.1 : 1;
      lo = lo >= 0 && lo - pad < 0 ? 0 : lo - pad;
      hi += pad;
    }
    const span = hi - lo;
    const raw = span / n;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const r = raw / mag;
    const step = (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
    const up = Math.ceil(hi / step - 1e-9) * step;
    const down = Math.floor(lo / step + 1e-9) * step;
    const dhi = up - hi <= 0.08 * span ? up : hi + 0.02 * span;
    const dlo = lo === 0 ? 0 : lo - down <= 0.08 * span ? down : lo - 0.02 * span;
    const ticks = [];
    for (let k = Math.ceil(dlo / step - 1e-9); k <= Math.floor(dhi / step + 1e-9); k++) ticks.push(k * step);
    return { lo: dlo, hi: dhi, step: step, ticks: ticks };
  }

  function tickLabel(v, step, top) {
    // Thousands from 10k, millions from 1M: "1.6M", "250k", but "1200".
    const units = [[1e9, 'G', 1e9], [1e6, 'M', 1e6], [1e3, 'k', 1e4]];
    for (const [u, s, from] of units) {
      if (Math.abs(top) >= from) {
        const dec = Math.max(0, Math.min(6, -Math.floor(Math.log10(step / u) + 1e-9)));
        return v === 0 ? '0' : parseFloat((v / u).toFixed(dec)) + s;
      }
    }
    const dec = Math.max(0, Math.min(10, -Math.floor(Math.log10(step) + 1e-9)));
    return v.toFixed(dec);
  }

  // ---- drawing ----

  function el(name, attrs, parent) {
    const e = document.createElementNS(SVG, name);
    for (const k in attrs) if (attrs[k] !== undefined && attrs[k] !== '') e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function h(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // swatch draws a legend's sample of a line, a marker line or a mark.
  function swatch(item) {
    const s = el('svg', { width: 22, height: 10, viewBox: '0 0 22 10', 'aria-hidden': 'true' });
    if (item.kind === 'mark') {
      el('path', { d: 'M6,1 L16,1 L11,9 Z', fill: item.colour }, s);
    } else if (item.kind === 'vline') {
      el('line', { x1: 11, x2: 11, y1: 0, y2: 10, stroke: item.colour, 'stroke-width': 1.5, 'stroke-dasharray': item.dash }, s);
    } else {
      el('line', { x1: 1, x2: 21, y1: 5, y2: 5, stroke: item.colour, 'stroke-width': 2, 'stroke-dasharray': item.dash }, s);
    }
    return s;
  }

  // drawChart draws spec into its card: series of points, joined, with
  // vertical marker lines (faults, resumptions) and marks along the top
  // (perturbed merges). Every point is a circle carrying data-run, data-x
  // and data-y (and data-series, data-device where they apply).
  function drawChart(card, spec) {
    const width = Math.max(320, Math.floor(card.fig.clientWidth - 28)) || 560;
    const H = 250;
    const m = { l: 58, r: 16, t: spec.marks.length ? 16 : 10, b: 40 };
    const xs = [], ys = [];
    let npoints = 0;
    for (const s of spec.series) for (const p of s.points) { xs.push(p.x); ys.push(p.y); npoints++; }
    for (const v of spec.vlines) xs.push(v.x);
    for (const k of spec.marks) xs.push(k.x);
    // Loops, not Math.min(...xs): a long run's points overflow the stack.
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const x of xs) { if (x < x0) x0 = x; if (x > x1) x1 = x; }
    for (const y of ys) { if (y < y0) y0 = y; if (y > y1) y1 = y; }
    if (spec.xZero) x0 = Math.min(0, x0);
    if (spec.yZero) y0 = Math.min(0, y0);
    const sx = niceScale(x0, x1, Math.max(3, Math.round((width - m.l - m.r) / 90)));
    const sy = niceScale(y0, y1, 5);
    const px = (x) => m.l + (x - sx.lo) / (sx.hi - sx.lo) * (width - m.l - m.r);
    const py = (y) => H - m.b - (y - sy.lo) / (sy.hi - sy.lo) * (H - m.t - m.b);

    const svg = el('svg', { class: 'chart', viewBox: `0 0 ${width} ${H}`, role: 'img', 'aria-label': spec.title });
    const grid = el('g', { class: 'grid' }, svg);
    for (const t of sy.ticks) {
      const y = py(t);
      el('line', { x1: m.l, x2: width - m.r, y1: y, y2: y }, grid);
      el('text', { x: m.l - 6, y: y + 3.5, 'text-anchor': 'end' }, svg).textContent = tickLabel(t, sy.step, Math.max(Math.abs(sy.lo), Math.abs(sy.hi)));
    }
    for (const t of sx.ticks) {
      const x = px(t);
      el('line', { x1: x, x2: x, y1: m.t, y2: H - m.b }, grid);
      el('text', { x: x, y: H - m.b + 15, 'text-anchor': 'middle' }, svg).textContent = tickLabel(t, sx.step, Math.max(Math.abs(sx.lo), Math.abs(sx.hi)));
    }
    el('line', { class: 'axis', x1: m.l, x2: width - m.r, y1: H - m.b, y2: H - m.b }, svg);
    el('line', { class: 'axis', x1: m.l, x2: m.l, y1: m.t, y2: H - m.b }, svg);
    el('text', { class: 'label', x: m.l + (width - m.l - m.r) / 2, y: H - 6, 'text-anchor': 'middle' }, svg).textContent = spec.xLabel;
    el('text', { class: 'label', x: 0, y: 0, 'text-anchor': 'middle', transform: `translate(14 ${m.t + (H - m.t - m.b) / 2}) rotate(-90)` }, svg).textContent = spec.yLabel;

    for (const v of spec.vlines) {
      const x = px(v.x);
      const line = el('line', { class: 'vline ' + v.kind, x1: x, x2: x, y1: m.t, y2: H - m.b, stroke: v.colour, 'stroke-dasharray': v.dash, 'data-run': v.run, 'data-x': v.x }, svg);
      el('title', {}, line).textContent = v.title;
    }
    for (const k of spec.marks) {
      const x = px(k.x);
      const mark = el('path', { class: 'mark ' + k.kind, d: `M${x - 4},${m.t - 10} L${x + 4},${m.t - 10} L${x},${m.t - 3} Z`, fill: k.colour, 'data-run': k.run, 'data-x': k.x }, svg);
      el('title', {}, mark).textContent = k.title;
    }
    const dots = npoints <= MAX_POINTS;
    for (const s of spec.series) {
      if (s.points.length > 1) {
        const d = s.points.map((p, i) => (i ? 'L' : 'M') + px(p.x).toFixed(1) + ',' + py(p.y).toFixed(1)).join('');
        el('path', { class: 'series', d: d, stroke: s.colour, 'stroke-dasharray': s.dash }, svg);
      }
      if (!dots && s.points.length > 1) continue;
      const g = el('g', s.hollow ? { class: 'hollow', fill: '#ffffff', stroke: s.colour } : { fill: s.colour }, svg);
      for (const p of s.points) {
        const c = el('circle', { cx: px(p.x).toFixed(1), cy: py(p.y).toFixed(1), r: 2.6, 'data-run': s.run, 'data-series': s.key, 'data-device': s.device, 'data-x': String(p.x), 'data-y': String(p.y) }, g);
        el('title', {}, c).textContent = `${s.label}: ${fmt(p.y, 4)} at ${spec.xName} ${fmt(p.x, 4)}`;
      }
    }
    card.fig.replaceChild(svg, card.svg);
    card.svg = svg;
  }

  // ---- what to draw ----

  // chartsOf returns the charts of each section that have data.
  function chartsOf() {
    const multi = runs.length > 1;
    const training = [], devices = [], async = [];
    // Under the virtual clock the seconds are simulated: say so.
    const clocks = new Set(runs.filter((r) => r.config && r.config.clock).map((r) => r.config.clock));
    const virtual = clocks.size === 1 && clocks.has('virtual');
    const time = { xLabel: virtual ? 'training time (s, virtual clock)' : 'training time (s)', xName: 'time (s)', xZero: true };
    const epochs = { xLabel: 'epochs', xName: 'epoch', xZero: true };
    // The runs a chart draws, when there are several.
    const runLegend = (series) => {
      if (!multi) return [];
      const drawn = new Set(series.filter((s) => s.points.length).map((s) => s.run));
      return runs.map((r, i) => ({ i: i, label: r.name, colour: colour(i), dash: dashOf(i) })).filter((x) => drawn.has(x.i));
    };

    // Faults and resumptions, as vertical lines on a time axis.
    const markers = (which) => {
      const out = [];
      runs.forEach((r, i) => {
        if (which !== undefined && which !== i) return;
        for (const f of r.faults) {
          if (!isNum(f.time)) continue;
          out.push({ kind: 'fault', run: i, x: f.time, colour: colour(i), dash: '4 3', title: `${r.name}: fault, ${faultText(f)}` });
        }
        for (const s of r.resumes) {
          if (!isNum(s.train_seconds)) continue;
          out.push({ kind: 'resume', run: i, x: s.train_seconds, colour: colour(i), dash: '1 3', title: `${r.name}: resumed from ${s.checkpoint || 'a checkpoint'}` });
        }
      });
      return out;
    };
    const neutral = multi ? MUTED : colour(0); // the legend's colour of a kind of line
    const markerLegend = (vl) => {
      const out = [];
      if (vl.some((v) => v.kind === 'fault')) out.push({ kind: 'vline', label: 'fault', colour: neutral, dash: '4 3' });
      if (vl.some((v) => v.kind === 'resume')) out.push({ kind: 'vline', label: 'resumed', colour: neutral, dash: '1 3' });
      return out;
    };

    const perRun = (key, pick) => runs.map((r, i) => ({
      key: key, run: i, label: r.name, colour: colour(i), dash: dashOf(i), points: pick(r),
    })).filter((s) => s.points.length > 0);
    const evalPoints = (xf, yf) => (r) => r.evals.filter((e) => isNum(e[xf]) && isNum(e[yf])).map((e) => ({ x: e[xf], y: e[yf] }));

    const add = (list, spec) => {
      if (spec.series.some((s) => s.points.length > 0)) {
        list.push(Object.assign({ vlines: [], marks: [], legend: [] }, spec));
      }
    };

    const tm = markers();
    const p1t = perRun('p1', evalPoints('train_seconds', 'p1'));
    add(training, Object.assign({ id: 'p1-time', title: 'P@1 against training time', yLabel: 'P@1', yZero: true, series: p1t, vlines: tm, legend: runLegend(p1t).concat(markerLegend(tm)) }, time));
    const p1e = perRun('p1', evalPoints('epoch', 'p1'));
    add(training, Object.assign({ id: 'p1-epoch', title: 'P@1 against epochs', yLabel: 'P@1', yZero: true, series: p1e, legend: runLegend(p1e) }, epochs));
    // A secondary line of a run (the train loss beside the test loss, the
    // maximum staleness beside the mean): dashed, with hollow points.
    const secondary = (series, suffix) => series.map((s) => Object.assign(s, { dash: '6 3', hollow: true, label: s.label + suffix }));
    // Propensity-scored precision (logs that have it): PSP@1, and PSP@5
    // as a secondary line.
    const pspSeries = (xf) => perRun('psp1', evalPoints(xf, 'psp1')).concat(
      secondary(perRun('psp5', evalPoints(xf, 'psp5')), ' (PSP@5)'));
    const pspLegend = (series) => runLegend(series).concat([{ label: 'PSP@1', colour: neutral, dash: '' }, { label: 'PSP@5', colour: neutral, dash: '6 3' }]);
    const pt = pspSeries('train_seconds');
    add(training, Object.assign({ id: 'psp-time', title: 'Propensity-scored precision against training time', yLabel: 'PSP@k', yZero: true, series: pt, vlines: tm, legend: pspLegend(pt).concat(markerLegend(tm)) }, time));
    const lossSeries = (xf) => perRun('loss', evalPoints(xf, 'loss')).concat(
      secondary(perRun('train_loss', evalPoints(xf, 'train_loss')), ' (train)'));
    const lossLegend = (series) => runLegend(series).concat([{ label: 'test loss', colour: neutral, dash: '' }, { label: 'train loss', colour: neutral, dash: '6 3' }]);
    const lt = lossSeries('train_seconds'), le = lossSeries('epoch');
    add(training, Object.assign({ id: 'loss-time', title: 'Loss against training time', yLabel: 'cross-entropy loss', series: lt, vlines: tm, legend: lossLegend(lt).concat(markerLegend(tm)) }, time));
    add(training, Object.assign({ id: 'loss-epoch', title: 'Loss against epochs', yLabel: 'cross-entropy loss', series: le, legend: lossLegend(le) }, epochs));
    const tp = perRun('rate', (r) => r.rates);
    add(training, Object.assign({ id: 'throughput', title: 'Samples per second', yLabel: 'samples/s', yZero: true, series: tp, vlines: tm, legend: runLegend(tp).concat(markerLegend(tm)) }, time));

    // One set of per-device charts per run that merges: a line per device.
    runs.forEach((r, i) => {
      if (r.merges.length === 0) return;
      const n = r.merges.reduce((n, m) => Math.max(n, len(m.batch_sizes), len(m.lrs), len(m.updates), len(m.weights)), 0);
      const devSeries = (field) => {
        const out = [];
        for (let d = 0; d < n; d++) {
          const pts = [];
          for (const m of r.merges) if (isNum(m.time) && Array.isArray(m[field]) && isNum(m[field][d])) pts.push({ x: m.time, y: m[field][d] });
          out.push({ key: field, run: i, device: d, label: 'device ' + d, colour: colour(d), dash: dashOf(d), points: pts });
        }
        return out;
      };
      const devLegend = [];
      for (let d = 0; d < n; d++) devLegend.push({ label: 'device ' + d, colour: colour(d), dash: dashOf(d) });
      const vl = markers(i).map((v) => Object.assign(v, { colour: MUTED }));
      const mlegend = devLegend.concat(markerLegend(vl).map((x) => Object.assign(x, { colour: MUTED })));
      const suffix = multi ? r.name : '';
      add(devices, Object.assign({ id: 'batch-' + i, run: suffix, title: 'Batch size', yLabel: 'batch size (samples)', yZero: true, series: devSeries('batch_sizes'), vlines: vl, legend: mlegend }, time));
      add(devices, Object.assign({ id: 'lr-' + i, run: suffix, title: 'Learning rate', yLabel: 'learning rate', yZero: true, series: devSeries('lrs'), vlines: vl, legend: mlegend }, time));
      add(devices, Object.assign({ id: 'updates-' + i, run: suffix, title: 'Updates per merge', yLabel: 'updates', yZero: true, series: devSeries('updates'), vlines: vl, legend: mlegend }, time));
      const pert = r.merges.filter((m) => m.perturbed === true && isNum(m.time)).map((m) => ({ kind: 'perturbed', run: i, x: m.time, colour: INK, title: `perturbed merge at ${fmt(m.time, 4)} s` }));
      add(devices, Object.assign({ id: 'weights-' + i, run: suffix, title: 'Merge weight α', yLabel: 'weight α', yZero: true, series: devSeries('weights'), vlines: vl, marks: pert,
        legend: mlegend.concat(pert.length ? [{ kind: 'mark', label: 'perturbed merge', colour: INK }] : []) }, time));
    });

    const asyncPoints = (f) => (r) => r.asyncs.filter((a) => isNum(a.time) && isNum(a[f])).map((a) => ({ x: a.time, y: a[f] }));
    const pi = perRun('median_pi', asyncPoints('median_pi'));
    add(async, Object.assign({ id: 'median-pi', title: 'GEM: median π', yLabel: 'median π', series: pi, legend: runLegend(pi) }, time));
    const stale = perRun('mean_staleness', asyncPoints('mean_staleness')).concat(
      secondary(perRun('max_staleness', asyncPoints('max_staleness')), ' (max)'));
    add(async, Object.assign({ id: 'staleness', title: 'Staleness of commits', yLabel: 'staleness (updates)', yZero: true, series: stale,
      legend: runLegend(stale).concat([{ label: 'mean', colour: neutral, dash: '' }, { label: 'max', colour: neutral, dash: '6 3' }]) }, time));
    return { training: training, devices: devices, async: async };
  }

  const len = (a) => Array.isArray(a) ? a.length : 0;

  function faultText(f) {
    let s = isNum(f.rank) ? `rank ${f.rank}: ${f.kind}` : `device ${f.device}: ${f.kind}`;
    if (isNum(f.factor)) s += ` ×${fmt(f.factor, 3)}`;
    if (f.left) s += ', left the run';
    if (isNum(f.live)) s += ` (${f.live} live)`;
    return s;
  }

  // ---- the page ----

  const cards = new Map();

  function renderSection(name, specs) {
    const section = document.getElementById(name);
    const grid = document.getElementById(name + '-charts');
    section.hidden = specs.length === 0;
    const figs = [];
    const seen = new Set();
    for (const spec of specs) {
      let card = cards.get(spec.id);
      if (!card) {
        const fig = h('figure', 'card');
        fig.dataset.chart = spec.id;
        const cap = h('figcaption');
        const title = h('h3');
        const legend = h('div', 'legend');
        cap.append(title, legend);
        const svg = el('svg', { class: 'chart' });
        fig.append(cap, svg);
        card = { fig: fig, title: title, legend: legend, svg: svg };
        cards.set(spec.id, card);
      }
      seen.add(spec.id);
      figs.push(card.fig);
      card.title.textContent = spec.title;
      if (spec.run) card.title.append(' ', h('span', 'run', '· ' + spec.run));
      card.legend.replaceChildren(...spec.legend.map((item) => {
        const s = h('span');
        s.append(swatch(item), item.label);
        return s;
      }));
    }
    grid.replaceChildren(...figs);
    specs.forEach((spec) => drawChart(cards.get(spec.id), spec));
    for (const id of [...cards.keys()]) {
      if (!seen.has(id) && cards.get(id).fig.parentNode === null) cards.delete(id);
    }
  }

  function render() {
    const total = runs.reduce((n, r) => n + r.records, 0);
    document.getElementById('status-text').textContent = statusWord + (total ? ` · ${total.toLocaleString('en-US')} records` : '');
    document.getElementById('empty').hidden = total > 0;
    document.title = runs.length === 1 && total ? `${runs[0].name} · hetsgd dashboard` : 'hetsgd dashboard';
    renderRuns(total);
    const charts = chartsOf();
    renderSection('training', charts.training);
    renderSection('devices', charts.devices);
    renderSection('async', charts.async);
    renderEvents();
    renderSettings();
  }

  function cell(tr, text, cls) {
    const td = h('td', cls, text);
    tr.appendChild(td);
    return td;
  }

  function nameCell(tr, i, tag) {
    const td = h(tag || 'td');
    tr.appendChild(td);
    const sw = h('span', 'swatch');
    sw.style.backgroundColor = colour(i); // CSSOM, which the page's CSP allows
    td.append(sw, runs[i].name);
  }

  function renderRuns(total) {
    document.getElementById('runs').hidden = total === 0;
    const table = document.getElementById('run-table');
    const head = h('tr');
    for (const [t, num] of [['run'], ['strategy'], ['devices', 1], ['status'], ['best P@1', 1], ['at epoch', 1], ['at time', 1], ['epochs', 1], ['samples', 1], ['training time', 1], ['merges', 1]]) {
      head.appendChild(h('th', num ? 'num' : '', t));
    }
    const rows = [head];
    runs.forEach((r, i) => {
      const tr = h('tr');
      tr.dataset.run = i;
      nameCell(tr, i);
      const c = r.config || {};
      cell(tr, c.strategy || '—');
      // A job across ranks says how its devices are shared out, and after
      // faults how many are live.
      let devices = fmt(c.devices);
      if (isNum(c.ranks) && c.ranks > 1) devices += ` on ${c.ranks} ranks × ${isNum(c.devices_per_rank) ? c.devices_per_rank : 1}`;
      const lastFault = r.faults[r.faults.length - 1];
      if (lastFault && isNum(lastFault.live) && lastFault.live < c.devices) devices += ` (${lastFault.live} live)`;
      cell(tr, devices, 'num');
      let state = r.records ? 'running' : 'waiting';
      if (r.done) state = r.done.diverged ? 'diverged' : r.done.interrupted ? 'interrupted' : 'done';
      cell(tr, '').appendChild(h('span', 'state ' + state, state));
      // The done record's best, or the best evaluation so far.
      let best = null;
      if (r.done && isNum(r.done.best_p1)) {
        best = { p1: r.done.best_p1, epoch: r.done.best_p1_epoch, t: r.done.best_p1_train_seconds };
      } else {
        for (const e of r.evals) if (isNum(e.p1) && (best === null || e.p1 > best.p1)) best = { p1: e.p1, epoch: e.epoch, t: e.train_seconds };
      }
      cell(tr, best ? best.p1.toFixed(4) : '—', 'num');
      cell(tr, best && isNum(best.epoch) ? best.epoch.toFixed(2) : '—', 'num');
      cell(tr, best ? fmtSeconds(best.t) : '—', 'num');
      const last = r.evals[r.evals.length - 1] || {};
      cell(tr, isNum(last.epoch) ? last.epoch.toFixed(2) : '—', 'num');
      cell(tr, fmt(r.done ? r.done.samples : last.samples), 'num');
      cell(tr, fmtSeconds(r.done ? r.done.train_seconds : last.train_seconds), 'num');
      cell(tr, fmt(r.done ? r.done.merges : r.merges.length), 'num');
      rows.push(tr);
    });
    table.replaceChildren(...rows);
  }

  function renderEvents() {
    const items = [];
    runs.forEach((r, i) => {
      for (const f of r.faults) items.push({ run: i, t: f.time, what: 'fault', text: faultText(f) });
      for (const s of r.resumes) {
        let text = `from ${s.checkpoint || 'a checkpoint'}`;
        if (isNum(s.samples)) text += ` at ${fmt(s.samples)} samples`;
        const changed = s.changed && typeof s.changed === 'object' ? Object.keys(s.changed) : [];
        if (changed.length) text += '; given anew: ' + changed.map((k) => `--${k} ${s.changed[k]}`).join(' ');
        items.push({ run: i, t: s.train_seconds, what: 'resumed', text: text });
      }
      for (const s of r.restarts) {
        let text = `attempt ${s.attempt} after the job ${s.failure || 'failed'}`;
        if (isNum(s.lost_samples)) text += `; ${fmt(s.lost_samples)} samples (${fmt(s.lost_seconds, 3)} s of training) lost`;
        if (isNum(s.recovery_seconds)) text += `; its first step ${fmt(s.recovery_seconds, 3)} s after the failure`;
        if (isNum(s.ranks)) text += ` on ${s.ranks} ranks`;
        items.push({ run: i, t: s.t, what: 'restarted', text: text });
      }
      for (const w of r.warnings) items.push({ run: i, t: w.time, what: 'warning', text: w.text || w.kind });
      for (const n of r.notes) items.push({ run: i, t: n.time, what: 'note', text: (n.strategy ? n.strategy + ': ' : '') + (n.text || '') });
    });
    document.getElementById('events').hidden = items.length === 0;
    items.sort((a, b) => a.run - b.run || (a.t || 0) - (b.t || 0));
    const head = h('tr');
    for (const [t, num] of [['run'], ['event'], ['at time', 1], ['']]) head.appendChild(h('th', num ? 'num' : '', t));
    const rows = [head];
    for (const it of items) {
      const tr = h('tr');
      tr.dataset.run = it.run;
      tr.dataset.event = it.what;
      nameCell(tr, it.run);
      cell(tr, it.what);
      cell(tr, fmtSeconds(it.t), 'num');
      cell(tr, it.text, 'val');
      rows.push(tr);
    }
    document.getElementById('event-table').replaceChildren(...rows);
  }

  // flatten lists an object's values by key path ("settings.adaptive.beta"),
  // so that any config record shows, whatever it nests.
  function flatten(v, path, out) {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const keys = Object.keys(v);
      if (keys.length === 0 && path) out.set(path, '{}');
      for (const k of keys) if (!(path === '' && k === 'event')) flatten(v[k], path ? path + '.' + k : k, out);
    } else if (Array.isArray(v) && v.some((x) => x !== null && typeof x === 'object')) {
      v.forEach((x, i) => flatten(x, path + '.' + i, out));
      if (v.length === 0) out.set(path, '[]');
    } else if (Array.isArray(v)) {
      out.set(path, v.length ? v.map(String).join(', ') : '[]');
    } else {
      out.set(path, String(v));
    }
    return out;
  }

  function keyCell(parent, tag, cls, path) {
    const e = h(tag, cls);
    const dot = path.lastIndexOf('.');
    if (dot >= 0) e.append(h('span', 'prefix', path.slice(0, dot + 1)));
    e.append(path.slice(dot + 1));
    parent.appendChild(e);
  }

  let settingsKey = '';
  function renderSettings() {
    const withConfig = runs.map((r, i) => ({ i: i, flat: r.config ? flatten(r.config, '', new Map()) : null })).filter((x) => x.flat);
    const section = document.getElementById('settings');
    section.hidden = withConfig.length === 0;
    const differ = document.getElementById('differ');
    document.getElementById('differ-label').hidden = withConfig.length < 2;
    // Settings change rarely: redraw only when they or the filter do.
    const key = JSON.stringify([runs.map((r) => r.name), withConfig.map((x) => [...x.flat]), differ.checked]);
    if (key === settingsKey) return;
    settingsKey = key;
    const body = document.getElementById('settings-body');
    if (withConfig.length === 0) { body.replaceChildren(); return; }
    if (withConfig.length === 1) {
      const dl = h('dl', 'kv');
      for (const [k, v] of withConfig[0].flat) {
        const row = h('div');
        row.dataset.key = k;
        keyCell(row, 'dt', '', k);
        row.appendChild(h('dd', '', v));
        dl.appendChild(row);
      }
      body.replaceChildren(dl);
      return;
    }
    const keys = [];
    const seen = new Set();
    for (const x of withConfig) for (const k of x.flat.keys()) if (!seen.has(k)) { seen.add(k); keys.push(k); }
    const table = h('table', 'data');
    const head = h('tr');
    head.appendChild(h('th', '', 'setting'));
    for (const x of withConfig) nameCell(head, x.i, 'th');
    table.appendChild(head);
    for (const k of keys) {
      const vals = withConfig.map((x) => x.flat.has(k) ? x.flat.get(k) : '—');
      const differs = vals.some((v) => v !== vals[0]);
      if (differ.checked && !differs) continue;
      const tr = h('tr', differs && !differ.checked ? 'differs' : '');
      tr.dataset.key = k;
      keyCell(tr, 'td', 'key', k);
      for (const v of vals) cell(tr, v, 'val');
      table.appendChild(tr);
    }
    const wrap = h('div', 'scroll');
    wrap.appendChild(table);
    body.replaceChildren(wrap);
  }

  document.getElementById('differ').addEventListener('change', schedule);

  // A snapshot (hetsgd dashboard --snapshot) holds the logs' records in the
  // page itself: they are drawn at once, before the page's load event, so
  // that a headless browser's screenshot or DOM dump shows them.
  const snapshot = document.getElementById('snapshot');
  if (snapshot) {
    const d = JSON.parse(snapshot.textContent);
    d.runs.forEach((name, i) => { runAt(i).name = name; });
    d.records.forEach(([i, rec]) => onRecord(i, rec));
    document.getElementById('status').className = 'status snapshot';
    statusWord = 'snapshot of ' + d.taken;
    document.getElementById('empty').textContent = 'The logs hold no records.';
    render();
  } else {
    connect();
  }
})();
