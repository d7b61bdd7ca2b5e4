// What the page shows: the text editors (a textarea with a line-number
// gutter that flags the lines findings point at, jumping to a line, opening
// files into them); and the rule core's result (the verdict, each finding at
// its line, the diff, the JSON Patch, where the pods land, which lookups the
// policy makes). Every decision comes from the wasm module; this only
// shows it.
import { $, el } from './dom.js';

/** A short message, announced to screen readers. */
export function toast(text) {
  const t = el('div', { class: 'toast', role: 'status' }, text);
  document.body.append(t);
  setTimeout(() => t.remove(), 1800);
}

/** Copies text to the clipboard, saying whether it worked. */
export async function copy(text, message) {
  try { await navigator.clipboard.writeText(text); toast(message); } catch { toast('Copy failed: select the text and copy it'); }
}

/** Offers text as a file download. */
export function download(name, text, type = 'application/yaml') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = el('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// ---- editors --------------------------------------------------------------------

export const EDITORS = ['object', 'oldObject', 'settings', 'pools', 'cluster'];

function gutterOf(id) { return document.querySelector(`.editor[data-for="${id}"] .gutter`); }

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

/** Line numbers for the editor, with the lines in `flags` (line → {kind, title}) marked. */
export function renderGutter(id, flags = new Map()) {
  const area = $(id);
  const gutter = gutterOf(id);
  if (!area || !gutter) return;
  const lines = area.value.split('\n').length;
  const parts = [];
  for (let n = 1; n <= lines; n++) {
    const flag = flags.get(n);
    parts.push(flag ? `<div class="flag ${flag.kind}" title="${escapeHtml(flag.title)}">${n}</div>` : `<div>${n}</div>`);
  }
  gutter.innerHTML = parts.join('');
  // Reading the scroll position forces a layout: only when the text was scrolled.
  if (scrolled.get(id)) gutter.scrollTop = area.scrollTop;
}

/** How far each editor is scrolled, kept by its scroll handler. */
const scrolled = new Map();

/** Focuses the editor and selects the line, opening what hides it. */
export function jumpTo(id, line, column = 1) {
  const area = $(id);
  if (!area) return;
  const lines = area.value.split('\n');
  let start = 0;
  for (let i = 0; i < line - 1 && i < lines.length; i++) start += lines[i].length + 1;
  const end = start + (lines[line - 1] || '').length;
  for (let d = area.closest('details'); d; d = d.parentElement?.closest('details')) d.open = true;
  area.focus();
  area.setSelectionRange(start + Math.max(0, column - 1), end);
  const lineHeight = parseFloat(getComputedStyle(area).lineHeight) || 19;
  area.scrollTop = Math.max(0, (line - 3) * lineHeight);
  scrolled.set(id, area.scrollTop);
  const gutter = gutterOf(id);
  if (gutter) gutter.scrollTop = area.scrollTop;
}

/** Keeps each gutter scrolled with its text. */
export function syncGutters() {
  for (const id of EDITORS) {
    const area = $(id);
    area?.addEventListener('scroll', () => {
      scrolled.set(id, area.scrollTop);
      const g = gutterOf(id);
      if (g) g.scrollTop = area.scrollTop;
    });
  }
}

/**
 * Files dropped on `zone` are read as text and handed to `onText(text, name)`;
 * the zone is marked while a file is over it.
 */
export function acceptDrops(zone, onText) {
  const over = (e) => {
    if (![...(e.dataTransfer?.types || [])].includes('Files')) return;
    e.preventDefault();
    zone.classList.add('dropping');
  };
  zone.addEventListener('dragenter', over);
  zone.addEventListener('dragover', over);
  zone.addEventListener('dragleave', () => zone.classList.remove('dropping'));
  zone.addEventListener('drop', async (e) => {
    const file = e.dataTransfer?.files?.[0];
    zone.classList.remove('dropping');
    if (!file) return;
    e.preventDefault();
    onText(await file.text(), file.name);
  });
}

/** A hidden file input behind a button: the chosen file's text goes to `onText(text, name)`. */
export function filePicker(button, input, onText) {
  button.addEventListener('click', () => input.click());
  input.addEventListener('change', async () => {
    const file = input.files?.[0];
    input.value = '';
    if (file) onText(await file.text(), file.name);
  });
}

// ---- results --------------------------------------------------------------------

/**
 * Renders `result` (the JSON of `evaluate`). `place(input, line, column)`
 * maps an input problem to the editor and line showing it (`{id, line, column}`),
 * or null when no editor shows that input.
 */
export function render(result, place, factsOn = false) {
  const verdict = $('verdict');
  const errors = $('errors');
  const docs = $('documents');
  errors.replaceChildren();
  docs.replaceChildren();
  const flags = Object.fromEntries(EDITORS.map((id) => [id, new Map()]));
  if (result.status === 'invalid-input') {
    verdict.className = 'verdict invalid';
    verdict.textContent = 'Input error: nothing evaluated';
    errors.append(errorList(result.errors, flags, place));
  } else {
    const { documents, poolErrors } = result;
    const rejected = documents.filter((d) => !d.accepted).length;
    const mutated = documents.filter((d) => d.accepted && d.patch.length > 0).length;
    verdict.className = `verdict ${rejected ? 'rejected' : mutated ? 'mutated' : 'accepted'}`;
    verdict.textContent = documents.length === 1
      ? docVerdict(documents[0])
      : `${documents.length} objects: ${documents.length - rejected} accepted (${mutated} changed), ${rejected} rejected`;
    if (poolErrors.length) errors.append(errorList(poolErrors, flags, place));
    for (const d of documents) docs.append(renderDocument(d, flags, result.pools || [], factsOn));
  }
  for (const id of EDITORS) renderGutter(id, flags[id]);
}

function docVerdict(d) {
  if (d.verdict === 'skipped') return 'Skipped: the policy is not asked';
  if (!d.accepted) return `Rejected: ${d.violations.length} violation${d.violations.length === 1 ? '' : 's'}`;
  if (d.patch.length) return `Accepted with changes: ${d.patch.length} patch operation${d.patch.length === 1 ? '' : 's'}`;
  return d.warnings.length ? 'Accepted unchanged, with warnings' : 'Accepted unchanged';
}

function errorList(list, flags, place) {
  const ul = el('ul', { class: 'input-errors' });
  for (const e of list) {
    const at = place(e.input, e.line, e.column);
    if (at) flags[at.id]?.set(at.line, { kind: 'error', title: e.message });
    const where = `${e.input} line ${e.line}, column ${e.column}${e.path ? ' · ' + e.path : ''}`;
    ul.append(el('li', {}, el('button', {
      type: 'button', class: 'finding input-error', 'data-input': e.input,
      onclick: () => at && jumpTo(at.id, at.line, at.column),
    }, el('span', { class: 'where' }, where), e.message)));
  }
  return ul;
}

function findingButton(d, kind, flags) {
  const mark = flags.object.get(d.line);
  if (!mark || kind === 'violation') flags.object.set(d.line, { kind: kind === 'violation' ? 'error' : 'warn', title: d.message });
  return el('li', {}, el('button', {
    type: 'button', class: `finding ${kind}`, 'data-line': d.line,
    // As the API server shows it: `<path>: <message>; <fix>`.
    'data-text': `${d.path}: ${d.message}${d.fix ? `; ${d.fix}` : ''}`, onclick: () => jumpTo('object', d.line, d.column),
  },
  el('span', { class: 'where' }, `line ${d.line} · ${d.path} `, el('span', { class: 'code' }, `[${d.code}]`)),
  d.message,
  d.fix ? el('span', { class: 'fix' }, `Fix: ${d.fix}`) : null));
}

function renderDocument(d, flags, pools, factsOn) {
  const node = $('document-template').content.firstElementChild.cloneNode(true);
  node.dataset.index = d.index;
  node.querySelector('.doc-title').textContent = `${d.kind || '(no kind)'} ${d.name || ''} · line ${d.line}`;
  const v = node.querySelector('.doc-verdict');
  v.className = `doc-verdict ${!d.accepted ? 'rejected' : d.patch.length ? 'mutated' : 'accepted'}`;
  v.textContent = d.skipReason ? `${docVerdict(d)} (${d.skipReason})` : docVerdict(d);
  const findings = node.querySelector('.findings');
  if (d.violations.length) {
    findings.append(el('h3', {}, 'Violations'), el('ul', { class: 'violations' }, ...d.violations.map((x) => findingButton(x, 'violation', flags))));
  }
  if (d.warnings.length) {
    findings.append(el('h3', {}, 'Warnings'), el('ul', { class: 'warnings' }, ...d.warnings.map((x) => findingButton(x, 'warning', flags))));
  }
  renderLookups(node.querySelector('.lookups'), d.lookups);
  renderLanding(node.querySelector('.landing'), d.landing, pools);
  node.querySelector('.facts-note').hidden = !factsOn;
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

/** What the policy asks its host for this object. */
function renderLookups(container, lookups) {
  if (!lookups || (!lookups.images.length && !lookups.runtimeClasses.length && !lookups.nodes)) {
    container.textContent = 'The policy looks nothing up for this object.';
    return;
  }
  // As policy/src/facts.rs asks: one list of the facts the syncer publishes
  // (images with imageFacts: cluster, the node classes, RuntimeClasses),
  // a RuntimeClass they lack by name, and with imageFacts: registry each
  // image from its registry.
  const fromRegistry = lookups.imageSource === 'registry';
  const published = [];
  if (lookups.images.length && !fromRegistry) published.push(`the platforms of ${lookups.images.join(', ')}`);
  if (lookups.nodes) published.push('the node classes');
  if (lookups.runtimeClasses.length) published.push(`RuntimeClass ${lookups.runtimeClasses.join(', ')}`);
  const parts = [];
  if (published.length) {
    const lacking = lookups.runtimeClasses.length ? ' (a RuntimeClass they lack, by name from the cluster)' : '';
    parts.push(`${published.join(', ')} from the facts the syncer publishes in ${lookups.factsNamespace || 'its namespace'}${lacking}`);
  }
  if (lookups.images.length && fromRegistry) parts.push(`the platforms of ${lookups.images.join(', ')} from their registries`);
  container.textContent = `In a cluster the policy looks up ${parts.join('; ')}.`;
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

function renderLanding(container, landing, pools) {
  container.replaceChildren();
  if (!landing) return;
  if (landing.before.problems) {
    container.append(el('p', {}, landing.before.problems.join('; ')));
    return;
  }
  container.append(el('span', { class: 'head' }, 'Node pool'), el('span', { class: 'head' }, 'Before the policy'), el('span', { class: 'head' }, 'After the policy'));
  landing.before.pools.forEach((before, i) => {
    const after = landing.after?.pools?.[i];
    const info = pools[i] || {};
    const taints = (info.taints || []).map((t) => `${t.key}${t.value ? '=' + t.value : ''}:${t.effect}`).join(', ');
    const arch = info.architecture || info.labels?.['kubernetes.io/arch'] || '';
    container.append(
      el('span', { class: 'pool' }, before.pool, el('small', {}, `${info.os || ''} ${info.windowsBuild || ''} ${arch}${taints ? ' · taint ' + taints : ''}`)),
      landingCell(before), landingCell(after));
  });
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
