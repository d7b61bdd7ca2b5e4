// Browser tests of the playground: the built playground/dist served on
// 127.0.0.1, driven in headless Debian chromium through playwright-core.
// Screenshots and timings go to target/playground-browser/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { serve } from './serve.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');
const dist = join(repo, 'playground', 'dist');
const out = join(repo, 'target', 'playground-browser');
const { chromium } = createRequire(join(repo, 'playground', 'package.json'))('playwright-core');
const { initSync, yaml_to_json } = await import(join(dist, 'pkg', 'os_placement_playground.js'));
initSync({ module: await readFile(join(dist, 'pkg', 'os_placement_playground_bg.wasm')) });

const yaml = (text) => JSON.parse(yaml_to_json(text)).ok;
const cases = yaml(await readFile(join(repo, 'examples', 'cases.yaml'), 'utf8'));
// The per-example tests loop over these: an empty list would check nothing.
assert.ok(Array.isArray(cases) && cases.length >= 20, `examples/cases.yaml: ${cases?.length} cases`);
const LAPTOP = { width: 1366, height: 900 };
const PHONE = { width: 390, height: 844 };

let server, browser, base;
const outside = [];
const timings = {};

before(async () => {
  await mkdir(out, { recursive: true });
  server = await serve(dist, 0);
  base = `http://127.0.0.1:${server.address().port}/`;
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
  console.log(`playground timings: ${JSON.stringify(timings)}`);
});

async function open(url = base, viewport = LAPTOP) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith('http://127.0.0.1:') && !u.startsWith('data:') && !u.startsWith('blob:')) outside.push(u);
  });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  await page.waitForFunction(() => window.playground && window.playground.evaluations > 0);
  page.jsErrors = errors;
  return page;
}

async function pick(page, name) {
  const before = await page.evaluate(() => window.playground.evaluations);
  await page.selectOption('#example', name);
  await page.waitForFunction((n) => window.playground.evaluations > n, before);
}

async function setText(page, id, text) {
  const before = await page.evaluate(() => window.playground.evaluations);
  await page.fill(`#${id}`, text);
  await page.waitForFunction((n) => window.playground.evaluations > n, before);
}

test('loads, shows a verdict and the engine version', async () => {
  const page = await open();
  const verdict = await page.textContent('#verdict');
  assert.match(verdict, /^(Accepted|Rejected)/);
  const version = (await readFile(join(repo, 'Cargo.toml'), 'utf8')).match(/^version = "(.+)"/m)[1];
  assert.equal(await page.textContent('#engine-version'), version);
  timings.loadToFirstVerdictMs = await page.evaluate(() => window.playground.loadToFirstVerdictMs);
  const options = await page.$$eval('#example option', (o) => o.map((x) => x.value).filter(Boolean));
  assert.deepEqual(options, cases.map((c) => c.name));
  assert.deepEqual(page.jsErrors, []);
  await page.context().close();
});

test('every example: verdict, findings, patch, diff and landing picture', async () => {
  const page = await open();
  for (const c of cases) {
    await pick(page, c.name);
    const doc = page.locator('.document').first();
    const verdict = await doc.locator('.doc-verdict').textContent();
    assert.equal(verdict.startsWith('Rejected'), !c.expect.accepted, `${c.name}: ${verdict}`);
    const patch = JSON.parse(await doc.locator('.patch').textContent());
    assert.equal(patch.length > 0, Boolean(c.expect.patched), `${c.name}: patch ${JSON.stringify(patch)}`);
    const added = await doc.locator('.diff .add').count();
    assert.equal(added > 0, Boolean(c.expect.patched), `${c.name}: ${added} added lines`);
    const shown = (sel) => doc.locator(`${sel} .finding`).evaluateAll((b) => b.map((x) => x.dataset.text).join('\n'));
    const violations = await shown('.violations');
    for (const s of c.expect.messageContains || []) assert.ok(violations.includes(s), `${c.name}: violations lack ${s}`);
    const warnings = await shown('.warnings');
    for (const s of c.expect.warningsContain || []) assert.ok(warnings.includes(s), `${c.name}: warnings lack ${s}`);
    // Each violation points at a line of the object that the gutter flags.
    for (const line of await doc.locator('.violations .finding').evaluateAll((b) => b.map((x) => x.dataset.line))) {
      assert.ok(await page.locator(`.editor[data-for="object"] .gutter .flag:nth-child(${line})`).count(), `${c.name}: line ${line} not flagged`);
    }
    const pools = await page.evaluate(() => document.querySelectorAll('.landing .pool').length);
    assert.ok(pools >= 3, `${c.name}: ${pools} pools`);
    const cells = await doc.locator('.landing .cell').evaluateAll((xs) => xs.map((x) => x.dataset.state || 'rejected'));
    const afterCells = cells.filter((_, i) => i % 2 === 1);
    // A pod bound by spec.nodeName lands on its one node, which the pools do
    // not name: the picture cannot place it, so it is not judged here.
    const bound = /^\s*nodeName:/m.test(await page.inputValue('#object'));
    if (c.expect.accepted && c.operation !== 'UPDATE' && !bound) {
      // Nothing mis-placed: after the policy no pool takes the pod without running it.
      assert.ok(!afterCells.includes('broken'), `${c.name}: after ${afterCells}`);
      // Nothing made worse: a pod that could land somewhere still can.
      const beforeCells = cells.filter((_, i) => i % 2 === 0);
      const lands = (xs) => xs.some((s) => s === 'runs' || s === 'unknown');
      if (lands(beforeCells)) assert.ok(lands(afterCells), `${c.name}: lands nowhere ${afterCells}`);
    }
    if (!c.expect.accepted) assert.ok(afterCells.every((s) => s === 'rejected'), `${c.name}: ${afterCells}`);
  }
  assert.deepEqual(page.jsErrors, []);
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

test('changing a setting changes the verdict', async () => {
  const page = await open();
  await pick(page, 'helm-nginx-aks-gets-linux-selector');
  assert.match(await page.textContent('#verdict'), /^Accepted with changes/);
  const settings = await page.inputValue('#settings');
  await setText(page, 'settings', settings.replace('mutate: true', 'mutate: false'));
  assert.match(await page.textContent('#verdict'), /^Rejected/);
  await page.context().close();
});

test('a share URL restores the same state', async () => {
  const page = await open();
  await pick(page, 'build-mismatch-rejected');
  await setText(page, 'object', (await page.inputValue('#object')) + '# edited\n');
  await page.waitForFunction(() => location.hash.startsWith('#state=') && window.playground.evaluations > 0);
  await page.waitForTimeout(400);
  const url = page.url();
  const state = await page.evaluate(() => ['object', 'settings', 'pools'].map((id) => document.getElementById(id).value));
  const verdict = await page.textContent('#verdict');
  const second = await open(url);
  const restored = await second.evaluate(() => ['object', 'settings', 'pools'].map((id) => document.getElementById(id).value));
  assert.deepEqual(restored, state);
  assert.equal(await second.textContent('#verdict'), verdict);
  await second.context().close();
  await page.context().close();
});

test('re-evaluation on a keystroke is measured', async () => {
  const page = await open();
  await pick(page, 'seed-pod-selector-toleration-gets-build-pin');
  const samples = [];
  await page.focus('#object');
  for (let i = 0; i < 10; i++) {
    const before = await page.evaluate(() => window.playground.evaluations);
    await page.keyboard.press('End');
    await page.keyboard.type(' ');
    await page.waitForFunction((n) => window.playground.evaluations > n, before);
    samples.push(await page.evaluate(() => window.playground.lastEvaluationMs));
  }
  samples.sort((a, b) => a - b);
  timings.keystrokeEvaluationMedianMs = samples[5];
  timings.keystrokeEvaluationMaxMs = samples[9];
  await page.context().close();
});

test('screenshots in light and dark, laptop and phone', async () => {
  for (const scheme of ['light', 'dark']) {
    for (const [name, viewport] of [['laptop', LAPTOP], ['phone', PHONE]]) {
      const page = await open(base, viewport);
      await page.emulateMedia({ colorScheme: scheme });
      await pick(page, 'seed-win-webserver-eks');
      const file = join(out, `playground-${scheme}-${name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= viewport.width, `${scheme} ${name}: page is ${width}px wide`);
      await page.context().close();
    }
  }
});

test('no request left 127.0.0.1', () => {
  assert.deepEqual(outside, []);
});
