// The two DOM helpers every module of the page uses. They keep no state:
// the page's bundle carries them, and the modules loaded after the first
// verdict (facts.js, settings-form.js, tour.js) import this file on their
// own, so a second copy of them is harmless.

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
