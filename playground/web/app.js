// The playground page: editors in, the rule core's result out. Every
// decision comes from the wasm module; the other modules only show it.
import init, * as engine from './pkg/os_placement_playground.js';
import { $, el } from './dom.js';
import { copy, download, toast, EDITORS, acceptDrops, filePicker, jumpTo, syncGutters, render } from './view.js';
import * as workspace from './workspace.js';

const metrics = { loadToFirstVerdictMs: null, lastEvaluationMs: null, evaluations: 0, ready: false };
window.playground = metrics;

// The examples: the first one and the presets come with the page; all of
// them (examples.json) load after the first verdict.
let bundle = { cases: [], presets: [], files: {} };
let allExamples = null;

function examples() {
  allExamples ??= fetch('examples.json')
    .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`examples.json: ${r.status}`))))
    .then((full) => { bundle = full; return full; });
  return allExamples;
}
let lastResult = null;
let images = null;
let settingsForm = null;
let engineBuild = '';

// ---- the workspace on the page --------------------------------------------------

function currentState() {
  return {
    engine: engineBuild,
    object: $('object').value, oldObject: $('oldObject').value, settings: $('settings').value, pools: $('pools').value,
    operation: $('operation').value, example: $('example').value, preset: $('preset').value,
    facts: {
      enabled: $('facts-on').checked, poolsAreNodes: $('pools-are-nodes').checked,
      images: images ? images.images : pendingImages, cluster: $('cluster').value,
    },
  };
}

// The image list of a workspace applied before the facts editor is built.
let pendingImages = [];

function applyState(state) {
  for (const id of ['object', 'oldObject', 'settings', 'pools']) $(id).value = state[id];
  $('cluster').value = state.facts.cluster;
  $('operation').value = state.operation;
  $('facts-on').checked = state.facts.enabled;
  $('pools-are-nodes').checked = state.facts.poolsAreNodes;
  if (images) images.set(state.facts.images); else pendingImages = structuredClone(state.facts.images);
  if (bundle.cases.some((c) => c.name === state.example)) $('example').value = state.example; else $('example').value = '';
  if (bundle.presets.some((p) => p.id === state.preset)) $('preset').value = state.preset;
  if (state.facts.enabled || state.facts.cluster || state.facts.images.length) $('facts-block').open = true;
}

function engineNotice(state, where) {
  if (!state.engine || state.engine === engineBuild) return;
  notice(`This ${where} was made with rule engine ${state.engine}; this page runs ${engineBuild}. The answer may differ from the one it was shared with.`);
}

function notice(text) {
  const box = $('notice');
  box.replaceChildren(el('span', {}, text), ' ', el('button', { type: 'button', class: 'small', id: 'notice-close', onclick: () => { box.hidden = true; } }, 'Dismiss'));
  box.hidden = false;
}

// ---- evaluation ------------------------------------------------------------------

function evaluateNow() {
  const s = currentState();
  $('old-block').hidden = s.operation !== 'UPDATE';
  const facts = s.facts.enabled ? workspace.factsText(s.facts.cluster, images ? images.facts() : imagesFacts(pendingImages)) : '';
  const started = performance.now();
  const result = JSON.parse(engine.evaluate(s.object, s.settings, s.operation,
    s.operation === 'UPDATE' ? s.oldObject : '', s.pools, facts, s.facts.enabled && s.facts.poolsAreNodes));
  metrics.lastEvaluationMs = performance.now() - started;
  if (metrics.loadToFirstVerdictMs === null) performance.mark('evaluated');
  lastResult = result;
  render(result, (input, line, column) => place(input, line, column, s), s.facts.enabled);
  metrics.evaluations += 1;
  if (metrics.loadToFirstVerdictMs === null) {
    performance.mark('first verdict shown');
    metrics.loadToFirstVerdictMs = performance.now();
    document.documentElement.classList.remove('starting');
  }
  $('timing').textContent = `first verdict ${metrics.loadToFirstVerdictMs.toFixed(0)} ms after opening · last evaluation ${metrics.lastEvaluationMs.toFixed(1)} ms`;
  $('facts-state').textContent = s.facts.enabled ? 'on: lookups answered from these facts' : 'off: nothing is looked up';
  if (settingsForm && !$('settings-form').hidden) updateFormErrors(result);
  scheduleSave();
}

function imagesFacts(list) {
  return Object.fromEntries(list.filter((i) => i.image).map((i) => [i.image, { platforms: i.platforms }]));
}

/** The editor and line showing a problem of `input`. */
function place(input, line, column, s) {
  if (input === 'facts') return workspace.placeFactsLine(s.facts.cluster, line, column);
  return EDITORS.includes(input) ? { id: input, line, column } : null;
}

let pending = 0;
function onEdit() {
  cancelAnimationFrame(pending);
  pending = requestAnimationFrame(evaluateNow);
}

let saveTimer = 0;
function scheduleSave() {
  clearTimeout(saveTimer);
  saveTimer = setTimeout(() => workspace.save(currentState()), 250);
}

function edited() {
  $('example').value = '';
  workspace.leaveLink();
  onEdit();
}

// ---- examples and presets -----------------------------------------------------------

function file(path) { return path ? bundle.files[path] ?? '' : ''; }

function exampleState(name) {
  const c = bundle.cases.find((x) => x.name === name);
  if (!c) return null;
  const preset = bundle.presets.find((p) => p.id === c.preset) || presetFor(c.settings);
  return workspace.normalise({
    object: file(c.manifest), settings: file(c.settings), oldObject: file(c.oldManifest),
    operation: c.operation || 'CREATE', example: c.name, preset: preset.id, pools: preset.poolsText,
    facts: {
      enabled: c.facts, poolsAreNodes: c.poolsAreNodes !== false, cluster: file(c.cluster),
      images: Object.entries(c.images || {}).map(([image, f]) => ({ image, platforms: f.platforms })),
    },
  });
}

function presetFor(settingsPath) {
  const name = (settingsPath || '').split('/').pop();
  return bundle.presets.find((p) => p.forSettings.includes(name)) || bundle.presets[0];
}

function fillMenus() {
  const option = (c) => el('option', { value: c.name }, c.name.replace(/-/g, ' '));
  $('example').replaceChildren(el('option', { value: '' }, '(your own)'),
    el('optgroup', { label: 'Examples' }, ...bundle.cases.filter((c) => !c.facts).map(option)),
    el('optgroup', { label: 'With cluster and registry facts' }, ...bundle.cases.filter((c) => c.facts).map(option)));
  $('preset').replaceChildren(...bundle.presets.map((p) => el('option', { value: p.id }, p.name)));
}

async function pickExample(name) {
  if (!name) return;
  await examples();
  const state = exampleState(name);
  if (!state) return;
  applyState(state);
  workspace.leaveLink();
  if (settingsForm && !$('settings-form').hidden) settingsForm.render();
  evaluateNow();
}

async function pickPreset(id) {
  await examples();
  const preset = bundle.presets.find((p) => p.id === id);
  if (!preset) return;
  $('settings').value = file(preset.settings);
  $('pools').value = preset.poolsText;
  if (settingsForm && !$('settings-form').hidden) settingsForm.render();
  edited();
}

// ---- the start --------------------------------------------------------------------

async function startEngine() {
  const boot = window.playgroundBoot;
  try {
    const compiled = await boot.module;
    performance.mark('engine compiled');
    // Instantiated at once, not in a task of its own: the first verdict is
    // shown in the task that runs the modules, before the first frame.
    engine.initSync({ module: compiled });
  } catch {
    // The server did not send application/wasm: compile from the bytes.
    await init({ module_or_path: new URL('pkg/os_placement_playground_bg.wasm', import.meta.url) });
  }
  performance.mark('engine ready');
}

async function main() {
  performance.mark('modules run');
  bundle = JSON.parse($('examples-first').textContent);
  const [, linked] = await Promise.all([startEngine(), workspace.fromUrl()]);
  engineBuild = engine.engine_build();
  fillMenus();
  const restored = linked || workspace.saved();
  applyState(restored ? workspace.normalise(restored) : exampleState(bundle.cases[0].name));
  evaluateNow();
  if (linked) engineNotice(linked, 'link');
  // Nothing below is needed for the first verdict.
  setTimeout(() => wire().catch(failed), 0);
}

// The facts editor, the settings form and the first look load after the first verdict.
async function wire() {
  const [facts, { SettingsForm }, tour] = await Promise.all([import('./facts.js'), import('./settings-form.js'), import('./tour.js')]);
  $('engine-version').textContent = engine.engine_version();
  $('engine-build').textContent = `(${engineBuild})`;
  for (const id of EDITORS) $(id).addEventListener('input', edited);
  syncGutters();
  $('operation').addEventListener('change', edited);
  $('example').addEventListener('change', (e) => pickExample(e.target.value));
  $('preset').addEventListener('change', (e) => pickPreset(e.target.value));
  $('facts-on').addEventListener('change', edited);
  $('pools-are-nodes').addEventListener('change', edited);
  wireFacts(facts);
  wireSettings(SettingsForm);
  wireWorkspace();
  examples().catch((e) => notice(`The examples could not be loaded (${e.message}): reload the page to try again.`));
  $('guide').addEventListener('click', tour.startTour);
  metrics.ready = true;
  if (!tour.seen()) tour.startTour();
}

function wireFacts({ ImagesEditor, architectureList }) {
  $('facts-block').append(architectureList());
  images = new ImagesEditor({ container: $('images'), onChange: edited });
  images.set(pendingImages);
  $('images-from-lookups').addEventListener('click', () => {
    const wanted = (lastResult?.documents || []).flatMap((d) => d.lookups?.images || []);
    const added = images.addReferences([...new Set(wanted)]);
    toast(added ? `${added} image${added === 1 ? '' : 's'} added: fill in their platforms` : 'The policy looks up no other image');
  });
}

function wireSettings(SettingsForm) {
  settingsForm = new SettingsForm({
    container: $('settings-form'),
    schema: JSON.parse(engine.settings_schema()),
    engine,
    read: () => $('settings').value,
    write: (text) => { $('settings').value = text; edited(); },
  });
  const show = (view) => {
    $('settings-form').hidden = view !== 'form';
    $('settings-yaml').hidden = view === 'form';
    if (view === 'form') { updateFormErrors(lastResult, true); }
    try { localStorage.setItem('os-placement-playground.settings-view', view); } catch { /* not kept */ }
  };
  for (const id of ['view-form', 'view-yaml']) $(id).addEventListener('change', (e) => show(e.target.value));
  let view = 'yaml';
  try { view = localStorage.getItem('os-placement-playground.settings-view') || 'yaml'; } catch { /* default */ }
  $(`view-${view === 'form' ? 'form' : 'yaml'}`).checked = true;
  show(view);
}

let formErrors = '';
function updateFormErrors(result, force = false) {
  const errors = result?.status === 'invalid-input' ? result.errors.filter((e) => e.input === 'settings') : [];
  const key = JSON.stringify(errors);
  if (!force && key === formErrors) return;
  formErrors = key;
  settingsForm.showErrors(errors);
  settingsForm.render();
}

function wireWorkspace() {
  $('share').addEventListener('click', async () => {
    const url = await workspace.shareUrl(currentState());
    history.replaceState(null, '', url);
    await copy(url, 'Share link copied');
  });
  $('export').addEventListener('click', () => download('os-placement-workspace.yaml', workspace.toYaml(currentState())));
  filePicker($('import'), $('workspace-input'), (text) => importWorkspace(text));
  filePicker($('open-file'), $('file-input'), openText);
  acceptDrops($('object-block'), openText);
  $('reset').addEventListener('click', async () => {
    workspace.forget();
    await pickExample(bundle.cases[0].name);
    toast('Workspace reset to the first example');
  });
}

/** A file opened or dropped: a workspace is imported, anything else is the object. */
function openText(text, name) {
  if (workspace.looksLikeWorkspace(text)) return importWorkspace(text);
  $('object').value = text;
  edited();
  toast(`Opened ${name}`);
  jumpTo('object', 1);
}

function importWorkspace(text) {
  const parsed = JSON.parse(engine.yaml_to_json(text));
  const read = parsed.error ? { error: `line ${parsed.error.line}: ${parsed.error.message}` } : workspace.fromValue(parsed.ok);
  if (read.error) { notice(`Import failed: ${read.error}`); return; }
  applyState(read.state);
  workspace.leaveLink();
  if (!$('settings-form').hidden) settingsForm.render();
  evaluateNow();
  toast('Workspace imported');
  engineNotice(read.state, 'workspace');
}

function failed(e) {
  document.documentElement.classList.remove('starting');
  $('verdict').className = 'verdict invalid';
  $('verdict').textContent = `The playground could not start: ${e.message}`;
}

main().catch(failed);
