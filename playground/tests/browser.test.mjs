// Browser tests of the playground: the built playground/dist served on
// 127.0.0.1 under /os-placement/ (as GitHub Pages serves a project site),
// driven in headless Debian chromium through playwright-core, with axe-core
// for accessibility. Screenshots, timings, the load waterfall and the axe
// results go to target/playground-browser/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { serve } from './serve.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');
const dist = join(repo, 'playground', 'dist');
const out = join(repo, 'target', 'playground-browser');
const requireHere = createRequire(join(repo, 'playground', 'package.json'));
const { chromium } = requireHere('playwright-core');
const axeSource = await readFile(requireHere.resolve('axe-core/axe.min.js'), 'utf8');
const engine = await import(join(dist, 'pkg', 'os_placement_playground.js'));
engine.initSync({ module: await readFile(join(dist, 'pkg', 'os_placement_playground_bg.wasm')) });

const yaml = (text) => JSON.parse(engine.yaml_to_json(text)).ok;
const plainCases = yaml(await readFile(join(repo, 'examples', 'cases.yaml'), 'utf8'));
const factCases = yaml(await readFile(join(repo, 'playground', 'examples', 'cases.yaml'), 'utf8'));
// The per-example tests loop over these: an empty list would check nothing.
assert.ok(Array.isArray(plainCases) && plainCases.length >= 20, `examples/cases.yaml: ${plainCases?.length} cases`);
assert.ok(Array.isArray(factCases) && factCases.length >= 5, `playground/examples/cases.yaml: ${factCases?.length} cases`);
const cases = [...plainCases, ...factCases];
// Cases evaluated with facts: the playground's, and the examples that name a cluster.
const hasFacts = (c) => factCases.includes(c) || Boolean(c.cluster);
const schema = JSON.parse(engine.settings_schema());
const LAPTOP = { width: 1366, height: 900 };
const PHONE = { width: 390, height: 844 };
const PREFIX = '/os-placement/';

let server, browser, origin, base;
const outside = [];
const failed = [];
const timings = {};
const axeResults = {};

before(async () => {
  await mkdir(out, { recursive: true });
  server = await serve(dist, 0, PREFIX);
  origin = `http://127.0.0.1:${server.address().port}`;
  base = origin + PREFIX;
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-quic', '--no-first-run'],
    // playwright-core starts chromium with a fresh, empty --user-data-dir of its own.
  });
});

after(async () => {
  await browser?.close();
  await new Promise((ok) => server?.close(ok));
  await writeFile(join(out, 'timings.json'), JSON.stringify(timings, null, 2));
  await writeFile(join(out, 'axe.json'), JSON.stringify(axeResults, null, 2));
  console.log(`playground timings: ${JSON.stringify(timings)}`);
});

/** A fresh browser context (empty storage); the first look is marked seen unless `tour`. */
async function newContext({ viewport = LAPTOP, tour = false, scheme = 'light' } = {}) {
  const context = await browser.newContext({ viewport, colorScheme: scheme });
  if (!tour) await context.addInitScript(() => localStorage.setItem('os-placement-playground.tour', 'seen'));
  return context;
}

async function open(url = base, options = {}) {
  const context = options.context || await newContext(options);
  const page = await context.newPage();
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith('http://127.0.0.1:') && !u.startsWith('data:') && !u.startsWith('blob:')) outside.push(u);
  });
  page.on('response', (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`); });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  await page.waitForFunction(() => window.playground?.ready);
  page.jsErrors = errors;
  return page;
}

const evaluations = (page) => page.evaluate(() => window.playground.evaluations);

async function afterEvaluation(page, action) {
  const before = await evaluations(page);
  await action();
  await page.waitForFunction((n) => window.playground.evaluations > n, before);
}

const pick = (page, name) => afterEvaluation(page, () => page.selectOption('#example', name));
const setText = (page, id, text) => afterEvaluation(page, () => page.fill(`#${id}`, text));

async function firstDocument(page) {
  const doc = page.locator('.document').first();
  const shown = (sel) => doc.locator(`${sel} .finding`).evaluateAll((b) => b.map((x) => x.dataset.text).join('\n'));
  return {
    verdict: await doc.locator('.doc-verdict').textContent(),
    patch: await doc.locator('.patch').textContent(),
    violations: await shown('.violations'),
    warnings: await shown('.warnings'),
    cells: await doc.locator('.landing .cell').evaluateAll((xs) => xs.map((x) => x.dataset.state || 'rejected')),
  };
}

/** The expectations of a case against what the page shows. */
function check(name, expect, shown) {
  assert.equal(shown.verdict.startsWith('Rejected'), !expect.accepted, `${name}: ${shown.verdict}`);
  const patch = JSON.parse(shown.patch);
  if (expect.patched !== undefined) assert.equal(patch.length > 0, Boolean(expect.patched), `${name}: patch ${shown.patch}`);
  for (const s of expect.messageContains || []) assert.ok(shown.violations.includes(s), `${name}: violations lack ${s}`);
  for (const s of expect.warningsContain || []) assert.ok(shown.warnings.includes(s), `${name}: warnings lack ${s}`);
  for (const s of expect.patchContains || []) assert.ok(JSON.stringify(patch).includes(s), `${name}: patch lacks ${s}`);
  for (const s of expect.warningsOmit || []) assert.ok(!shown.warnings.includes(s), `${name}: warnings hold ${s}`);
}

test('loads from the sub-path, shows a verdict and the engine version and build', async () => {
  const page = await open();
  assert.match(await page.textContent('#verdict'), /^(Accepted|Rejected)/);
  const version = (await readFile(join(repo, 'Cargo.toml'), 'utf8')).match(/^version = "(.+)"/m)[1];
  assert.equal(await page.textContent('#engine-version'), version);
  assert.equal(await page.textContent('#engine-build'), `(${engine.engine_build()})`);
  assert.ok(engine.engine_build().startsWith(`${version}+`), engine.engine_build());
  const options = await page.$$eval('#example option', (o) => o.map((x) => x.value).filter(Boolean));
  // The menu lists the examples, then those with facts.
  assert.deepEqual(options, [...cases.filter((c) => !hasFacts(c)), ...cases.filter(hasFacts)].map((c) => c.name));
  // Every request stayed under the sub-path, and every one was found.
  const requested = await page.evaluate(() => performance.getEntriesByType('resource').map((e) => e.name));
  assert.ok(requested.length >= 5, requested.join(' '));
  for (const url of requested) assert.ok(url.startsWith(base), `${url} is outside ${PREFIX}`);
  assert.deepEqual(page.jsErrors, []);
  // Without the trailing slash, the address redirects to the folder.
  const bare = await page.goto(base.slice(0, -1));
  assert.equal(new URL(bare.url()).pathname, PREFIX);
  await page.context().close();
  // At the root of a host it works as well.
  const root = await serve(dist, 0);
  const atRoot = await open(`http://127.0.0.1:${root.address().port}/`);
  assert.match(await atRoot.textContent('#verdict'), /^(Accepted|Rejected)/);
  await atRoot.context().close();
  await new Promise((ok) => root.close(ok));
});

/** Records on the page what took `html.starting` off: the first verdict, or the 250 ms timer before it. */
async function watchDrawing(context) {
  await context.addInitScript(() => {
    new MutationObserver((_, observer) => {
      if (document.documentElement?.classList.contains('starting') !== false) return;
      const verdictShown = window.playground?.loadToFirstVerdictMs != null;
      window.drawn = { atMs: performance.now(), by: verdictShown ? 'verdict' : 'timer' };
      observer.disconnect();
    }).observe(document, { attributes: true, subtree: true, attributeFilter: ['class'] });
  });
}

test('the page is kept undrawn until the first verdict, at most 250 ms, and drawn when the engine cannot load', async () => {
  const context = await newContext();
  await watchDrawing(context);
  const page = await open(base, { context });
  const { drawn, verdictMs } = await page.evaluate(() => ({ drawn: window.drawn, verdictMs: window.playground.loadToFirstVerdictMs }));
  assert.ok(await page.isVisible('#verdict'));
  // The 250 ms timer starts after navigation: a verdict before it draws the
  // page itself; the timer, when it comes first, never draws it earlier.
  if (verdictMs < 250) assert.equal(drawn.by, 'verdict', `verdict at ${verdictMs} ms`);
  if (drawn.by === 'timer') assert.ok(drawn.atMs >= 250 && drawn.atMs <= verdictMs, `drawn by the timer at ${drawn.atMs} ms, verdict at ${verdictMs} ms`);
  await context.close();

  // An engine that takes a second: the page is drawn by the timer, with its loading state.
  const slow = await newContext();
  await watchDrawing(slow);
  await slow.route('**/*.wasm', async (route) => { await new Promise((ok) => setTimeout(ok, 1500)); await route.continue(); });
  const waiting = await open(base, { context: slow });
  const early = await waiting.evaluate(() => window.drawn);
  assert.equal(early.by, 'timer');
  assert.ok(early.atMs >= 250 && early.atMs < 1000, `drawn at ${early.atMs} ms`);
  await slow.close();

  // Without the engine, the start fails and says so on a drawn page.
  const broken = await newContext();
  await broken.route('**/*.wasm', (route) => route.fulfill({ status: 404, body: 'not found' }));
  const failing = await broken.newPage();
  await failing.goto(base);
  await failing.waitForFunction(() => /could not start/.test(document.getElementById('verdict').textContent));
  assert.equal(await failing.evaluate(() => document.documentElement.className), '');
  assert.ok(await failing.isVisible('#verdict'));
  await broken.close();
});

/** What one load of the page records: the first verdict, the navigation and every request. */
const loadRecord = () => {
  const folder = new URL('.', document.baseURI).href;
  return {
    firstVerdictMs: window.playground.loadToFirstVerdictMs,
    documentMs: performance.getEntriesByType('navigation')[0].responseEnd,
    parsedMs: performance.getEntriesByType('navigation')[0].domInteractive,
    marks: performance.getEntriesByType('mark').map((m) => ({ name: m.name, atMs: Math.round(m.startTime) })),
    resources: performance.getEntriesByType('resource').map((e) => ({
      name: e.name.startsWith(folder) ? e.name.slice(folder.length) : e.name, initiator: e.initiatorType,
      startMs: Math.round(e.startTime), endMs: Math.round(e.responseEnd), bytes: e.encodedBodySize,
    })),
  };
};

/**
 * The reference pages (tests/reference/) served as the page is, beside the
 * engine they load: an empty page, and one that only compiles the engine.
 */
async function referenceServer() {
  const dir = join(out, 'reference');
  await mkdir(join(dir, 'pkg'), { recursive: true });
  for (const name of ['empty.html', 'engine.html']) await copyFile(join(here, 'reference', name), join(dir, name));
  await copyFile(join(dist, 'pkg', 'os_placement_playground_bg.wasm'), join(dir, 'pkg', 'os_placement_playground_bg.wasm'));
  const server = await serve(dir, 0, PREFIX);
  return { server, base: `http://127.0.0.1:${server.address().port}${PREFIX}` };
}

const medianOf = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

// Loads interleave the page with the two reference pages, in fresh contexts
// (no cache: every load is a first visit). The first rounds are not counted:
// they pay for the browser's own start (its first renderer, its network
// service), which a user's running browser has behind it.
const WARM_UP_ROUNDS = 2;
const ROUNDS = 15;

/** One load of a reference page, in a context of its own. */
async function loadReference(url) {
  const page = await open(url);
  const record = await page.evaluate(loadRecord);
  await page.context().close();
  return record;
}

/**
 * Loads the page and each reference page in turn, `WARM_UP_ROUNDS + ROUNDS`
 * times; the page's records and the reference pages' first-script times of
 * the counted rounds, and the page's times of the others.
 */
async function measureLoads() {
  const reference = await referenceServer();
  const loads = { runs: [], empty: [], compiled: [], warmUp: [], engineRequests: [] };
  for (let round = 0; round < WARM_UP_ROUNDS + ROUNDS; round++) {
    const page = await open();
    const run = await page.evaluate(loadRecord);
    await page.context().close();
    const empty = await loadReference(reference.base + 'empty.html');
    const engine = await loadReference(reference.base + 'engine.html');
    if (round < WARM_UP_ROUNDS) { loads.warmUp.push(Math.round(run.firstVerdictMs)); continue; }
    loads.runs.push(run);
    loads.empty.push(empty.firstVerdictMs);
    loads.compiled.push(engine.firstVerdictMs);
    loads.engineRequests.push(engine.resources.map((r) => r.name));
  }
  await new Promise((ok) => reference.server.close(ok));
  return loads;
}

test('first verdict after navigation, and the load waterfall (measured, not asserted)', async () => {
  const { runs, empty, compiled, warmUp, engineRequests } = await measureLoads();
  runs.sort((a, b) => a.firstVerdictMs - b.firstVerdictMs);
  const median = runs[runs.length >> 1];
  timings.loadToFirstVerdictMs = Math.round(median.firstVerdictMs);
  timings.loadToFirstVerdictRunsMs = runs.map((r) => Math.round(r.firstVerdictMs));
  timings.loadToFirstVerdictWarmUpMs = warmUp;
  timings.referencePagesMs = { empty: Math.round(medianOf(empty)), engineCompiled: Math.round(medianOf(compiled)) };
  timings.waterfall = { documentMs: Math.round(median.documentMs), resources: median.resources, marks: median.marks, firstVerdictMs: Math.round(median.firstVerdictMs) };
  const { empty: emptyMs, engineCompiled: compiledMs } = timings.referencePagesMs;
  console.log(`first verdict, median of ${runs.length} loads: ${timings.loadToFirstVerdictMs} ms (${timings.loadToFirstVerdictRunsMs.join(', ')}; not counted, the first ${WARM_UP_ROUNDS}: ${warmUp.join(', ')})`);
  console.log(`interleaved with it, medians: an empty page ${emptyMs} ms; the engine compiled, not called, ${compiledMs} ms; so the page's own work is ${timings.loadToFirstVerdictMs - compiledMs} ms`);
  console.log(`waterfall of the median load: document ${Math.round(median.documentMs)} ms`);
  for (const r of median.resources) console.log(`  ${String(r.startMs).padStart(5)} → ${String(r.endMs).padStart(5)} ms  ${r.name}`);
  for (const m of median.marks) console.log(`  ${String(m.atMs).padStart(5)} ms  ${m.name}`);
  // One request: the engine is all the first verdict asks for (the first
  // example, the page's start and its style are in the page), and it is
  // asked for while the HTML is parsed; what loads later (all the examples,
  // the settings form, the first look) is not needed for it.
  for (const run of runs) {
    const before = run.resources.filter((x) => x.startMs < run.firstVerdictMs);
    assert.deepEqual(before.map((r) => r.name), ['pkg/os_placement_playground_bg.wasm'], 'requests before the first verdict');
    assert.ok(before[0].startMs <= run.parsedMs, `the engine requested at ${before[0].startMs} ms, after the HTML was parsed (${Math.round(run.parsedMs)} ms)`);
  }
  // The engine page stands for the page's one request: the same file, once.
  for (const names of engineRequests) assert.deepEqual(names, ['pkg/os_placement_playground_bg.wasm'], 'requests of the engine reference page');
});

test('every example: verdict, findings, patch, diff and landing picture', async () => {
  const page = await open();
  for (const c of cases) {
    await pick(page, c.name);
    const shown = await firstDocument(page);
    check(c.name, c.expect, shown);
    const added = await page.locator('.document').first().locator('.diff .add').count();
    assert.equal(added > 0, Boolean(c.expect.patched), `${c.name}: ${added} added lines`);
    // Each violation points at a line of the object that the gutter flags.
    for (const line of await page.locator('.document').first().locator('.violations .finding').evaluateAll((b) => b.map((x) => x.dataset.line))) {
      assert.ok(await page.locator(`.editor[data-for="object"] .gutter .flag:nth-child(${line})`).count(), `${c.name}: line ${line} not flagged`);
    }
    const pools = await page.locator('.document').first().locator('.landing .pool').count();
    assert.ok(pools >= 2, `${c.name}: ${pools} pools`);
    const afterCells = shown.cells.filter((_, i) => i % 2 === 1);
    // A pod bound by spec.nodeName lands on its one node, which the pools do
    // not name: the picture cannot place it, so it is not judged here.
    const bound = /^\s*nodeName:/m.test(await page.inputValue('#object'));
    // The picture reads the settings, not the facts (see the page's note).
    const withFacts = hasFacts(c);
    if (c.expect.accepted && c.operation !== 'UPDATE' && !bound && !withFacts) {
      // Nothing mis-placed: after the policy no pool takes the pod without running it.
      assert.ok(!afterCells.includes('broken'), `${c.name}: after ${afterCells}`);
      const beforeCells = shown.cells.filter((_, i) => i % 2 === 0);
      const lands = (xs) => xs.some((s) => s === 'runs' || s === 'unknown');
      if (lands(beforeCells)) assert.ok(lands(afterCells), `${c.name}: lands nowhere ${afterCells}`);
    }
    if (!c.expect.accepted) assert.ok(afterCells.every((s) => s === 'rejected'), `${c.name}: ${afterCells}`);
    // The examples with facts turn them on; the others leave them off.
    assert.equal(await page.isChecked('#facts-on'), withFacts, c.name);
  }
  assert.deepEqual(page.jsErrors, []);
  await page.context().close();
});

test('facts: the same example without them gives the answer the policy gives without a cluster', async () => {
  const page = await open();
  for (const c of factCases) {
    await pick(page, c.name);
    check(c.name, c.expect, await firstDocument(page));
    const lookups = await page.locator('.document .lookups').first().textContent();
    for (const image of Object.keys(c.images || {})) assert.ok(lookups.includes(image), `${c.name}: ${lookups}`);
    await afterEvaluation(page, () => page.uncheck('#facts-on'));
    check(`${c.name} without facts`, c.withoutFacts, await firstDocument(page));
  }
  await page.context().close();
});

test('facts: images from the lookups, kubectl output pasted as it is, problems at their line', async () => {
  const page = await open();
  await pick(page, 'private-image-placed-by-its-index');
  // Remove the registry's answer: the lookup fails, the policy says so and,
  // unable to tell the image's OS, leaves the pod as it is.
  await afterEvaluation(page, () => page.click('#image-0-remove'));
  let shown = await firstDocument(page);
  assert.ok(shown.warnings.includes('registry.example.com/corp/billing:4.2'), shown.warnings);
  assert.deepEqual(JSON.parse(shown.patch), []);
  // Add it back from what the policy looks up, as a Windows image.
  await page.click('#images-from-lookups');
  await page.waitForSelector('#image-0-ref');
  assert.equal(await page.inputValue('#image-0-ref'), 'registry.example.com/corp/billing:4.2');
  await afterEvaluation(page, () => page.selectOption('#image-0-p0-os', 'windows'));
  await afterEvaluation(page, () => page.fill('#image-0-p0-version', '10.0.17763.6532').then(() => page.press('#image-0-p0-version', 'Tab')));
  shown = await firstDocument(page);
  assert.ok(shown.patch.includes('10.0.17763'), shown.patch);
  // A RuntimeClass only the cluster knows, pasted as kubectl prints it.
  await pick(page, 'runtimeclass-only-the-cluster-knows');
  assert.equal(JSON.parse((await firstDocument(page)).patch).length, 0);
  await setText(page, 'cluster', '');
  assert.ok(JSON.parse((await firstDocument(page)).patch).length > 0);
  const kubectl = await readFile(join(repo, 'playground', 'examples', 'cluster', 'runtimeclasses.yaml'), 'utf8');
  await setText(page, 'cluster', kubectl);
  assert.equal(JSON.parse((await firstDocument(page)).patch).length, 0);
  // A cluster text that is not facts: the problem is flagged at its line.
  await setText(page, 'cluster', 'apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n');
  assert.match(await page.textContent('#verdict'), /^Input error/);
  assert.equal(await page.locator('.editor[data-for="cluster"] .gutter .flag:nth-child(4)').count(), 1);
  // Nodes as kubectl prints them are node pools.
  const nodes = 'apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: ip-10-0-1-7.ec2.internal\n    labels: {kubernetes.io/os: linux, kubernetes.io/arch: amd64}\n  status: {nodeInfo: {operatingSystem: linux, architecture: amd64}}\n';
  await setText(page, 'cluster', kubectl);
  await page.click('#pools-block summary');
  await setText(page, 'pools', nodes);
  const pools = await page.locator('.document .landing .pool').evaluateAll((xs) => xs.map((x) => x.firstChild.textContent));
  assert.deepEqual(pools, ['ip-10-0-1-7.ec2.internal']);
  // The only node is Linux: the Windows pod runs nowhere, and the policy warns (nodeInventory: auto).
  assert.ok((await firstDocument(page)).warnings.includes('no node'), 'no warning about the nodes');
  assert.deepEqual(page.jsErrors, []);
  await page.context().close();
});

test('settings: a form generated from the declaration, and the YAML, are two views of one value', async () => {
  const page = await open();
  await pick(page, 'helm-nginx-aks-gets-linux-selector');
  await page.check('#view-form');
  // Every declared key has its field, in declaration order.
  const keys = await page.$$eval('#settings-form .field.top', (f) => f.map((x) => x.dataset.key));
  assert.deepEqual(keys, schema.map((f) => f.key));
  assert.ok(keys.includes('pinArchitecture') && keys.includes('linuxTaint'), keys.join(' '));
  // The form writes the YAML, keeping its comments.
  const written = await page.inputValue('#settings');
  await afterEvaluation(page, () => page.uncheck('#sf-mutate'));
  const text = await page.inputValue('#settings');
  assert.equal(text, written.replace('mutate: true', 'mutate: false'));
  assert.match(await page.textContent('#verdict'), /^Rejected/);
  // A key the text does not have is added; a oneOf switches shape.
  await afterEvaluation(page, () => page.check('#sf-linuxTaint-as-2'));
  assert.match(await page.inputValue('#settings'), /\nlinuxTaint:\n {2}key: ""\n {2}effect: ""\n?/);
  assert.match(await page.textContent('#settings-form .form-problem'), /linuxTaint/);
  await afterEvaluation(page, () => page.fill('#sf-linuxTaint-key', 'cattle.io/os').then(() => page.press('#sf-linuxTaint-key', 'Tab')));
  await afterEvaluation(page, () => page.fill('#sf-linuxTaint-effect', 'NoSchedule').then(() => page.press('#sf-linuxTaint-effect', 'Tab')));
  assert.equal(await page.locator('#settings-form .form-problem').count(), 0);
  // Lists: add a RuntimeClass with its required fields.
  await afterEvaluation(page, () => page.click('#sf-runtimeClasses-add'));
  await afterEvaluation(page, () => page.fill('#sf-runtimeClasses-0-name', 'windows-2022').then(() => page.press('#sf-runtimeClasses-0-name', 'Tab')));
  const settings = yaml(await page.inputValue('#settings'));
  assert.deepEqual(settings.runtimeClasses, [{ name: 'windows-2022', scheduling: {} }]);
  assert.deepEqual(settings.linuxTaint, { key: 'cattle.io/os', effect: 'NoSchedule' });
  // The YAML view edits the same value the form shows.
  await page.check('#view-yaml');
  await setText(page, 'settings', 'mutate: true\ndefaultOS: none\n');
  await page.check('#view-form');
  assert.equal(await page.isChecked('#sf-mutate'), true);
  assert.equal(await page.inputValue('#sf-defaultOS'), 'none');
  await page.context().close();
});

test('the landing picture shows the misplacement the policy fixes', async () => {
  const page = await open();
  await pick(page, 'seed-win-webserver-aks');
  const states = await page.locator('.document .landing .cell').evaluateAll((xs) => xs.map((x) => x.dataset.state));
  // AKS pools: ubuntu, azurelinux, win19, win22. Before: its beta OS selector lets
  // the ltsc2019 image onto the 2022 nodes, where it cannot run; after: the build pin.
  assert.deepEqual(states.filter((_, i) => i % 2 === 0), ['off', 'off', 'runs', 'broken']);
  assert.deepEqual(states.filter((_, i) => i % 2 === 1), ['off', 'off', 'runs', 'off']);
  await page.context().close();
});

test('invalid YAML is reported at its line and nothing is evaluated', async () => {
  const page = await open();
  await setText(page, 'object', 'apiVersion: v1\nkind: Pod\nspec:\n  containers: [\n    {name: a\n');
  assert.match(await page.textContent('#verdict'), /^Input error/);
  const error = await page.locator('.input-error .where').first().textContent();
  const line = Number(error.match(/line (\d+)/)[1]);
  assert.ok(line >= 5, error);
  assert.equal(await page.locator(`.editor[data-for="object"] .gutter .flag:nth-child(${line})`).count(), 1);
  await setText(page, 'settings', 'mutate: maybe\n');
  const settingsError = await page.locator('.input-error .where').allTextContents();
  assert.ok(settingsError.some((t) => /^settings line 1/.test(t)), settingsError.join('|'));
  await page.context().close();
});

const WORK = ['object', 'settings', 'pools', 'cluster'];
const workOf = (page) => page.evaluate((ids) => ids.map((id) => document.getElementById(id).value), WORK);

test('the workspace survives a reload, and a reset brings the first example back', async () => {
  const context = await newContext();
  const page = await open(base, { context });
  await pick(page, 'rke2-linux-taint-read-from-the-nodes');
  await setText(page, 'object', (await page.inputValue('#object')) + '# kept across reloads\n');
  await page.waitForFunction(() => (localStorage.getItem('os-placement-playground.workspace') || '').includes('kept across reloads'));
  const work = await workOf(page);
  const verdict = await page.textContent('#verdict');
  await page.reload();
  await page.waitForFunction(() => window.playground?.ready);
  assert.deepEqual(await workOf(page), work);
  assert.equal(await page.textContent('#verdict'), verdict);
  assert.equal(await page.isChecked('#facts-on'), true);
  await afterEvaluation(page, () => page.click('#reset'));
  assert.equal(await page.inputValue('#example'), cases[0].name);
  await page.reload();
  await page.waitForFunction(() => window.playground?.ready);
  assert.equal(await page.inputValue('#example'), cases[0].name);
  await context.close();
});

test('a manifest opens from the file picker and by drag and drop', async () => {
  const page = await open();
  const pod = 'apiVersion: v1\nkind: Pod\nmetadata: {name: from-a-file}\nspec:\n  containers: [{name: a, image: mcr.microsoft.com/windows/nanoserver:ltsc2022}]\n';
  const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.click('#open-file')]);
  await afterEvaluation(page, () => chooser.setFiles({ name: 'pod.yaml', mimeType: 'text/yaml', buffer: Buffer.from(pod) }));
  assert.equal(await page.inputValue('#object'), pod);
  assert.match(await page.textContent('.document .doc-title'), /from-a-file/);
  const dropped = pod.replace('from-a-file', 'dropped');
  const transfer = await page.evaluateHandle((text) => {
    const dt = new DataTransfer();
    dt.items.add(new File([text], 'dropped.yaml', { type: 'text/yaml' }));
    return dt;
  }, dropped);
  await afterEvaluation(page, () => page.dispatchEvent('#object-block', 'drop', { dataTransfer: transfer }));
  assert.equal(await page.inputValue('#object'), dropped);
  await page.context().close();
});

test('the workspace exports as one YAML file and imports back', async () => {
  const page = await open();
  await pick(page, 'private-image-placed-by-its-index');
  // Text that block scalars must keep exactly: leading spaces, no final newline.
  await setText(page, 'object', '  # indented first line\n' + (await page.inputValue('#object')).trimEnd());
  const work = await workOf(page);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
  const file = await readFile(await download.path(), 'utf8');
  assert.match(file, /^workspace: os-placement-playground\/v1$/m);
  assert.match(file, new RegExp(`^engine: "${engine.engine_build().replace(/[+.]/g, '\\$&')}"$`, 'm'));
  await page.context().close();
  // A fresh browser imports it: the same workspace and the same answer.
  const fresh = await open();
  const [chooser] = await Promise.all([fresh.waitForEvent('filechooser'), fresh.click('#import')]);
  await afterEvaluation(fresh, () => chooser.setFiles({ name: 'workspace.yaml', mimeType: 'text/yaml', buffer: Buffer.from(file) }));
  assert.deepEqual(await workOf(fresh), work);
  assert.equal(await fresh.isChecked('#facts-on'), true);
  assert.equal(await fresh.inputValue('#image-0-ref'), 'registry.example.com/corp/billing:4.2');
  assert.ok((await firstDocument(fresh)).patch.includes('windows'));
  assert.equal(await fresh.isHidden('#notice'), true, 'same engine: no notice');
  // A workspace of another engine imports with a notice; a file that is not one does not import.
  const other = file.replace(/^engine: .*$/m, 'engine: "0.0.1+v0.0.1"');
  const [again] = await Promise.all([fresh.waitForEvent('filechooser'), fresh.click('#import')]);
  await afterEvaluation(fresh, () => again.setFiles({ name: 'old.yaml', mimeType: 'text/yaml', buffer: Buffer.from(other) }));
  assert.match(await fresh.textContent('#notice'), /made with rule engine 0\.0\.1\+v0\.0\.1/);
  const [wrong] = await Promise.all([fresh.waitForEvent('filechooser'), fresh.click('#import')]);
  await wrong.setFiles({ name: 'pod.yaml', mimeType: 'text/yaml', buffer: Buffer.from('workspace: something-else\nobject: x\n') });
  await fresh.waitForFunction(() => document.getElementById('notice').textContent.startsWith('Import failed'));
  await fresh.context().close();
});

test('a share link restores the workspace and says when another engine made it', async () => {
  const context = await newContext();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  const page = await open(base, { context });
  await pick(page, 'pin-architecture-amd64-only-image');
  await setText(page, 'object', (await page.inputValue('#object')) + '# edited\n');
  await page.click('#share');
  await page.waitForFunction(() => location.hash.startsWith('#state='));
  const url = page.url();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), url);
  const work = await workOf(page);
  const verdict = await page.textContent('#verdict');
  const second = await open(url);
  assert.deepEqual(await workOf(second), work);
  assert.equal(await second.textContent('#verdict'), verdict);
  assert.equal(await second.isHidden('#notice'), true);
  // The same link made by another engine build.
  const state = await second.evaluate(async (hash) => {
    const binary = atob(hash.replace(/-/g, '+').replace(/_/g, '/'));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    const text = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'))).text();
    const s = JSON.parse(text);
    s.engine = '0.0.9+v0.0.9-1-gdeadbee';
    const packed = new Uint8Array(await new Response(new Blob([JSON.stringify(s)]).stream().pipeThrough(new CompressionStream('deflate-raw'))).arrayBuffer());
    return btoa(String.fromCharCode(...packed)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }, url.split('#state=')[1]);
  const third = await open(`${base}#state=${state}`);
  assert.match(await third.textContent('#notice'), /made with rule engine 0\.0\.9\+v0\.0\.9-1-gdeadbee; this page runs /);
  assert.deepEqual(await workOf(third), work);
  for (const p of [second, third]) await p.context().close();
  await context.close();
});

test('a short guided first look, shown once', async () => {
  const context = await newContext({ tour: true });
  const page = await open(base, { context });
  await page.waitForSelector('#tour');
  const titles = [];
  for (let i = 0; i < 4; i++) {
    titles.push(await page.textContent('#tour-title'));
    assert.equal(await page.evaluate(() => document.activeElement.id), 'tour-next');
    await page.screenshot({ path: join(out, `tour-step-${i + 1}.png`) });
    await page.keyboard.press('Enter');
  }
  assert.equal(titles.length, 4);
  assert.equal(await page.locator('#tour').count(), 0);
  await page.reload();
  await page.waitForFunction(() => window.playground?.ready);
  await page.waitForTimeout(100);
  assert.equal(await page.locator('#tour').count(), 0, 'shown again after it was finished');
  // The Guide button shows it again; Escape closes it.
  await page.click('#guide');
  await page.waitForSelector('#tour');
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('#tour').count(), 0);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'guide');
  await context.close();
});

test('every control is reachable and usable with the keyboard alone', async () => {
  const page = await open();
  await pick(page, 'private-image-placed-by-its-index');
  await page.check('#view-form');
  await page.evaluate(() => { for (const d of document.querySelectorAll('details')) d.open = true; });
  const controls = await page.evaluate(() => {
    const all = [...document.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex="0"]')];
    const visible = (e) => e.getClientRects().length > 0 && !e.closest('[hidden]') && getComputedStyle(e).visibility !== 'hidden';
    // One radio of a group is in the tab order; the arrow keys move within it.
    const counted = (e) => e.type !== 'radio' || e.checked;
    return all.filter((e) => visible(e) && counted(e) && e.type !== 'file').map((e, i) => {
      e.dataset.kb = String(i);
      return e.id || `${e.tagName.toLowerCase()}:${(e.textContent || e.getAttribute('aria-label') || '').trim().slice(0, 40)}`;
    });
  });
  assert.ok(controls.length > 40, `${controls.length} controls`);
  const reached = new Set();
  await page.evaluate(() => document.activeElement?.blur());
  for (let i = 0; i < controls.length * 2 + 20; i++) {
    await page.keyboard.press('Tab');
    const kb = await page.evaluate(() => document.activeElement?.dataset.kb);
    if (kb !== undefined) reached.add(Number(kb));
    if (reached.size === controls.length) break;
  }
  const missed = controls.filter((_, i) => !reached.has(i));
  assert.deepEqual(missed, [], `not reachable by Tab: ${missed.join(', ')}`);
  // Using them: an example from the menu, the settings view, a details block, a form control.
  await page.focus('#example');
  const next = cases[cases.findIndex((c) => c.name === 'private-image-placed-by-its-index') + 1].name;
  await afterEvaluation(page, () => page.keyboard.press('ArrowDown'));
  assert.equal(await page.inputValue('#example'), next);
  await page.focus('#view-form');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.isChecked('#view-yaml'), true);
  await page.keyboard.press('ArrowLeft');
  await page.focus('#sf-mutate');
  await afterEvaluation(page, () => page.keyboard.press('Space'));
  assert.match(await page.inputValue('#settings'), /mutate: false/);
  await page.evaluate(() => { document.getElementById('pools-block').open = false; });
  await page.focus('#pools-block summary');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.getElementById('pools-block').open), true);
  await page.focus('#images-from-lookups');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.toast');
  // A finding button moves the focus to its line.
  await pick(page, 'build-mismatch-rejected');
  await page.focus('.violations .finding');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'object');
  await page.context().close();
});

test('axe-core: no serious or critical violation, light and dark', async () => {
  const views = {
    start: async () => {},
    'facts-and-form': async (page) => {
      await pick(page, 'runtimeclass-only-the-cluster-knows');
      await page.check('#view-form');
      await page.evaluate(() => { for (const d of document.querySelectorAll('details')) d.open = true; });
    },
    'input-error-and-notice': async (page) => {
      await setText(page, 'settings', 'mutate: maybe\nwindowsTaint: {key: os}\n');
      await page.check('#view-form');
      await page.evaluate(() => { document.getElementById('notice').hidden = false; document.getElementById('notice').textContent = 'This link was made with rule engine 0.0.1.'; });
    },
    tour: async (page) => { await page.click('#guide'); await page.waitForSelector('#tour'); },
  };
  const serious = [];
  for (const scheme of ['light', 'dark']) {
    for (const [name, prepare] of Object.entries(views)) {
      const page = await open(base, { scheme });
      await prepare(page);
      await page.addScriptTag({ content: axeSource });
      const violations = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations
        .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) })));
      axeResults[`${scheme}/${name}`] = violations;
      for (const v of violations) if (v.impact === 'serious' || v.impact === 'critical') serious.push(`${scheme}/${name}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.join(' | ')}`);
      await page.context().close();
    }
  }
  const counts = Object.fromEntries(Object.entries(axeResults).map(([k, v]) => [k, v.map((x) => `${x.id}:${x.impact}`)]));
  timings.axe = counts;
  assert.deepEqual(serious, []);
});

test('re-evaluation on a keystroke is measured', async () => {
  const page = await open();
  await pick(page, 'seed-pod-selector-toleration-gets-build-pin');
  const samples = [];
  await page.focus('#object');
  for (let i = 0; i < 10; i++) {
    await afterEvaluation(page, async () => { await page.keyboard.press('End'); await page.keyboard.type(' '); });
    samples.push(await page.evaluate(() => window.playground.lastEvaluationMs));
  }
  samples.sort((a, b) => a - b);
  timings.keystrokeEvaluationMedianMs = samples[5];
  timings.keystrokeEvaluationMaxMs = samples[9];
  await page.context().close();
});

test('screenshots: light and dark, laptop and phone, and the new views', async () => {
  for (const scheme of ['light', 'dark']) {
    for (const [name, viewport] of [['laptop', LAPTOP], ['phone', PHONE]]) {
      const page = await open(base, { viewport, scheme });
      await pick(page, 'seed-win-webserver-eks');
      await page.screenshot({ path: join(out, `playground-${scheme}-${name}.png`), fullPage: true });
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= viewport.width, `${scheme} ${name}: page is ${width}px wide`);
      await pick(page, 'private-image-placed-by-its-index');
      await page.check('#view-form');
      await page.evaluate(() => { document.getElementById('facts-block').open = true; });
      await page.screenshot({ path: join(out, `facts-and-form-${scheme}-${name}.png`), fullPage: true });
      const wide = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(wide <= viewport.width, `${scheme} ${name} with the form and facts: page is ${wide}px wide`);
      await page.context().close();
    }
  }
});

test('no request left 127.0.0.1, and every request was found', () => {
  assert.deepEqual(outside, []);
  assert.deepEqual(failed, []);
});
