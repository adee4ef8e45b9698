// ------------------------------------------------------------------- colours
// An operator keeps its colour from run to run: the palette slot comes from a
// hash of its name (probing past slots already taken in this run).
// Strong colours first; the lighter ones only once ten operators are taken.
// No pure red: a red outline means a failed task.
const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#76b7b2', '#edc948', '#9c755f', '#ff9da7', '#8f6ad1', '#bcbd22',
  '#e377c2', '#17becf', '#a0cbe8', '#ffbe7d', '#8cd17d', '#79706e', '#d4a6c8', '#b6992d', '#499894', '#f1ce63'];
const STRONG = 10;
function hash(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; ++i) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  return h >>> 0;
}
const names = S.names || [];
const variants = S.variants || [];
const copyVariant = variants.indexOf('copy');
const opIsUsed = new Uint8Array(names.length);
for (let i = 0; i < N; ++i) if (S.variant[i] !== copyVariant) opIsUsed[S.name[i]] = 1;
const opColour = new Array(names.length).fill('#8c959f');
{
  const taken = new Set();
  const ops = names.map((n, i) => i).filter((i) => opIsUsed[i]).sort((a, b) => (names[a] < names[b] ? -1 : 1));
  for (const i of ops) {
    const h = hash(names[i]);
    let slot = -1;
    for (const [base, size] of [[0, STRONG], [STRONG, PALETTE.length - STRONG]]) {
      for (let k = 0; k < size && slot < 0; ++k) {
        const c = base + (h + k) % size;
        if (!taken.has(c)) slot = c;
      }
      if (slot >= 0) break;
    }
    if (slot >= 0) { taken.add(slot); opColour[i] = PALETTE[slot]; }
    else opColour[i] = 'hsl(' + (h % 360) + ',55%,' + (48 + (h >> 9) % 16) + '%)';
  }
}
const COPY = { upload: ['#dbe4f0', '#3b5b8c'], download: ['#f0dde6', '#8c3b63'], other: ['#e4e4e4', '#555'] };
function copyStyle(name) { return COPY[name] || COPY.other; }
function hatch(ctx, style, scale) {
  const size = Math.round(6 * scale);
  const p = document.createElement('canvas');
  p.width = p.height = size;
  const g = p.getContext('2d');
  g.fillStyle = style[0]; g.fillRect(0, 0, size, size);
  g.strokeStyle = style[1]; g.lineWidth = 1.6 * scale;
  g.beginPath();
  g.moveTo(-1, size + 1); g.lineTo(size + 1, -1);
  g.moveTo(-1, 1); g.lineTo(1, -1);
  g.moveTo(size - 1, size + 1); g.lineTo(size + 1, size - 1);
  g.stroke();
  return ctx.createPattern(p, 'repeat');
}
function hatchCss(style) {
  return 'background: repeating-linear-gradient(135deg, ' + style[1] + ' 0 2px, ' + style[0] + ' 2px 5px)';
}

// -------------------------------------------------------------------- header
{
  const title = cfg.workflow !== undefined && cfg.workflow !== null ? fmtValue(cfg.workflow) : 'flowd run';
  document.title = title + ' \u2014 flowd run report';
  $('title').textContent = title;
  if (cfg.simulated_gpus === true) {
    $('banner-slot').append(el('div', { class: 'banner', id: 'simulated-banner', role: 'note' },
      el('strong', { text: 'Simulated GPUs' }),
      el('span', { text: 'The GPU workers of this run were simulated: they ran each operator\u2019s CPU code and were ' +
        'charged the time a GPU with the modelled speedup would take. GPU times and speedups below are ' +
        'simulated, not measured.' })));
  }
  const workers = Array.isArray(cfg.workers) ? cfg.workers
    : tracks.filter((t) => t.kind !== 'copy').map((t) => ({ name: t.name, kind: t.kind }));
  const byKind = {};
  for (const w of workers) { const k = (w && w.kind) || 'worker'; byKind[k] = (byKind[k] || 0) + 1; }
  const workerText = Object.keys(byKind).map((k) => byKind[k] + ' ' + kindLabel(k)).join(' \u00b7 ');
  const totals = sum.totals || {};
  const started = cfg.started !== undefined ? cfg.started : cfg.created;
  const facts = [
    ['Duration', fmtDur(sum.duration_ns || 0), null],
    ['Started', started !== undefined ? fmtDate(started).split(' ')[0] : undefined,
      started !== undefined ? fmtDate(started).split(' ').slice(1).join(' ') + (cfg.host !== undefined ? ' on ' + fmtValue(cfg.host) : '') : null],
    ['Tasks', fmtCount(totals.tasks || 0), (totals.failed ? fmtCount(totals.failed) + ' failed' : null)],
    ['Copies', totals.copies ? fmtCount(totals.copies) : undefined, null],
    ['Workers', workers.length ? String(workers.length) : undefined, workerText],
    ['Scheduler', cfg.scheduler !== undefined ? fmtValue(cfg.scheduler) : undefined, null],
    ['Locality', cfg.locality !== undefined ? fmtValue(cfg.locality) : undefined, null],
    ['Prefetch', cfg.prefetch !== undefined ? fmtValue(cfg.prefetch) : undefined, null],
    ['flowd', cfg.flowd_version !== undefined ? fmtValue(cfg.flowd_version) : undefined, null],
    ['Host', cfg.host !== undefined && started === undefined ? fmtValue(cfg.host) : undefined, null],
  ];
  for (const [k, v, s] of facts) {
    if (v === undefined) continue;
    const f = el('div', { class: 'fact' }, el('div', { class: 'k', text: k }), el('div', { class: 'v', text: v }));
    if (s) f.append(el('div', { class: 's', text: s }));
    if (k === 'Tasks' && totals.failed) f.lastChild.style.color = 'var(--bad)';
    $('facts').append(f);
  }
  if (workers.length) {
    $('workers').append(el('span', { class: 'k', text: 'Workers' }));
    for (const w of workers) {
      const name = w && w.name !== undefined ? fmtValue(w.name) : '?';
      const kind = (w && w.kind) || '';
      const device = w && w.device !== undefined ? ': ' + fmtValue(w.device) : '';
      $('workers').append(el('span', { class: 'chip ' + kind, title: kindLabel(kind) + device },
        name + (kind && kind !== name ? ' \u00b7 ' + kindLabel(kind) : '')));
    }
  }
}

// ------------------------------------------------------------------ timeline
const timeline = (function () {
  const canvas = $('timeline'), overlay = $('timeline-overlay'), wrap = $('timeline-wrap'), tip = $('tooltip');
  const rows = tracks.length;
  const ROW = rows > 40 ? 14 : rows > 20 ? 18 : rows > 10 ? 24 : 30;
  const AXIS = 30, GUTTER = 132, RIGHT = 14, BOTTOM = 6, MIN_BAR = 2;
  const startOf = S.start || [], durOf = S.dur || [];
  const isSub = (i) => S.parent[i] >= 0;
  // Per-row span lists in start order, and each row's longest span, for hit testing.
  const byRow = Array.from({ length: rows }, () => []);
  for (let i = 0; i < N; ++i) if (S.track[i] >= 0 && S.track[i] < rows) byRow[S.track[i]].push(i);
  const maxDur = new Float64Array(rows);
  byRow.forEach((list, r) => {
    list.sort((a, b) => startOf[a] - startOf[b]);
    for (const i of list) maxDur[r] = Math.max(maxDur[r], durOf[i]);
  });
  // Spans bucketed by fill, so the canvas switches colour once per operator.
  const buckets = new Map();
  for (let i = 0; i < N; ++i) {
    const key = S.variant[i] === copyVariant ? 'copy:' + names[S.name[i]] : 'op:' + S.name[i];
    let b = buckets.get(key);
    if (!b) { b = []; buckets.set(key, b); }
    b.push(i);
  }
  let view = { t0: 0, t1: duration };
  let W = 0, H = 0, scale = 1, hover = -1, drag = null;
  const plotW = () => W - GUTTER - RIGHT;
  const X = (t) => GUTTER + (t - view.t0) / (view.t1 - view.t0) * plotW();
  const T = (x) => view.t0 + (x - GUTTER) / plotW() * (view.t1 - view.t0);

  function rowTop(r) { return AXIS + r * ROW; }
  function lane(i, r) {
    const y = rowTop(r);
    return isSub(i) ? [y + ROW * 0.58, ROW * 0.42 - 3] : [y + 3, ROW - 6];
  }

  function draw(s) {
    scale = s || window.devicePixelRatio || 1;
    W = Math.max(640, Math.floor(wrap.clientWidth));
    H = AXIS + rows * ROW + BOTTOM;
    for (const c of [canvas, overlay]) {
      c.width = Math.round(W * scale); c.height = Math.round(H * scale);
      c.style.width = W + 'px'; c.style.height = H + 'px';
    }
    const g = canvas.getContext('2d');
    g.setTransform(scale, 0, 0, scale, 0, 0);
    g.fillStyle = '#fff'; g.fillRect(0, 0, W, H);
    g.font = '12px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif';
    g.textBaseline = 'middle';
    // Rows: zebra, simulated rows tinted, labels in the gutter.
    for (let r = 0; r < rows; ++r) {
      const tr = tracks[r], y = rowTop(r);
      g.fillStyle = tr.simulated ? (r % 2 ? '#fff6dc' : '#fffaeb') : (r % 2 ? '#f6f8fa' : '#ffffff');
      g.fillRect(0, y, W, ROW);
      if (r > 0 && tracks[r - 1].kind !== tr.kind && tr.kind !== 'copy') {
        g.fillStyle = '#c4ccd4'; g.fillRect(0, y, W, 1);
      }
      const copy = tr.kind === 'copy';
      let x = copy ? 22 : 10;
      g.fillStyle = copy ? '#59636e' : '#1f2328';
      g.font = (copy ? '' : '600 ') + (ROW < 18 ? 10 : 12) + 'px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif';
      let label = tr.name;
      const tagW = tr.simulated ? 30 : 0;
      while (label.length > 1 && g.measureText(label).width > GUTTER - x - 8 - tagW) label = label.slice(0, -2) + '\u2026';
      g.fillText(label, x, y + ROW / 2 + 0.5);
      if (tr.simulated && ROW >= 18) {
        const tx = x + g.measureText(label).width + 6;
        g.fillStyle = '#fff0c2'; g.strokeStyle = '#d4a72c'; g.lineWidth = 1;
        g.fillRect(tx, y + ROW / 2 - 7, 26, 14); g.strokeRect(tx + 0.5, y + ROW / 2 - 6.5, 25, 13);
        g.fillStyle = '#6f4a00'; g.font = '700 9px system-ui, -apple-system, "DejaVu Sans", Arial, sans-serif';
        g.fillText('SIM', tx + 4, y + ROW / 2 + 0.5);
      }
    }
    g.fillStyle = '#d1d9e0'; g.fillRect(GUTTER - 1, AXIS, 1, rows * ROW);
    // Time axis and grid.
    g.font = '11px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif';
    g.fillStyle = '#59636e';
    g.textAlign = 'center';
    for (const [t, label] of timeTicks(view.t0, view.t1, plotW(), 110)) {
      const x = Math.round(X(t)) + 0.5;
      g.fillStyle = 'rgba(31,35,40,0.10)'; g.fillRect(x - 0.5, AXIS, 1, rows * ROW);
      g.fillStyle = '#8c959f'; g.fillRect(x - 0.5, AXIS - 5, 1, 5);
      g.fillStyle = '#59636e';
      const w = g.measureText(label).width;
      g.fillText(label, Math.min(Math.max(x, GUTTER + w / 2), W - RIGHT - w / 2 + 6), AXIS / 2 + 1);
    }
    g.textAlign = 'left';
    g.fillStyle = '#d1d9e0'; g.fillRect(GUTTER, AXIS - 1, plotW(), 1);
    // Bars. A span at least MIN_BAR pixels wide is drawn as itself. Narrower
    // ones (a long run seen whole) are summed per pixel column and drawn as a
    // stacked column of what the track did there: painting each as a 1-pixel
    // bar would show whichever operator happened to be painted last, and a
    // half-idle track as fully busy.
    const t0draw = performance.now();
    g.save();
    g.beginPath(); g.rect(GUTTER, AXIS, plotW(), rows * ROW); g.clip();
    let drawn = 0;
    const failed = [];
    const cols = Math.ceil(plotW()) + 1;
    const keys = [...buckets.keys()];
    const fills = keys.map((key) => key.startsWith('copy:') ? hatch(g, copyStyle(key.slice(5)), scale) : opColour[+key.slice(3)]);
    const dense = new Map();  // row -> Float32Array(keys x cols) of covered pixel fractions
    for (let k = 0; k < keys.length; ++k) {
      g.fillStyle = fills[k];
      for (const i of buckets.get(keys[k])) {
        const s0 = startOf[i], s1 = s0 + durOf[i];
        if (s1 < view.t0 || s0 > view.t1) continue;
        const r = S.track[i];
        if (r < 0 || r >= rows) continue;
        ++drawn;
        if (S.failed[i]) failed.push(i);
        const x0 = X(s0), x1 = X(s1);
        if (x1 - x0 < MIN_BAR && !isSub(i)) {
          let acc = dense.get(r);
          if (!acc) { acc = new Float32Array(keys.length * cols); dense.set(r, acc); }
          const a = Math.max(0, x0 - GUTTER), b = Math.min(cols, Math.max(x1 - GUTTER, a + 1e-3));
          for (let c = Math.floor(a); c < b; ++c) acc[k * cols + c] += Math.min(b, c + 1) - Math.max(a, c);
          continue;
        }
        let w = x1 - x0;
        if (w > 3) w -= 1;       // a hairline gap keeps back-to-back tasks apart
        if (w < 1) w = 1;        // every sub-task stays visible however short
        const [y, h] = lane(i, r);
        g.fillRect(x0, y, w, h);
      }
    }
    for (const [r, acc] of dense) {
      const y = rowTop(r) + 3, h = ROW - 6;
      const total = new Float32Array(cols), stacked = new Float32Array(cols);
      for (let k = 0; k < keys.length; ++k) for (let c = 0; c < cols; ++c) total[c] += acc[k * cols + c];
      for (let k = 0; k < keys.length; ++k) {
        g.fillStyle = fills[k];
        for (let c = 0; c < cols; ++c) {
          const v = acc[k * cols + c];
          if (v <= 0) continue;
          // At least a sliver, so a lone short task still shows.
          const hh = Math.max(0.6, h * v / Math.max(1, total[c]));
          g.fillRect(GUTTER + c, y + h - stacked[c] - hh, 1, hh);
          stacked[c] += hh;
        }
      }
    }
    g.strokeStyle = '#cf222e'; g.lineWidth = 1.5;
    for (const i of failed) {
      const [y, h] = lane(i, S.track[i]);
      const x0 = X(startOf[i]);
      g.strokeRect(x0 + 0.75, y + 0.75, Math.max(1, X(startOf[i] + durOf[i]) - x0 - 1.5), h - 1.5);
    }
    g.restore();
    canvas.setAttribute('data-rendered-spans', String(drawn));
    canvas.setAttribute('data-total-spans', String(N));
    canvas.setAttribute('data-draw-ms', (performance.now() - t0draw).toFixed(1));
    const zoomed = view.t0 > 0 || view.t1 < duration;
    $('range').textContent = (zoomed ? 'Showing ' + fmtDur(view.t0) + ' \u2013 ' + fmtDur(view.t1) + ' of ' : 'Whole run: ') +
      fmtDur(duration) + ' \u00b7 ' + fmtCount(drawn) + ' of ' + fmtCount(N) + ' spans drawn';
    $('reset-zoom').hidden = !zoomed;
    drawOverlay();
  }

  function drawOverlay() {
    const g = overlay.getContext('2d');
    g.setTransform(scale, 0, 0, scale, 0, 0);
    g.clearRect(0, 0, W, H);
    if (hover >= 0) {
      const r = S.track[hover];
      const [y, h] = lane(hover, r);
      const x0 = X(startOf[hover]);
      g.strokeStyle = '#1f2328'; g.lineWidth = 2;
      g.strokeRect(x0 - 1, y - 1, Math.max(1, X(startOf[hover] + durOf[hover]) - x0) + 2, h + 2);
    }
    if (drag && Math.abs(drag.x1 - drag.x0) > 1) {
      const a = Math.min(drag.x0, drag.x1), b = Math.max(drag.x0, drag.x1);
      g.fillStyle = 'rgba(9,105,218,0.15)'; g.fillRect(a, AXIS, b - a, rows * ROW);
      g.fillStyle = '#0969da'; g.fillRect(a, AXIS, 1, rows * ROW); g.fillRect(b, AXIS, 1, rows * ROW);
    }
  }

  function hit(mx, my) {
    if (mx < GUTTER || mx > W - RIGHT || my < AXIS) return -1;
    const r = Math.floor((my - AXIS) / ROW);
    if (r < 0 || r >= rows) return -1;
    const list = byRow[r];
    const t = T(mx), tol = 3 * (view.t1 - view.t0) / plotW();
    const wantSub = my - rowTop(r) > ROW * 0.55;
    let lo = 0, hi = list.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (startOf[list[m]] <= t + tol) lo = m + 1; else hi = m; }
    let best = -1, bestScore = Infinity;
    for (let k = lo - 1; k >= 0; --k) {
      const i = list[k], s0 = startOf[i], s1 = s0 + durOf[i];
      if (s0 < t - tol - maxDur[r]) break;
      if (t < s0 - tol || t > s1 + tol) continue;
      const dist = t < s0 ? s0 - t : t > s1 ? t - s1 : 0;
      const score = dist + (isSub(i) === wantSub ? 0 : tol * 2);
      if (score < bestScore) { bestScore = score; best = i; }
    }
    return best;
  }

  function row(k, v, cls) {
    return el('div', { class: 'row' }, el('span', { class: 'k', text: k }), el('span', { class: 'v ' + (cls || ''), text: v }));
  }
  function showTip(i, cx, cy) {
    tip.textContent = '';
    const v = variants[S.variant[i]];
    const dur = durOf[i];
    tip.append(el('div', { class: 'op', text: names[S.name[i]] }));
    if (S.stages[S.stage[i]] !== '') tip.append(row('stage', S.stages[S.stage[i]]));
    if (S.key[i] !== '') tip.append(row('key', S.key[i]));
    tip.append(row('variant', variantLabel(v)));
    tip.append(row('track', tracks[S.track[i]].name));
    tip.append(row('duration', fmtDur(dur)));
    tip.append(row('at', fmtDur(startOf[i]) + ' \u2192 ' + fmtDur(startOf[i] + dur)));
    if (S.bytes[i]) {
      tip.append(row('bytes', fmtBytes(S.bytes[i])));
      if (dur > 0) tip.append(row('bandwidth', fmtBytes(S.bytes[i] / (dur / 1e9)) + '/s'));
    }
    if (S.id[i] >= 0) tip.append(row('task', '#' + S.id[i] + (S.parent[i] >= 0 ? ' (sub-task of #' + S.parent[i] + ')' : '')));
    if (S.failed[i]) tip.append(row('result', 'failed', 'bad'));
    tip.style.display = 'block';
    const pad = 14, rw = tip.offsetWidth, rh = tip.offsetHeight;
    tip.style.left = (cx + pad + rw > window.innerWidth ? Math.max(0, cx - pad - rw) : cx + pad) + 'px';
    tip.style.top = (cy + pad + rh > window.innerHeight ? Math.max(0, cy - pad - rh) : cy + pad) + 'px';
  }

  function pos(e) {
    const b = overlay.getBoundingClientRect();
    return [e.clientX - b.left, e.clientY - b.top];
  }
  overlay.addEventListener('mousedown', (e) => {
    const [x] = pos(e);
    if (x >= GUTTER && e.button === 0) drag = { x0: x, x1: x };
  });
  overlay.addEventListener('mousemove', (e) => {
    const [x, y] = pos(e);
    if (drag) {
      drag.x1 = Math.min(Math.max(x, GUTTER), W - RIGHT);
      tip.style.display = 'none';
      hover = -1;
      drawOverlay();
      return;
    }
    const i = hit(x, y);
    if (i !== hover) { hover = i; drawOverlay(); }
    if (i >= 0) showTip(i, e.clientX, e.clientY); else tip.style.display = 'none';
  });
  overlay.addEventListener('mouseleave', () => { hover = -1; tip.style.display = 'none'; drawOverlay(); });
  window.addEventListener('mouseup', () => {
    if (!drag) return;
    const a = Math.min(drag.x0, drag.x1), b = Math.max(drag.x0, drag.x1);
    drag = null;
    if (b - a > 4) {
      const t0 = T(a), t1 = T(b);
      view = { t0: Math.max(0, t0), t1: Math.min(duration, Math.max(t1, t0 + 1)) };
      draw(scale);
    } else drawOverlay();
  });
  const reset = () => { view = { t0: 0, t1: duration }; draw(scale); };
  overlay.addEventListener('dblclick', reset);
  $('reset-zoom').addEventListener('click', reset);
  return { draw };
})();

// -------------------------------------------------------------------- legend
{
  const legend = $('legend');
  const ops = (sum.operators || []).filter((o) => !o.subtasks);
  const seen = new Set();
  for (const o of ops.slice().sort((a, b) => b.total_ns - a.total_ns)) {
    const i = names.indexOf(o.name);
    if (i < 0 || seen.has(i)) continue;
    seen.add(i);
    legend.append(el('span', { class: 'item' }, el('span', { class: 'sw', style: 'background:' + opColour[i] }), o.name));
  }
  for (const d of ['upload', 'download']) {
    if ((sum.transfers || []).some((x) => x.direction === d))
      legend.append(el('span', { class: 'item' }, el('span', { class: 'sw', style: hatchCss(copyStyle(d)) }),
        d === 'upload' ? 'upload (host \u2192 device)' : 'download (device \u2192 host)'));
  }
  if ((sum.operators || []).some((o) => o.subtasks))
    legend.append(el('span', { class: 'item' }, el('span', { class: 'sw sub' }), 'sub-task'));
  if ((sum.totals || {}).failed)
    legend.append(el('span', { class: 'item' }, el('span', { class: 'sw fail' }), 'failed'));
  if (tracks.some((t) => t.simulated))
    legend.append(el('span', { class: 'item' }, el('span', { class: 'tag', style: 'margin-left:0', text: 'SIM' }), 'simulated track'));
}

// ----------------------------------------------------------------- operators
{
  const table = $('operator-table');
  const ops = (sum.operators || []).slice().sort((a, b) => b.total_ns - a.total_ns || (a.name < b.name ? -1 : 1));
  if (!ops.length) {
    table.replaceWith(el('p', { class: 'muted', text: 'No tasks were recorded.' }));
  } else {
    const order = ['cpu', 'gpu', 'sim'];
    const present = new Set();
    for (const o of ops) for (const v in o.variants) present.add(v);
    const vs = order.filter((v) => present.has(v)).concat([...present].filter((v) => !order.includes(v)).sort());
    const hasGpu = ops.some((o) => o.speedup_gpu !== null), hasSim = ops.some((o) => o.speedup_sim !== null);
    const hasFailed = ops.some((o) => o.failed);
    const grand = ops.reduce((a, o) => a + o.total_ns, 0) || 1;
    const g1 = el('tr', { class: 'group' }, el('th', { class: 'l', rowspan: '2', text: 'Operator' }));
    const g2 = el('tr');
    for (const v of vs) {
      g1.append(el('th', { class: 'v', colspan: '3', text: variantLabel(v) }));
      g2.append(el('th', { class: 'v0', text: 'tasks' }), el('th', { text: 'mean' }), el('th', { text: 'total' }));
    }
    if (hasGpu || hasSim) {
      g1.append(el('th', { class: 'v', colspan: String((hasGpu ? 1 : 0) + (hasSim ? 1 : 0)), text: 'Speedup (CPU / GPU)' }));
      if (hasGpu) g2.append(el('th', { class: 'v0', text: 'measured' }));
      if (hasSim) g2.append(el('th', { class: hasGpu ? '' : 'v0', text: 'simulated' }));
    }
    if (hasFailed) g1.append(el('th', { class: 'v', rowspan: '2', text: 'failed' }));
    g1.append(el('th', { class: 'v l', rowspan: '2', text: 'share of time' }));
    table.append(el('thead', {}, g1, g2));
    const body = el('tbody');
    for (const o of ops) {
      const i = names.indexOf(o.name);
      const label = el('span', {}, o.name);
      if (o.subtasks) label.append(el('span', { class: 'muted', text: ' (sub-tasks)' }));
      const name = el('td', { class: 'name l' }, el('span', { class: 'opname' },
        el('span', { class: 'sw', style: 'background:' + (i >= 0 ? opColour[i] : '#8c959f') }), label));
      const tr = el('tr', {}, name);
      for (const v of vs) {
        const s = o.variants[v];
        if (!s) {
          tr.append(el('td', { class: 'v0 none', text: '\u2014' }), el('td', { class: 'none', text: '\u2014' }), el('td', { class: 'none', text: '\u2014' }));
        } else {
          tr.append(el('td', { class: 'v0', 'data-variant': v, 'data-count': String(s.count), text: fmtCount(s.count) }),
            el('td', { 'data-mean-ns': String(s.mean_ns), text: fmtDur(s.mean_ns) }),
            el('td', { 'data-total-ns': String(s.total_ns), text: fmtDur(s.total_ns) }));
        }
      }
      const speed = (x, cls, first) => x === null
        ? el('td', { class: (first ? 'v0 ' : '') + 'none', text: '\u2014' })
        : el('td', { class: (first ? 'v0 ' : '') + 'speed ' + cls + (x < 1 ? ' slow' : ''), 'data-speedup': x.toFixed(4),
          title: cls === 'sim' ? 'charged by the GPU simulation, not measured' : 'mean CPU time / mean GPU time',
          text: num(x) + '\u00d7' });
      if (hasGpu) tr.append(speed(o.speedup_gpu, 'gpu', true));
      if (hasSim) tr.append(speed(o.speedup_sim, 'sim', !hasGpu));
      if (hasFailed) tr.append(el('td', { class: 'v0' + (o.failed ? ' speed slow' : ' none'), text: o.failed ? fmtCount(o.failed) : '0' }));
      const share = o.total_ns / grand;
      tr.append(el('td', { class: 'v0 l' }, el('span', { class: 'bar' },
        el('i', { style: 'width:' + (100 * share).toFixed(1) + '%;background:' + (i >= 0 ? opColour[i] : '#8c959f') })), fmtPct(share)));
      body.append(tr);
    }
    table.append(body);
  }
}

// --------------------------------------------------------------- utilization
{
  const table = $('utilization-table');
  const kindColour = { cpu: '#4e79a7', gpu: '#59a14f', sim_gpu: '#d4a72c', copy: '#3b5b8c', node: '#b07aa1' };
  table.append(el('thead', {}, el('tr', {}, el('th', { class: 'l', text: 'track' }), el('th', { class: 'l', text: 'kind' }),
    el('th', { text: 'spans' }), el('th', { text: 'busy' }), el('th', { class: 'l', text: 'utilization' }))));
  if (!(sum.tracks || []).length) table.replaceWith(el('p', { class: 'muted', text: 'No tracks were recorded.' }));
  const body = el('tbody');
  const perKind = {};
  for (const u of sum.tracks || []) {
    const tr = tracks[u.row];
    const k = tr.kind || '';
    (perKind[k] = perKind[k] || []).push(u.utilization);
    const name = el('td', { class: 'l', text: tr.name });
    if (tr.simulated) name.append(el('span', { class: 'tag', text: 'SIM' }));
    body.append(el('tr', {}, name, el('td', { class: 'l muted', text: kindLabel(k) }), el('td', { text: fmtCount(u.spans) }),
      el('td', { text: fmtDur(u.busy_ns) }),
      el('td', { class: 'l', 'data-utilization': u.utilization.toFixed(4) },
        el('span', { class: 'bar' }, el('i', { style: 'width:' + Math.min(100, 100 * u.utilization).toFixed(1) + '%;background:' + (kindColour[k] || '#8c959f') })),
        fmtPct(u.utilization))));
  }
  table.append(body);
  const kinds = Object.keys(perKind).filter((k) => k !== 'copy');
  if (kinds.length) {
    const text = kinds.map((k) => (kindLabel(k) || 'other') + ' ' + fmtPct(perKind[k].reduce((a, b) => a + b, 0) / perKind[k].length)).join(' \u00b7 ');
    table.append(el('tfoot', {}, el('tr', {}, el('td', { class: 'l', colspan: '5', text: 'Mean utilization: ' + text }))));
  }
}

// ------------------------------------------------------------- data movement
{
  const box = $('transfers-body');
  const xs = sum.transfers || [];
  if (!xs.length) {
    box.append(el('p', { class: 'muted', text: 'No host\u2194device copies were recorded.' }));
  } else {
    const table = el('table', { id: 'transfers-table' });
    table.append(el('thead', {}, el('tr', {}, el('th', { class: 'l', text: 'copy engine' }), el('th', { class: 'l', text: 'direction' }),
      el('th', { text: 'copies' }), el('th', { text: 'bytes' }), el('th', { text: 'copying' }), el('th', { text: 'mean bandwidth' }))));
    const body = el('tbody');
    const tot = {};
    for (const x of xs) {
      const tr = tracks[x.row];
      const t = (tot[x.direction] = tot[x.direction] || { count: 0, bytes: 0, busy: 0 });
      t.count += x.count; t.bytes += x.bytes; t.busy += x.busy_ns;
      const name = el('td', { class: 'l', text: tr.name });
      if (tr.simulated) name.append(el('span', { class: 'tag', text: 'SIM' }));
      body.append(el('tr', {}, name,
        el('td', { class: 'l' }, el('span', { class: 'sw', style: hatchCss(copyStyle(x.direction)) + ';margin-right:6px;vertical-align:-1px' }), x.direction),
        el('td', { text: fmtCount(x.count) }), el('td', { 'data-bytes': String(x.bytes), text: fmtBytes(x.bytes) }),
        el('td', { text: fmtDur(x.busy_ns) }),
        el('td', { text: x.bandwidth > 0 ? fmtBytes(x.bandwidth) + '/s' + (tr.simulated ? ' (simulated)' : '') : '\u2014' })));
    }
    table.append(body);
    const foot = el('tfoot');
    const all = { count: 0, bytes: 0 };
    const devices = new Set(xs.map((x) => x.row)).size;
    for (const d of Object.keys(tot)) {
      const t = tot[d];
      all.count += t.count; all.bytes += t.bytes;
      if (devices > 1) foot.append(el('tr', {}, el('td', { class: 'l', text: 'all devices' }), el('td', { class: 'l', text: d }),
        el('td', { text: fmtCount(t.count) }), el('td', { text: fmtBytes(t.bytes) }), el('td', { text: fmtDur(t.busy) }),
        el('td', { text: t.busy > 0 ? fmtBytes(t.bytes / (t.busy / 1e9)) + '/s' : '\u2014' })));
    }
    foot.append(el('tr', {}, el('td', { class: 'l', text: 'total' }), el('td'), el('td', { text: fmtCount(all.count) }),
      el('td', { 'data-total-bytes': String(all.bytes), text: fmtBytes(all.bytes) }), el('td'), el('td')));
    table.append(foot);
    box.append(table);
    if (tracks.some((t) => t.kind === 'copy' && t.simulated))
      box.append(el('p', { class: 'hint', style: 'margin-top:8px', text: 'Copies on simulated devices move no data ' +
        'over a bus; their times are what the simulation charged.' }));
  }
}

// ------------------------------------------------------------------ counters
const counterCharts = [];
{
  const box = $('counter-charts');
  const list = data.counters || [];
  if (!list.length) box.replaceWith(el('p', { class: 'muted', text: 'No counters were recorded.' }));
  const COLOURS = ['#0969da', '#8250df', '#1a7f37', '#bc4c00', '#bf3989'];
  list.forEach((c, n) => {
    const t = c.t || [], v = c.v || [];
    let max = 0, last = 0, area = 0;
    for (let k = 0; k < v.length; ++k) {
      if (v[k] === null) continue;
      max = Math.max(max, v[k]);
      last = v[k];
      const next = k + 1 < t.length ? t[k + 1] : duration;
      area += v[k] * Math.max(0, next - t[k]);
    }
    const span = t.length ? Math.max(1, duration - t[0]) : 1;
    const canvas = el('canvas', { 'data-points': String(t.length) });
    box.append(el('div', { class: 'chart' }, el('div', { class: 't', text: c.name }),
      el('div', { class: 's', text: 'max ' + short(max) + ' \u00b7 time-weighted mean ' + short(area / span) + ' \u00b7 last ' + short(last) +
        ' \u00b7 ' + fmtCount(t.length) + ' samples' }), canvas));
    counterCharts.push({ canvas, t, v, max, colour: COLOURS[n % COLOURS.length] });
  });
}
function niceMax(m) {
  if (m <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(m)));
  return [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].map((k) => k * p).find((x) => x >= m);
}
function drawCounter(c, scale) {
  const W = Math.max(200, c.canvas.clientWidth || 400), H = 120;
  c.canvas.width = Math.round(W * scale); c.canvas.height = Math.round(H * scale);
  const g = c.canvas.getContext('2d');
  g.setTransform(scale, 0, 0, scale, 0, 0);
  g.clearRect(0, 0, W, H);
  const L = 38, R = 8, TOP = 8, B = 18;
  const top = niceMax(c.max);
  const X = (t) => L + t / duration * (W - L - R), Y = (v) => TOP + (1 - v / top) * (H - TOP - B);
  g.font = '10.5px system-ui, -apple-system, "DejaVu Sans", Arial, sans-serif';
  g.fillStyle = '#59636e'; g.textBaseline = 'middle'; g.textAlign = 'right';
  for (const v of [0, top / 2, top]) {
    g.fillStyle = '#eef1f4'; g.fillRect(L, Math.round(Y(v)), W - L - R, 1);
    g.fillStyle = '#59636e'; g.fillText(short(v), L - 5, Y(v));
  }
  g.textAlign = 'center'; g.textBaseline = 'top';
  for (const [t, label] of timeTicks(0, duration, W - L - R, 90)) {
    const w = g.measureText(label).width;
    g.fillStyle = '#eef1f4'; g.fillRect(Math.round(X(t)), TOP, 1, H - TOP - B);
    g.fillStyle = '#59636e'; g.fillText(label, Math.min(Math.max(X(t), L + w / 2), W - R - w / 2), H - B + 4);
  }
  if (!c.t.length) return;
  g.beginPath();
  g.moveTo(X(c.t[0]), Y(0));
  let prev = 0;
  for (let k = 0; k < c.t.length; ++k) {
    const v = c.v[k] === null ? prev : c.v[k];
    const x = X(c.t[k]);
    g.lineTo(x, Y(prev)); g.lineTo(x, Y(v));
    prev = v;
  }
  g.lineTo(X(duration), Y(prev));
  g.strokeStyle = c.colour; g.lineWidth = 1.5; g.stroke();
  g.lineTo(X(duration), Y(0)); g.closePath();
  g.globalAlpha = 0.12; g.fillStyle = c.colour; g.fill(); g.globalAlpha = 1;
}

// --------------------------------------------------------------------- scans
if (Array.isArray(cfg.scans) && cfg.scans.length) {
  $('scans').hidden = false;
  const body = $('scans-body');
  const head = el('tr', {}, ...['stage', 'operator', 'strategy', 'elements', 'combines', 'depth', 'stolen', 'time',
    'lanes: busy (combines)'].map((t, i) => el('th', { class: i < 3 || i === 8 ? 'l' : '', text: t })));
  const table = el('table', {}, el('thead', {}, head));
  const rows = el('tbody');
  for (const s of cfg.scans) {
    const lanes = (s.lanes || []).map((l) => fmtValue(l.name) + ' ' + fmtDur((l.busy_seconds || 0) * 1e9) + ' (' +
      fmtCount(l.combines || 0) + ')').join(', ');
    rows.append(el('tr', { 'data-scan-combines': String(s.combines), 'data-scan-depth': String(s.depth) },
      el('td', { class: 'l', text: fmtValue(s.stage) }), el('td', { class: 'l', text: fmtValue(s.operator) }),
      el('td', { class: 'l', text: fmtValue(s.strategy) }), el('td', { text: fmtCount(s.elements) }),
      el('td', { text: fmtCount(s.combines) }), el('td', { text: fmtCount(s.depth) }),
      el('td', { text: s.strategy === 'work-stealing' ? fmtCount(s.steals) : '' }),
      el('td', { text: fmtDur((s.seconds || 0) * 1e9) }), el('td', { class: 'l', text: lanes })));
  }
  table.append(rows);
  body.append(table);
}

// ------------------------------------------------------------------ all pairs
if (Array.isArray(cfg.allpairs) && cfg.allpairs.length) {
  $('allpairs').hidden = false;
  const body = $('allpairs-body');
  const palette = ['#3b7dd8', '#e07b39', '#4aa55b', '#b55bb5', '#c9b135', '#47b3c2', '#d65a6b', '#7d6bd1'];
  for (const a of cfg.allpairs) {
    const hc = a.host_cache || {};
    const pc = a.peer_cache || {};
    const dc = a.device_cache || {};
    const head = el('tr', {}, ...['stage', 'operator', 'pairs', 'order', 'items', 'pairs computed', 'leaves', 'cache slots',
      'R', 'loaded ahead', 'hit rate', 'evictions', 'GPU caches', 'nodes', 'peer cache hits', 'steals', 'time', 'T_min',
      'efficiency']
      .map((t, i) => el('th', { class: i < 4 ? 'l' : '', text: t })));
    const row = el('tr', { 'data-allpairs-load-ratio': String(a.load_ratio) },
      el('td', { class: 'l', text: fmtValue(a.stage) }), el('td', { class: 'l', text: fmtValue(a.operator) }),
      el('td', { class: 'l', text: fmtValue(a.pairs_shape) }), el('td', { class: 'l', text: fmtValue(a.order) }),
      el('td', { text: fmtCount(a.items) }), el('td', { text: fmtCount(a.pairs) }), el('td', { text: fmtCount(a.leaves) }),
      el('td', { text: fmtCount(a.cache_slots) }), el('td', { text: Number(a.load_ratio).toFixed(2) }),
      el('td', { text: fmtCount(a.loaded_ahead || 0) }), el('td', { text: fmtPct(hc.hit_rate || 0) }), el('td', { text: fmtCount(hc.evictions || 0) }),
      el('td', { 'data-allpairs-device-hit-rate': String(dc.hit_rate || 0),
        text: dc.slots ? fmtPct(dc.hit_rate || 0) + ' hits (' + fmtCount(dc.loads || 0) + ' copies up, ' +
          fmtCount(dc.evictions || 0) + ' evictions, ' + fmtCount(dc.slots) + ' slots)' : 'no GPU lanes' }),
      el('td', { text: a.nodes ? fmtCount(a.nodes) : 'this process' }),
      el('td', { text: a.nodes ? fmtCount(pc.hits || 0) + ' (' + fmtPct(pc.hit_rate || 0) + ' of misses; ' +
        fmtCount(pc.misses || 0) + ' asked in vain)' : '' }),
      el('td', { text: fmtCount(a.steals || 0) }), el('td', { text: fmtDur((a.seconds || 0) * 1e9) }),
      el('td', { text: fmtDur((a.t_min_seconds || 0) * 1e9) }), el('td', { text: fmtPct(a.efficiency || 0) }));
    body.append(el('table', {}, el('thead', {}, head), el('tbody', {}, row)));
    const lanes = (a.lanes || []).map((l, i) => el('span', { class: 'legend' },
      el('span', { style: 'display:inline-block;width:10px;height:10px;margin:0 4px;background:' + palette[i % palette.length] }),
      fmtValue(l.name) + ': ' + fmtCount(l.pairs || 0) + ' pairs, busy ' + fmtDur((l.busy_seconds || 0) * 1e9)));
    body.append(el('p', {}, ...lanes));
    // The matrix, rows down and columns across, at most 480 px a side.
    const side = 480, rows = Math.max(1, a.rows), cols = Math.max(1, a.cols);
    const sx = side / Math.max(rows, cols), w = Math.ceil(cols * sx), h = Math.ceil(rows * sx);
    const canvas = el('canvas', { width: String(w), height: String(h), class: 'pair-matrix',
      style: 'border:1px solid #ccc;image-rendering:pixelated' });
    const g = canvas.getContext('2d');
    const runs = a.leaf_runs || [];
    const tmax = Math.max(1e-9, ...runs.map((r) => r[6]));
    for (const [r0, r1, c0, c1, lane, t0] of runs) {
      g.fillStyle = palette[lane % palette.length];
      g.globalAlpha = 1 - 0.6 * (t0 / tmax);
      g.fillRect(c0 * sx, r0 * sx, Math.max(1, (c1 - c0) * sx), Math.max(1, (r1 - r0) * sx));
    }
    g.globalAlpha = 1;
    canvas.addEventListener('mousemove', (ev) => {
      const rect = canvas.getBoundingClientRect();
      const c = (ev.clientX - rect.left) / sx, r = (ev.clientY - rect.top) / sx;
      const hit = runs.find((x) => r >= x[0] && r < x[1] && c >= x[2] && c < x[3]);
      canvas.title = hit ? 'rows ' + hit[0] + '..' + (hit[1] - 1) + ' x cols ' + hit[2] + '..' + (hit[3] - 1) + ': ' +
        fmtValue((a.lanes[hit[4]] || {}).name) + ', ' + fmtDur(hit[5] * 1e9) + ' to ' + fmtDur(hit[6] * 1e9) : '';
    });
    body.append(canvas);
  }
}

// ------------------------------------------------------------- configuration
{
  const table = $('config-table');
  const first = ['workflow', 'command', 'started', 'created', 'host', 'flowd_version', 'scheduler', 'locality', 'prefetch',
    'gpus', 'workers', 'simulated_gpus', 'gpu_note', 'workflow_sha256'];
  const shown = ['scans', 'allpairs'];  // sections of their own
  const keys = first.filter((k) => k in cfg)
    .concat(Object.keys(cfg).filter((k) => !first.includes(k) && !shown.includes(k)).sort());
  if (!keys.length) table.replaceWith(el('p', { class: 'muted', text: 'No configuration was recorded.' }));
  for (const k of keys) {
    const v = cfg[k];
    let text;
    if (k === 'command' && Array.isArray(v)) text = v.map(shellWord).join(' ');
    else if (k === 'workers' && Array.isArray(v)) {
      text = v.map((w) => (w && typeof w === 'object'
        ? fmtValue(w.name) + ' (' + [w.kind, w.device].filter((x) => x !== undefined).map(fmtValue).join(', ') + ')'
        : fmtValue(w))).join(', ');
    }
    else if (k === 'started' || k === 'created') text = fmtDate(v) + (typeof v === 'string' ? '' : '  (' + fmtValue(v) + ')');
    else if (v !== null && typeof v === 'object') text = JSON.stringify(v, null, 2);
    else text = v === null ? 'null' : typeof v === 'boolean' ? String(v) : fmtValue(v);
    table.append(el('tr', {}, el('td', { class: 'k', text: k }), el('td', { class: 'v', text: text })));
  }
  if (cfg.flowd_version !== undefined) $('footer').prepend('flowd ' + fmtValue(cfg.flowd_version) + '. ');
}

// ------------------------------------------------------------------- drawing
function drawAll(scale) {
  timeline.draw(scale);
  for (const c of counterCharts) drawCounter(c, scale || window.devicePixelRatio || 1);
}
drawAll();
let resizeTimer = 0;
window.addEventListener('resize', () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(() => drawAll(), 120); });
// Print at a higher resolution than the screen, then go back.
window.addEventListener('beforeprint', () => drawAll(3));
window.addEventListener('afterprint', () => drawAll());
