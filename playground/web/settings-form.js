// The settings as a form, built from the one settings declaration
// (`settings_schema()`, every key with its shape, default and meaning): a
// new setting appears here without touching the page. The form and the
// YAML are two views of one value: the form reads the YAML text, and each
// change sets that one key in the text (`settings_set`), keeping the rest.
import { el } from './dom.js';

const ID = 'sf';

/** A form over the settings text; `read()` and `write(text)` give and take the YAML. */
export class SettingsForm {
  constructor({ container, schema, engine, read, write }) {
    Object.assign(this, { container, schema, engine, read, write });
    this.errors = [];
  }

  /** Builds the form from the current text, keeping the focused control. */
  render() {
    const focused = document.activeElement?.id;
    const parsed = JSON.parse(this.engine.yaml_to_json(this.read()));
    const body = [];
    if (parsed.error) {
      body.push(el('p', { class: 'form-problem', role: 'alert' },
        `The settings YAML does not read (line ${parsed.error.line}: ${parsed.error.message}): fix it in the YAML view.`));
    } else if (parsed.ok !== null && (typeof parsed.ok !== 'object' || Array.isArray(parsed.ok))) {
      body.push(el('p', { class: 'form-problem', role: 'alert' }, 'The settings are not a mapping of keys: fix them in the YAML view.'));
    } else {
      const value = parsed.ok || {};
      if (this.errors.length) body.push(this.problemList());
      for (const field of this.schema) body.push(this.topField(field, value));
    }
    this.container.replaceChildren(...body);
    if (focused) document.getElementById(focused)?.focus();
  }

  /** Marks the fields the settings problems name (`path`, e.g. `windowsTaint.effect`). */
  showErrors(errors) {
    this.errors = errors;
  }

  problemList() {
    return el('div', { class: 'form-problem', role: 'alert' }, 'The settings have problems:',
      el('ul', {}, ...this.errors.map((e) => el('li', {}, el('code', {}, e.path || 'settings'), ` ${e.message}`))));
  }

  topField(field, value) {
    const present = Object.prototype.hasOwnProperty.call(value, field.key);
    const current = present ? value[field.key] : field.default;
    const set = (next) => this.setKey(field.key, next);
    const row = el('div', { class: 'field top', 'data-key': field.key });
    row.append(this.control(field, current, [field.key], set, present ? null : 'default'));
    return row;
  }

  setKey(key, next) {
    const result = JSON.parse(this.engine.settings_set(this.read(), key, JSON.stringify(next ?? null)));
    if (result.error) return;
    this.write(result.ok);
    this.render();
  }

  /** The editor of one field: label, control, meaning, its problems. */
  control(field, value, path, set, badge = null) {
    const id = idOf(path);
    const help = field.description ? el('p', { class: 'help', id: `${id}-help` }, field.description) : null;
    const problems = this.errors.filter((e) => e.path && idOf(splitPath(e.path)) === id);
    const error = problems.length ? el('p', { class: 'field-error', id: `${id}-error` }, problems.map((e) => e.message).join('; ')) : null;
    const described = [help && `${id}-help`, error && `${id}-error`].filter(Boolean).join(' ') || undefined;
    const title = [field.key, badge ? el('span', { class: 'badge' }, badge) : null];
    const optional = !field.required && field.default === null;
    const editor = this.editor(field.shape, value, path, set, { id, described, optional, title, invalid: Boolean(error) });
    return el('div', { class: 'field' }, editor, help, error);
  }

  editor(shape, value, path, set, opts) {
    switch (shape.type) {
      case 'boolean': return this.checkbox(value, set, opts);
      case 'enum': return this.select(shape.values, value, set, opts);
      case 'string': return this.input('text', value, set, { ...opts, placeholder: shape.example });
      case 'integer': return this.input('number', value, set, opts);
      case 'map': return this.map(value, path, set, opts);
      case 'list': return this.list(shape.item, value, path, set, opts);
      case 'object': return this.object(shape.fields, value, path, set, opts);
      case 'oneOf': return this.oneOf(shape.options, value, path, set, opts);
      default: return el('span', { class: 'label' }, ...opts.title);
    }
  }

  checkbox(value, set, { id, described, title, invalid }) {
    const box = el('input', { type: 'checkbox', id, 'aria-describedby': described, 'aria-invalid': invalid ? 'true' : undefined, onchange: (e) => set(e.target.checked) });
    box.checked = value === true;
    return el('label', { class: 'check', for: id }, box, ' ', ...title);
  }

  select(values, value, set, { id, described, title, optional, invalid }) {
    const options = [optional ? el('option', { value: '' }, '(not set)') : null, ...values.map((v) => el('option', { value: v }, v))];
    const select = el('select', { id, 'aria-describedby': described, 'aria-invalid': invalid ? 'true' : undefined, onchange: (e) => set(e.target.value === '' ? undefined : e.target.value) }, ...options);
    select.value = typeof value === 'string' ? value : '';
    if (value === false && values.includes('off')) select.value = 'off';
    return el('div', { class: 'labelled' }, el('label', { for: id }, ...title), select);
  }

  input(type, value, set, { id, described, title, optional, placeholder, invalid }) {
    const commit = (e) => {
      const text = e.target.value;
      if (text === '' && optional) return set(undefined);
      set(type === 'number' ? Number(text) : text);
    };
    const input = el('input', { type, id, 'aria-describedby': described, 'aria-invalid': invalid ? 'true' : undefined, placeholder: placeholder || undefined, autocomplete: 'off', spellcheck: 'false', onchange: commit });
    input.value = value === null || value === undefined ? '' : String(value);
    return el('div', { class: 'labelled' }, el('label', { for: id }, ...title), input);
  }

  map(value, path, set, { id, title }) {
    const entries = Object.entries(value && typeof value === 'object' ? value : {});
    const update = (list) => set(Object.fromEntries(list.filter(([k]) => k !== '' || list.length === 0)));
    const rows = entries.map(([k, v], i) => {
      const change = (which) => (e) => { const next = entries.map((x) => [...x]); next[i][which] = e.target.value; update(next); };
      return el('div', { class: 'map-row' },
        el('input', { id: `${id}-${i}-key`, 'aria-label': `${path.join('.')} key ${i + 1}`, autocomplete: 'off', spellcheck: 'false', onchange: change(0), value: k }),
        el('input', { id: `${id}-${i}-value`, 'aria-label': `${path.join('.')} value ${i + 1}`, autocomplete: 'off', spellcheck: 'false', onchange: change(1), value: String(v ?? '') }),
        el('button', { type: 'button', class: 'small', id: `${id}-${i}-remove`, 'aria-label': `Remove ${path.join('.')} entry ${i + 1}`, onclick: () => update(entries.filter((_, j) => j !== i)) }, 'Remove'));
    });
    const add = el('button', { type: 'button', class: 'small', id: `${id}-add`, onclick: () => this.addMapEntry(entries, set, `${id}-${entries.length}-key`) }, 'Add entry');
    return el('fieldset', { class: 'nested', id }, el('legend', {}, ...title), ...rows, add);
  }

  addMapEntry(entries, set, focus) {
    let key = 'key';
    for (let n = 2; entries.some(([k]) => k === key); n++) key = `key${n}`;
    set(Object.fromEntries([...entries, [key, '']]));
    document.getElementById(focus)?.focus();
  }

  list(item, value, path, set, { id, title }) {
    const items = Array.isArray(value) ? value : [];
    const rows = items.map((v, i) => {
      const itemPath = [...path, i];
      const setItem = (next) => { const copy = [...items]; copy[i] = next; set(copy); };
      const remove = el('button', { type: 'button', class: 'small', id: `${idOf(itemPath)}-remove`, 'aria-label': `Remove ${path.join('.')} item ${i + 1}`, onclick: () => { set(items.filter((_, j) => j !== i)); document.getElementById(`${id}-add`)?.focus(); } }, 'Remove');
      const label = [`${path[path.length - 1]} #${i + 1}`];
      const editor = this.editor(item, v, itemPath, setItem, { id: idOf(itemPath), title: label, optional: false });
      return el('div', { class: 'list-item' }, editor, remove);
    });
    const add = el('button', { type: 'button', class: 'small', id: `${id}-add`, onclick: () => {
      set([...items, initial(item)]);
      const added = document.getElementById(idOf([...path, items.length]));
      (added?.matches('input, select') ? added : added?.querySelector('input, select'))?.focus();
    } }, 'Add');
    return el('fieldset', { class: 'nested', id }, el('legend', {}, ...title), ...rows, add);
  }

  object(fields, value, path, set, { id, title, bare }) {
    const current = value && typeof value === 'object' && !Array.isArray(value) ? value : {};
    const children = fields.map((field) => {
      const setField = (next) => {
        const copy = { ...current };
        if (next === undefined) delete copy[field.key]; else copy[field.key] = next;
        set(copy);
      };
      return this.control(field, current[field.key] ?? field.default, [...path, field.key], setField);
    });
    if (bare) return el('div', { class: 'nested-fields' }, ...children);
    return el('fieldset', { class: 'nested', id }, el('legend', {}, ...title), ...children);
  }

  oneOf(options, value, path, set, { id, described, title }) {
    const chosen = Math.max(0, options.findIndex((o) => matches(o, value)));
    const radios = options.map((option, i) => {
      const radio = el('input', { type: 'radio', name: id, id: `${id}-as-${i}`, value: String(i), onchange: () => set(initial(option)) });
      radio.checked = i === chosen;
      return el('label', { class: 'check', for: `${id}-as-${i}` }, radio, ' ', optionLabel(option));
    });
    const group = el('fieldset', { class: 'choice', id, 'aria-describedby': described }, el('legend', {}, ...title), ...radios);
    const picked = options[chosen];
    if (picked && !['null', 'literal'].includes(picked.type)) {
      // The chosen shape's fields, under the same path (`windowsTaint.effect`).
      group.append(this.editor(picked, value, path, set, { id: `${id}-value`, title: [optionLabel(picked)], optional: false, bare: true }));
    }
    return group;
  }
}

function optionLabel(option) {
  if (option.type === 'null') return 'none (null)';
  if (option.type === 'literal') return option.value;
  if (option.type === 'object') return `set: ${option.fields.map((f) => f.key).join(', ')}`;
  return option.type;
}

function matches(option, value) {
  switch (option.type) {
    case 'null': return value === null || value === undefined;
    case 'literal': return value === option.value;
    case 'object': return value !== null && typeof value === 'object' && !Array.isArray(value);
    case 'list': return Array.isArray(value);
    case 'string': return typeof value === 'string';
    case 'boolean': return typeof value === 'boolean';
    case 'integer': return Number.isInteger(value);
    default: return false;
  }
}

/** What a new item, or a newly chosen option, starts as. */
export function initial(shape) {
  switch (shape.type) {
    case 'boolean': return false;
    case 'string': return '';
    case 'integer': return 0;
    case 'enum': return shape.values[0];
    case 'list': return [];
    case 'map': return {};
    case 'literal': return shape.value;
    case 'null': return null;
    case 'oneOf': return initial(shape.options[0]);
    case 'object': {
      const value = {};
      for (const f of shape.fields) {
        if (f.required) value[f.key] = initial(f.shape);
        else if (f.default !== null && !isEmpty(f.default)) value[f.key] = f.default;
      }
      return value;
    }
    default: return null;
  }
}

function isEmpty(v) {
  return (Array.isArray(v) && v.length === 0) || (v && typeof v === 'object' && Object.keys(v).length === 0) || v === '';
}

/** A settings path (`runtimeClasses[0].scheduling.nodeSelector`) as its parts. */
function splitPath(path) {
  return path.replace(/\[(\d+)\]/g, '.$1').split('.').filter(Boolean);
}

function idOf(path) {
  return [ID, ...path.map((p) => String(p).replace(/[^A-Za-z0-9_-]/g, '_'))].join('-');
}
