// Small DOM helpers shared by the page's modules.

/** The element of that id. */
export const $ = (id) => document.getElementById(id);

/** An element with attributes (`class`, `on<event>` handlers, others as is) and children. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v === true) e.setAttribute(k, '');
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

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
