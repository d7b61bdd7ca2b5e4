// Writes <dist>/examples.json: the example cases (examples/cases.yaml and the
// playground's cases with facts), the platform presets with their node
// pools as the page shows them, and the text of every file they name; and
// puts into <dist>/index.html what the first verdict needs (the cases, the
// presets, the first case's files; the page's start and its style), so it
// waits on no request but the engine. The YAML is read by the built engine
// itself (the door's reader), so the page and this file read it alike.
//
// Usage: node playground/tools/bundle.mjs <repo root> <dist>
import { readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [repo, dist] = process.argv.slice(2);
if (!repo || !dist) {
  console.error('usage: node bundle.mjs <repo root> <dist>');
  process.exit(2);
}

const { initSync, yaml_to_json } = await import(pathToFileURL(resolve(dist, 'pkg', 'os_placement_playground.js')).href);
initSync({ module: await readFile(join(dist, 'pkg', 'os_placement_playground_bg.wasm')) });

async function yaml(path) {
  const read = JSON.parse(yaml_to_json(await readFile(join(repo, path), 'utf8')));
  if (read.error) throw new Error(`${path} line ${read.error.line}: ${read.error.message}`);
  return read.ok;
}

/** Node pools as YAML, as the pools editor shows them: a preset's pools, or its poolsFiles as they are. */
async function poolsText(preset) {
  if (preset.poolsFiles) {
    const texts = await Promise.all(preset.poolsFiles.map((path) => readFile(join(repo, path), 'utf8')));
    return texts.join('---\n');
  }
  const lines = ['# Node pools of this platform: edit them to match your cluster,', '# or paste `kubectl get nodes,nodepools,ec2nodeclasses -o yaml` output instead.'];
  for (const p of preset.pools) {
    lines.push(`- name: ${p.name}`, `  os: ${p.os}`);
    if (p.build) lines.push(`  build: "${p.build}"`);
    const labels = Object.entries(p.labels || {});
    if (labels.length) lines.push('  labels:', ...labels.map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`));
    if ((p.taints || []).length) lines.push('  taints:', ...p.taints.map((t) => `  - {key: ${t.key}, value: ${JSON.stringify(t.value || '')}, effect: ${t.effect}}`));
  }
  return lines.join('\n') + '\n';
}

const presets = await Promise.all((await yaml('playground/web/presets.yaml')).presets.map(async (p) => ({ ...p, poolsText: await poolsText(p) })));
// A case with a cluster is evaluated with it as the facts (the pools only draw the picture).
const plain = (await yaml('examples/cases.yaml')).map((c) => (c.cluster ? { ...c, facts: true, poolsAreNodes: false } : c));
const withFacts = (await yaml('playground/examples/cases.yaml')).map((c) => ({ ...c, facts: true }));
const cases = [...plain, ...withFacts];

const names = new Set();
for (const c of cases) {
  if (names.has(c.name)) throw new Error(`two cases named ${c.name}`);
  names.add(c.name);
  if (c.preset && !presets.some((p) => p.id === c.preset)) throw new Error(`${c.name}: no preset ${c.preset}`);
}

const paths = new Set(presets.map((p) => p.settings));
for (const c of cases) for (const key of ['manifest', 'settings', 'oldManifest', 'cluster']) if (c[key]) paths.add(c[key]);
const files = {};
for (const path of [...paths].sort()) files[path] = await readFile(join(repo, path), 'utf8');

const out = join(dist, 'examples.json');
await writeFile(out, JSON.stringify({ cases, presets, files }));
console.log(`${out}: ${cases.length} cases, ${presets.length} presets, ${paths.size} files`);

// The page itself carries what the first verdict needs: every case and
// preset (the menus), and the files of the first case and of the presets;
// of the cases and presets only what the page reads (not the tests'
// expectations, nor the pools the presets' pool texts were made from), so
// the HTML the browser parses before the first verdict stays small.
const PAGE_READS = {
  case: ['name', 'manifest', 'settings', 'oldManifest', 'operation', 'preset', 'facts', 'poolsAreNodes', 'cluster', 'images'],
  preset: ['id', 'name', 'settings', 'forSettings', 'poolsText'],
};
const only = (keys) => (x) => Object.fromEntries(keys.filter((k) => k in x).map((k) => [k, x[k]]));
const first = cases[0];
const firstPaths = [first.manifest, first.settings, first.oldManifest, first.cluster, ...presets.map((p) => p.settings)].filter(Boolean);
const firstFiles = Object.fromEntries(firstPaths.map((p) => [p, files[p]]));
const inline = JSON.stringify({ cases: cases.map(only(PAGE_READS.case)), presets: presets.map(only(PAGE_READS.preset)), files: firstFiles })
  .replace(/</g, '\\u003c');
const page = join(dist, 'index.html');
let html = await readFile(page, 'utf8');
const slot = /(<script type="application\/json" id="examples-first">)[^<]*(<\/script>)/;
if (!slot.test(html)) {
  throw new Error('web/index.html has no <script type="application/json" id="examples-first">…</script>: the build writes the cases, the presets and the first example into it; put that element back in the head, before the page\'s start');
}
html = html.replace(slot, (_, open, close) => `${open}${inline}${close}`);
console.log(`${page}: the first example inlined (${inline.length} bytes)`);
await writeFile(page, await withTheStartInline(html));

/**
 * The page with its start in it: app.js and the modules it imports (view.js,
 * workspace.js, dom.js, the engine's wasm-bindgen glue) bundled by esbuild
 * into one inline module, and the style sheet inline. The engine is then the
 * only request the first verdict waits on: each request costs the renderer's
 * main thread, which the first verdict also needs (measured in
 * playground/README.md). The modules loaded after the first verdict stay
 * files of their own.
 */
async function withTheStartInline(text) {
  const esbuild = createRequire(join(repo, 'playground', 'package.json'))('esbuild');
  const bundled = await esbuild.build({
    entryPoints: [join(dist, 'app.js')], bundle: true, format: 'esm', write: false,
    external: ['./facts.js', './settings-form.js', './tour.js'],
    legalComments: 'none', logLevel: 'warning',
  });
  const script = bundled.outputFiles[0].text;
  const style = await readFile(join(dist, 'style.css'), 'utf8');
  // Text that would end or confuse an inline element in the HTML parser.
  const unsafe = script.match(/<\/script|<!--|<script/i);
  if (unsafe) {
    throw new Error(`the page's start holds "${unsafe[0]}", which would break out of an inline script: write it as "<\\/script", "<\\!--" or "<\\script" in the string that holds it (web/*.js or the wasm-bindgen glue)`);
  }
  if (/<\/style/i.test(style)) throw new Error('web/style.css holds "</style", which would end the inline style: write it as "<\\/style"');
  const swaps = [
    ['<script type="module" src="app.js" blocking="render"></script>',
      // Chromium's compile hint must open the script.
      `<script type="module" blocking="render">//# allFunctionsCalledOnLoad\n${script}</script>`],
    ['<link rel="stylesheet" href="style.css">', `<style>\n${style}</style>`],
  ];
  for (const [from, to] of swaps) {
    if (!text.includes(from)) throw new Error(`web/index.html has no ${from}: the build puts the start and the style in its place; keep that tag as it is`);
    text = text.replace(from, () => to);
  }
  for (const file of ['app.js', 'view.js', 'workspace.js', 'style.css']) await rm(join(dist, file));
  console.log(`index.html: the start inline (${script.length} bytes of script, ${style.length} of style)`);
  return text;
}
