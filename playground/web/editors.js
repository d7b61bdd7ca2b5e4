// The text editors: a textarea with a line-number gutter that flags the
// lines findings point at, jumping to a line, and opening files into them.
import { $ } from './dom.js';

/** The editors whose lines findings can point at. */
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
