// Keeping the work: the workspace (every editor, the choices, the facts)
// saved in the browser and restored on reload, carried by share links and
// exported or imported as one YAML file. Links and files carry the build of
// the rule engine that made them, so the page can say when it differs. And
// the facts text the workspace's facts make for the rule core.

const STORAGE_KEY = 'os-placement-playground.workspace';
const MARKER = 'os-placement-playground/v1';
const TEXT_KEYS = ['object', 'oldObject', 'settings', 'pools'];

/** Saves the workspace in the browser (quietly does nothing when storage is refused). */
export function save(state) {
  try { localStorage.setItem(STORAGE_KEY, JSON.stringify(state)); } catch { /* private mode, quota */ }
}

/** The saved workspace, or null. */
export function saved() {
  try {
    const state = JSON.parse(localStorage.getItem(STORAGE_KEY) || 'null');
    return isWorkspace(state) ? state : null;
  } catch { return null; }
}

/** Forgets the saved workspace. */
export function forget() {
  try { localStorage.removeItem(STORAGE_KEY); } catch { /* nothing saved */ }
}

function isWorkspace(state) {
  return state !== null && typeof state === 'object' && typeof state.object === 'string';
}

/** A workspace with every field, from whatever an older link or file held. */
export function normalise(state) {
  const facts = state.facts && typeof state.facts === 'object' ? state.facts : {};
  const out = {
    engine: typeof state.engine === 'string' ? state.engine : null,
    operation: typeof state.operation === 'string' ? state.operation : 'CREATE',
    example: typeof state.example === 'string' ? state.example : '',
    preset: typeof state.preset === 'string' ? state.preset : '',
    facts: {
      enabled: facts.enabled === true,
      poolsAreNodes: facts.poolsAreNodes !== false,
      images: Array.isArray(facts.images) ? facts.images.filter(validImage) : [],
      cluster: typeof facts.cluster === 'string' ? facts.cluster : '',
    },
  };
  for (const key of TEXT_KEYS) out[key] = typeof state[key] === 'string' ? state[key] : '';
  return out;
}

function validImage(i) {
  return i && typeof i.image === 'string' && Array.isArray(i.platforms)
    && i.platforms.every((p) => p && typeof p.os === 'string');
}

// ---- share links --------------------------------------------------------------

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

/** The page's address with the workspace in its fragment. */
export async function shareUrl(state) {
  const url = new URL(location.href);
  url.hash = 'state=' + await compress(JSON.stringify(state));
  return url.href;
}

/** The workspace a share link carries, or null. */
export async function fromUrl() {
  const match = location.hash.match(/^#state=([A-Za-z0-9_-]+)$/);
  if (!match) return null;
  try {
    const state = JSON.parse(await decompress(match[1]));
    return isWorkspace(state) ? normalise(state) : null;
  } catch { return null; }
}

/** Drops the fragment once the workspace moved on from the link. */
export function leaveLink() {
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);
}

// ---- the workspace as one YAML file ----------------------------------------------

/** A YAML block scalar (or a quoted string) that reads back as `text`. */
export function yamlText(text, indent) {
  if (text === '') return '""';
  // Block scalars cannot hold some characters, nor lines with a carriage return.
  if (/[\u0000-\u0008\u000b-\u001f\u007f\ufeff\r]/.test(text)) return JSON.stringify(text);
  const trailing = text.match(/\n*$/)[0].length;
  const chomp = trailing === 0 ? '-' : trailing === 1 ? '' : '+';
  const lead = /^[ \n]/.test(text) ? String(indent.length) : '';
  const body = text.replace(/\n$/, '').split('\n').map((l) => (l ? indent + l : '')).join('\n');
  return `|${lead}${chomp}\n${body}`;
}

/** The workspace as a YAML file. */
export function toYaml(state) {
  const lines = [
    '# An os-placement playground workspace: open it with "Import workspace".',
    `workspace: ${MARKER}`,
    `engine: ${JSON.stringify(state.engine || '')}`,
    `operation: ${JSON.stringify(state.operation)}`,
    `example: ${JSON.stringify(state.example)}`,
    `preset: ${JSON.stringify(state.preset)}`,
  ];
  for (const key of TEXT_KEYS) lines.push(`${key}: ${yamlText(state[key], '  ')}`);
  lines.push('facts:',
    `  enabled: ${state.facts.enabled}`,
    `  poolsAreNodes: ${state.facts.poolsAreNodes}`,
    `  images: ${JSON.stringify(state.facts.images)}`,
    `  cluster: ${yamlText(state.facts.cluster, '    ')}`);
  return lines.join('\n') + '\n';
}

/** The workspace of a YAML file read as JSON (by the rule core's reader), or an error message. */
export function fromValue(value) {
  if (!value || typeof value !== 'object' || value.workspace !== MARKER) {
    return { error: `not a playground workspace (it starts with workspace: ${MARKER})` };
  }
  if (!isWorkspace(value)) return { error: 'the workspace has no object text' };
  return { state: normalise(value) };
}

/** Whether a text is a workspace file rather than a manifest. */
export function looksLikeWorkspace(text) {
  return /^workspace:\s*os-placement-playground\//m.test(text);
}

// ---- the facts text ----------------------------------------------------------------

/**
 * The facts text: the cluster's objects as written, then the images as one
 * more document (so lines of the cluster text keep their numbers).
 */
export function factsText(clusterText, images) {
  const parts = [];
  if (clusterText.trim()) parts.push(clusterText.replace(/\n*$/, '\n'));
  if (Object.keys(images).length) parts.push(JSON.stringify({ images }) + '\n');
  return parts.join('---\n');
}

/** Where a facts problem at `line` is: in the cluster text, or among the images. */
export function placeFactsLine(clusterText, line, column) {
  const clusterLines = clusterText.trim() ? clusterText.replace(/\n*$/, '\n').split('\n').length - 1 : 0;
  return line <= clusterLines ? { id: 'cluster', line, column } : null;
}
