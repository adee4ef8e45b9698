'use strict';
const data = JSON.parse(document.getElementById('flowd-data').textContent);
const cfg = data.config && typeof data.config === 'object' && !Array.isArray(data.config) ? data.config : {};
const tracks = data.tracks || [];
const sum = data.summary || {};
const S = data.spans || {};
const N = (S.start || []).length;
const duration = Math.max(1, sum.duration_ns || data.duration_ns || 1);
const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- formatting
function num(x) {
  const a = Math.abs(x);
  return a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : x.toFixed(2);
}
function fmtDur(ns) {
  const a = Math.abs(ns);
  if (a < 1e3) return Math.round(ns) + ' ns';
  if (a < 1e6) return num(ns / 1e3) + ' \u00b5s';
  if (a < 1e9) return num(ns / 1e6) + ' ms';
  if (a < 60e9) return num(ns / 1e9) + ' s';
  const s = Math.round(ns / 1e9);
  if (s < 3600) return Math.floor(s / 60) + ' min ' + String(s % 60).padStart(2, '0') + ' s';
  return Math.floor(s / 3600) + ' h ' + String(Math.floor(s / 60) % 60).padStart(2, '0') + ' min';
}
function fmtBytes(b) {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (b >= 1000 && i < u.length - 1) { b /= 1024; ++i; }  // never four digits: 0.98 GiB, not 1000 MiB
  return (i === 0 ? String(Math.round(b)) : num(b)) + ' ' + u[i];
}
function fmtCount(n) { return Number(n).toLocaleString('en-US'); }
function fmtPct(f) { return (100 * f).toFixed(1) + ' %'; }
function fmtValue(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return v ? 'on' : 'off';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  return JSON.stringify(v);
}
// "YYYY-MM-DD HH:MM:SS UTC" for epoch numbers (s, ms or ns) and ISO strings
// with a zone; anything else as given.
function fmtDate(v) {
  const utc = (ms) => new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  if (typeof v === 'number' && isFinite(v)) return utc(v > 1e14 ? v / 1e6 : v > 1e11 ? v : v * 1000);
  if (typeof v === 'string') {
    if (/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)$/.test(v) && !isNaN(Date.parse(v))) return utc(Date.parse(v));
    return v.replace('T', ' ');
  }
  return fmtValue(v);
}
// Axis numbers: three significant digits, no trailing zeros.
function short(x) { return String(Number(Number(x).toPrecision(3))); }
// Tick positions and labels for [t0, t1] ns drawn over px pixels, at least
// gap pixels apart, on 1-2-5 steps in one unit per axis.
function timeTicks(t0, t1, px, gap) {
  const want = Math.max(2, Math.floor(px / gap));
  const raw = Math.max(1, (t1 - t0) / want);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
  let unit = 1, suffix = ' ns';
  if (step >= 1e9) { unit = 1e9; suffix = ' s'; } else if (step >= 1e6) { unit = 1e6; suffix = ' ms'; }
  else if (step >= 1e3) { unit = 1e3; suffix = ' \u00b5s'; }
  const decimals = Math.max(0, -Math.floor(Math.log10(step / unit) + 1e-9));
  const out = [];
  for (let t = Math.ceil(t0 / step) * step; t <= t1 + step * 1e-9; t += step)
    out.push([t, t === 0 ? '0' : (t / unit).toFixed(decimals) + suffix]);
  return out;
}
function shellWord(w) {
  w = String(w);
  return /^[A-Za-z0-9_@%+=:,.\/-]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'";
}
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) {
    if (k === 'class') e.className = attrs[k];
    else if (k === 'text') e.textContent = attrs[k];
    else if (k === 'style') e.setAttribute('style', attrs[k]);
    else e.setAttribute(k, attrs[k]);
  }
  for (const c of kids) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}
function variantLabel(v) {
  return { cpu: 'CPU', gpu: 'GPU', sim: 'Simulated GPU', copy: 'copy', node: 'on a worker node' }[v] || v;
}
function kindLabel(k) {
  return { cpu: 'CPU', gpu: 'GPU', sim_gpu: 'simulated GPU', copy: 'copy engine', node: 'worker node' }[k] || k || '';
}

