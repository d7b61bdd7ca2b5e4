// The playground page: editors in, the rule core's result out. Every
// decision comes from the wasm module; this file only shows it.
import init, { evaluate, yaml_to_json, engine_version } from './pkg/os_placement_playground.js';

const $ = (id) => document.getElementById(id);
const editors = ['object', 'settings', 'pools', 'oldObject'];
const metrics = { loadToFirstVerdictMs: null, lastEvaluationMs: null, evaluations: 0 };
window.playground = metrics;

let examples = [];
let presets = [];
let lastResult = null;

function parseYaml(text) {
  const r = JSON.parse(yaml_to_json(text));
  if (r.error) throw new Error(`${r.error.message} at line ${r.error.line}`);
  return r.ok;
}

async function fetchText(path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.text();
}

// ---- editors -------------------------------------------------------------

function gutterOf(id) { return document.querySelector(`.editor[data-for="${id}"] .gutter`); }

function renderGutter(id, flags = new Map()) {
  const area = $(id);
  const lines = area.value.split('\n').length;
  const gutter = gutterOf(id);
  const parts = [];
  for (let n = 1; n <= lines; n++) {
    const flag = flags.get(n);
    parts.push(flag ? `<div class="flag ${flag.kind}" title="${escapeHtml(flag.title)}">${n}</div>` : `<div>${n}</div>`);
  }
  gutter.innerHTML = parts.join('');
  gutter.scrollTop = area.scrollTop;
}

function jumpTo(id, line, column = 1) {
  const area = $(id);
  const lines = area.value.split('\n');
  let start = 0;
  for (let i = 0; i < line - 1 && i < lines.length; i++) start += lines[i].length + 1;
  const end = start + (lines[line - 1] || '').length;
  const details = area.closest('details');
  if (details) details.open = true;
  area.focus();
  area.setSelectionRange(start + Math.max(0, column - 1), end);
  const lineHeight = parseFloat(getComputedStyle(area).lineHeight) || 19;
  area.scrollTop = Math.max(0, (line - 3) * lineHeight);
  gutterOf(id).scrollTop = area.scrollTop;
}

// ---- evaluation ------------------------------------------------------------

function currentState() {
  return {
    object: $('object').value, settings: $('settings').value, pools: $('pools').value,
    oldObject: $('oldObject').value, operation: $('operation').value,
    example: $('example').value, preset: $('preset').value,
  };
}

function runEvaluation() {
  const s = currentState();
  $('old-block').hidden = s.operation !== 'UPDATE';
  const started = performance.now();
  const result = JSON.parse(evaluate(s.object, s.settings, s.operation, s.operation === 'UPDATE' ? s.oldObject : '', s.pools));
  metrics.lastEvaluationMs = performance.now() - started;
  metrics.evaluations += 1;
  lastResult = result;
  render(result);
  if (metrics.loadToFirstVerdictMs === null) {
    metrics.loadToFirstVerdictMs = performance.now();
  }
  $('timing').textContent = `first verdict ${metrics.loadToFirstVerdictMs.toFixed(0)} ms after load · last evaluation ${metrics.lastEvaluationMs.toFixed(1)} ms`;
  scheduleShareUpdate();
}

let pending = 0;
function onEdit() {
  cancelAnimationFrame(pending);
  pending = requestAnimationFrame(runEvaluation);
}

// ---- rendering -------------------------------------------------------------

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v; else if (k.startsWith('on')) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function render(result) {
  const verdict = $('verdict');
  const errors = $('errors');
  const docs = $('documents');
  errors.replaceChildren();
  docs.replaceChildren();
  const flags = Object.fromEntries(editors.map((id) => [id, new Map()]));
  if (result.status === 'invalid-input') {
    verdict.className = 'verdict invalid';
    verdict.textContent = 'Input error: nothing evaluated';
    errors.append(errorList(result.errors, flags));
  } else {
    const { documents, poolErrors } = result;
    const rejected = documents.filter((d) => !d.accepted).length;
    const mutated = documents.filter((d) => d.accepted && d.patch.length > 0).length;
    verdict.className = `verdict ${rejected ? 'rejected' : mutated ? 'mutated' : 'accepted'}`;
    verdict.textContent = documents.length === 1
      ? docVerdict(documents[0])
      : `${documents.length} objects: ${documents.length - rejected} accepted (${mutated} changed), ${rejected} rejected`;
    if (poolErrors.length) errors.append(errorList(poolErrors, flags));
    for (const d of documents) docs.append(renderDocument(d, flags));
  }
  for (const id of editors) renderGutter(id, flags[id]);
}

function docVerdict(d) {
  if (!d.accepted) return `Rejected: ${d.violations.length} violation${d.violations.length === 1 ? '' : 's'}`;
  if (d.patch.length) return `Accepted with changes: ${d.patch.length} patch operation${d.patch.length === 1 ? '' : 's'}`;
  return d.warnings.length ? 'Accepted unchanged, with warnings' : 'Accepted unchanged';
}

function errorList(list, flags) {
  const ul = el('ul', { class: 'input-errors' });
  for (const e of list) {
    flags[e.input]?.set(e.line, { kind: 'error', title: e.message });
    ul.append(el('li', {}, el('button', { type: 'button', class: 'finding input-error', onclick: () => jumpTo(e.input, e.line, e.column) },
      el('span', { class: 'where' }, `${e.input} line ${e.line}, column ${e.column}${e.path ? ' · ' + e.path : ''}`),
      e.message)));
  }
  return ul;
}

function findingButton(d, kind, flags) {
  const mark = flags.object.get(d.line);
  if (!mark || kind === 'violation') flags.object.set(d.line, { kind: kind === 'violation' ? 'error' : 'warn', title: d.message });
  return el('li', {}, el('button', { type: 'button', class: `finding ${kind}`, 'data-line': d.line,
    // As the API server shows it: `<path>: <message>; <fix>`.
    'data-text': `${d.path}: ${d.message}${d.fix ? `; ${d.fix}` : ''}`, onclick: () => jumpTo('object', d.line, d.column) },
    el('span', { class: 'where' }, `line ${d.line} · ${d.path} `, el('span', { class: 'code' }, `[${d.code}]`)),
    d.message,
    d.fix ? el('span', { class: 'fix' }, `Fix: ${d.fix}`) : null));
}

function renderDocument(d, flags) {
  const node = $('document-template').content.firstElementChild.cloneNode(true);
  node.dataset.index = d.index;
  node.querySelector('.doc-title').textContent = `${d.kind || '(no kind)'} ${d.name || ''} · line ${d.line}`;
  const v = node.querySelector('.doc-verdict');
  v.className = `doc-verdict ${!d.accepted ? 'rejected' : d.patch.length ? 'mutated' : 'accepted'}`;
  v.textContent = docVerdict(d);
  const findings = node.querySelector('.findings');
  if (d.violations.length) {
    findings.append(el('h3', {}, 'Violations'), el('ul', { class: 'violations' }, ...d.violations.map((x) => findingButton(x, 'violation', flags))));
  }
  if (d.warnings.length) {
    findings.append(el('h3', {}, 'Warnings'), el('ul', { class: 'warnings' }, ...d.warnings.map((x) => findingButton(x, 'warning', flags))));
  }
  renderLanding(node.querySelector('.landing'), d.landing);
  if (!d.landing) node.querySelector('.landing-section').hidden = true;
  node.querySelector('.diff').replaceChildren(...diffLines(d.beforeYaml, d.afterYaml ?? d.beforeYaml));
  if (!d.afterYaml) node.querySelector('.diff-section h3').firstChild.textContent = d.accepted ? 'Changes: none ' : 'Changes: none, the object is rejected ';
  node.querySelector('.patch').textContent = JSON.stringify(d.patch, null, 2);
  const after = d.afterYaml ?? d.beforeYaml;
  node.querySelector('[data-copy="after"]').addEventListener('click', () => copy(after, 'Mutated YAML copied'));
  node.querySelector('[data-copy="patch"]').addEventListener('click', () => copy(JSON.stringify(d.patch, null, 2), 'JSON Patch copied'));
  node.querySelector('.download').addEventListener('click', () => download(`${d.name || d.kind || 'object'}.mutated.yaml`, after));
  const signals = node.querySelector('.signals');
  for (const s of d.signals || []) {
    signals.append(el('li', {}, el('code', {}, s.path), ` = ${s.value} → ${s.os ?? 'any OS'}${s.builds?.length ? ' ' + s.builds.join(' or ') : ''}${s.reason ? ' (' + s.reason + ')' : ''}`));
  }
  if (!(d.signals || []).length) node.querySelector('.signals-section').hidden = true;
  return node;
}

function landingCell(entry) {
  if (!entry) return el('span', { class: 'cell off' }, 'not admitted', el('small', {}, 'the policy rejects it'));
  let cls = 'off';
  let label = 'cannot land';
  if (entry.schedulable) {
    cls = entry.runs === 'yes' ? 'runs' : entry.runs === 'no' ? 'broken' : 'unknown';
    label = entry.runs === 'yes' ? 'lands, runs' : entry.runs === 'no' ? 'lands, cannot run' : 'lands, OS not known';
  }
  const why = [...entry.reasons, ...entry.notes];
  const more = why.length > 1 ? ` (+${why.length - 1} more)` : '';
  return el('span', { class: `cell ${cls}`, 'data-state': cls, title: why.join('\n') }, label, why.length ? el('small', {}, why[0] + more) : null);
}

function renderLanding(container, landing) {
  container.replaceChildren();
  if (!landing) return;
  const pools = currentPools();
  if (landing.before.problems) {
    container.append(el('p', {}, landing.before.problems.join('; ')));
    return;
  }
  container.append(el('span', { class: 'head' }, 'Node pool'), el('span', { class: 'head' }, 'Before the policy'), el('span', { class: 'head' }, 'After the policy'));
  landing.before.pools.forEach((before, i) => {
    const after = landing.after?.pools?.[i];
    const info = pools[i] || {};
    const taints = (info.taints || []).map((t) => `${t.key}${t.value ? '=' + t.value : ''}:${t.effect}`).join(', ');
    container.append(
      el('span', { class: 'pool' }, before.pool, el('small', {}, `${info.os || ''} ${info.build || ''}${taints ? ' · taint ' + taints : ''}`)),
      landingCell(before), landingCell(after));
  });
}

function currentPools() {
  try {
    const parsed = parseYaml($('pools').value);
    return Array.isArray(parsed) ? parsed : (parsed?.pools || []);
  } catch { return []; }
}

// A line diff (longest common subsequence): the policy only adds lines.
function diffLines(before, after) {
  const a = before.split('\n');
  const b = after.split('\n');
  const m = a.length, n = b.length;
  const lcs = Array.from({ length: m + 1 }, () => new Uint16Array(n + 1));
  for (let i = m - 1; i >= 0; i--) for (let j = n - 1; j >= 0; j--) {
    lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  const out = [];
  let i = 0, j = 0;
  while (i < m || j < n) {
    if (i < m && j < n && a[i] === b[j]) { out.push(['same', '  ' + a[i]]); i++; j++; }
    else if (j < n && (i >= m || lcs[i][j + 1] >= lcs[i + 1][j])) { out.push(['add', '+ ' + b[j]]); j++; }
    else { out.push(['del', '- ' + a[i]]); i++; }
  }
  while (out.length && out[out.length - 1][1].trim() === '') out.pop();
  return out.map(([cls, text]) => el('span', { class: cls }, text));
}

// ---- copy, download, share ---------------------------------------------------

function toast(text) {
  const t = el('div', { class: 'toast', role: 'status' }, text);
  document.body.append(t);
  setTimeout(() => t.remove(), 1600);
}

async function copy(text, message) {
  try { await navigator.clipboard.writeText(text); toast(message); } catch { toast('Copy failed: select the text and copy it'); }
}

function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/yaml' }));
  const a = el('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

async function compress(text) {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream('deflate-raw'));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

async function decompress(encoded) {
  const binary = atob(encoded.replace(/-/g, '+').replace(/_/g, '/'));
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  return new Response(stream).text();
}

let shareTimer = 0;
function scheduleShareUpdate() {
  clearTimeout(shareTimer);
  shareTimer = setTimeout(async () => {
    const hash = '#state=' + await compress(JSON.stringify(currentState()));
    history.replaceState(null, '', hash);
  }, 150);
}

async function shareLink() {
  const hash = '#state=' + await compress(JSON.stringify(currentState()));
  history.replaceState(null, '', hash);
  await copy(location.href, 'Share link copied');
}

async function stateFromUrl() {
  const match = location.hash.match(/^#state=([A-Za-z0-9_-]+)$/);
  if (!match) return null;
  try { return JSON.parse(await decompress(match[1])); } catch { return null; }
}

// ---- examples and presets ------------------------------------------------------

function presetFor(settingsPath) {
  const file = settingsPath.split('/').pop();
  return presets.find((p) => p.forSettings.includes(file)) || presets[0];
}

function poolsText(preset) {
  const lines = ['# Node pools of this platform: edit them to match your cluster.'];
  for (const p of preset.pools) {
    lines.push(`- name: ${p.name}`, `  os: ${p.os}`);
    if (p.build) lines.push(`  build: "${p.build}"`);
    const labels = Object.entries(p.labels || {});
    if (labels.length) lines.push('  labels:', ...labels.map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`));
    if ((p.taints || []).length) lines.push('  taints:', ...p.taints.map((t) => `  - {key: ${t.key}, value: ${JSON.stringify(t.value || '')}, effect: ${t.effect}}`));
  }
  return lines.join('\n') + '\n';
}

async function loadExample(name) {
  const example = examples.find((e) => e.name === name);
  if (!example) return;
  const [object, settings, old] = await Promise.all([
    fetchText(example.manifest), fetchText(example.settings),
    example.oldManifest ? fetchText(example.oldManifest) : Promise.resolve(''),
  ]);
  const preset = presetFor(example.settings);
  $('object').value = object;
  $('settings').value = settings;
  $('oldObject').value = old;
  $('operation').value = example.operation || 'CREATE';
  $('preset').value = preset.id;
  $('pools').value = poolsText(preset);
  $('example').value = name;
}

async function loadPreset(id) {
  const preset = presets.find((p) => p.id === id);
  if (!preset) return;
  $('settings').value = await fetchText(preset.settings);
  $('pools').value = poolsText(preset);
}

function fillMenus() {
  $('example').replaceChildren(el('option', { value: '' }, '(your own)'), ...examples.map((e) => el('option', { value: e.name }, e.name.replace(/-/g, ' '))));
  $('preset').replaceChildren(...presets.map((p) => el('option', { value: p.id }, p.name)));
}

// ---- start -------------------------------------------------------------------

async function main() {
  // The example index and presets load while the module compiles.
  const texts = Promise.all([fetchText('examples/cases.yaml'), fetchText('presets.yaml')]);
  await init();
  $('engine-version').textContent = engine_version();
  const [casesText, presetsText] = await texts;
  examples = parseYaml(casesText);
  presets = parseYaml(presetsText).presets;
  fillMenus();
  const shared = await stateFromUrl();
  if (shared) {
    for (const id of editors) $(id).value = shared[id] ?? '';
    $('operation').value = shared.operation || 'CREATE';
    $('example').value = shared.example || '';
    $('preset').value = shared.preset || presets[0].id;
  } else {
    await loadExample(examples[0].name);
  }
  runEvaluation();
  for (const id of editors) {
    const area = $(id);
    area.addEventListener('input', () => { $('example').value = ''; onEdit(); });
    area.addEventListener('scroll', () => { gutterOf(id).scrollTop = area.scrollTop; });
  }
  $('operation').addEventListener('change', onEdit);
  $('example').addEventListener('change', async (e) => { await loadExample(e.target.value); runEvaluation(); });
  $('preset').addEventListener('change', async (e) => { await loadPreset(e.target.value); $('example').value = ''; runEvaluation(); });
  $('share').addEventListener('click', shareLink);
}

main().catch((e) => {
  $('verdict').className = 'verdict invalid';
  $('verdict').textContent = `The playground could not start: ${e.message}`;
});
