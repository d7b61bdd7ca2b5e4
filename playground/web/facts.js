// The image platforms editor of the facts: what a registry would answer for
// each image (os, architecture, os.version). With the cluster's objects (as
// `kubectl get runtimeclasses,nodes -o yaml` prints them) they reach the rule
// core as a facts file (workspace.js `factsText`), read by the same reader as
// the CLI's `--facts`.
import { $, el } from './dom.js';

const OS = ['linux', 'windows'];
const ARCHITECTURES = ['amd64', 'arm64', 'arm', '386', 'ppc64le', 's390x', 'riscv64'];

/** The image platforms editor: a list of `{image, platforms: [{os, architecture, osVersion}]}`. */
export class ImagesEditor {
  constructor({ container, onChange }) {
    Object.assign(this, { container, onChange });
    this.images = [];
  }

  /** Replaces the list (from an example, a link or an import). */
  set(images) {
    this.images = structuredClone(images || []);
    this.render();
  }

  /** Adds each reference not listed yet, with one platform to fill in. */
  addReferences(references) {
    const known = new Set(this.images.map((i) => i.image));
    const fresh = references.filter((r) => !known.has(r));
    for (const image of fresh) this.images.push({ image, platforms: [{ os: 'linux', architecture: 'amd64' }] });
    this.changed(fresh.length ? `image-${this.images.length - fresh.length}-ref` : null);
    return fresh.length;
  }

  changed(focus = null) {
    this.render();
    this.onChange();
    if (focus) $(focus)?.focus();
  }

  render() {
    const rows = this.images.map((image, i) => this.imageBlock(image, i));
    const add = el('button', { type: 'button', class: 'small', id: 'image-add', onclick: () => {
      this.images.push({ image: '', platforms: [{ os: 'linux', architecture: 'amd64' }] });
      this.changed(`image-${this.images.length - 1}-ref`);
    } }, 'Add image');
    const empty = this.images.length ? null : el('p', { class: 'help' }, 'No image listed: every image lookup fails, as with a registry that does not answer.');
    this.container.replaceChildren(empty || '', ...rows, add);
  }

  imageBlock(image, i) {
    const id = `image-${i}`;
    const ref = el('input', { id: `${id}-ref`, autocomplete: 'off', spellcheck: 'false', placeholder: 'registry.example.com/team/app:1.0', value: image.image,
      onchange: (e) => { image.image = e.target.value.trim(); this.changed(); } });
    const platforms = image.platforms.map((p, j) => this.platformRow(image, p, `${id}-p${j}`, j));
    const addPlatform = el('button', { type: 'button', class: 'small', id: `${id}-add-platform`, onclick: () => {
      image.platforms.push({ os: 'windows', architecture: 'amd64', osVersion: '10.0.20348' });
      this.changed(`${id}-p${image.platforms.length - 1}-os`);
    } }, 'Add platform');
    const remove = el('button', { type: 'button', class: 'small', id: `${id}-remove`, 'aria-label': `Remove image ${image.image || i + 1}`, onclick: () => {
      this.images.splice(i, 1);
      this.changed('image-add');
    } }, 'Remove image');
    return el('fieldset', { class: 'image' }, el('legend', {}, `Image ${i + 1}`),
      el('div', { class: 'labelled' }, el('label', { for: `${id}-ref` }, 'Reference, as the pod writes it'), ref),
      el('table', { class: 'platforms' },
        el('caption', { class: 'visually-hidden' }, `Platforms of image ${i + 1}`),
        el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'os'), el('th', { scope: 'col' }, 'architecture'), el('th', { scope: 'col' }, 'os.version'), el('th', { scope: 'col' }, el('span', { class: 'visually-hidden' }, 'Actions')))),
        el('tbody', {}, ...platforms)),
      el('div', { class: 'row-actions' }, addPlatform, remove));
  }

  platformRow(image, platform, id, j) {
    const set = (key) => (e) => {
      const v = e.target.value.trim();
      if (v) platform[key] = v; else delete platform[key];
      this.changed();
    };
    const os = el('select', { id: `${id}-os`, 'aria-label': `os of platform ${j + 1}`, onchange: set('os') }, ...OS.map((o) => el('option', { value: o }, o)));
    os.value = platform.os;
    const arch = el('input', { id: `${id}-arch`, list: 'architectures', 'aria-label': `architecture of platform ${j + 1}`, autocomplete: 'off', spellcheck: 'false', value: platform.architecture || '', onchange: set('architecture') });
    const version = el('input', { id: `${id}-version`, 'aria-label': `os.version of platform ${j + 1}`, placeholder: platform.os === 'windows' ? '10.0.20348.2700' : '', autocomplete: 'off', spellcheck: 'false', value: platform.osVersion || '', onchange: set('osVersion') });
    const remove = el('button', { type: 'button', class: 'small', 'aria-label': `Remove platform ${j + 1}`, onclick: () => {
      image.platforms.splice(j, 1);
      this.changed(`image-add`);
    } }, 'Remove');
    return el('tr', {}, el('td', {}, os), el('td', {}, arch), el('td', {}, version), el('td', {}, remove));
  }

  /** The `images:` facts: each reference with its platforms. */
  facts() {
    const images = {};
    for (const { image, platforms } of this.images) {
      if (image) images[image] = { platforms: platforms.map((p) => ({ ...p })) };
    }
    return images;
  }
}

/** The architectures offered as suggestions. */
export function architectureList() {
  return el('datalist', { id: 'architectures' }, ...ARCHITECTURES.map((a) => el('option', { value: a })));
}
