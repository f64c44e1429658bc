// dom.js -- building elements without innerHTML: user text is always a
// text node, so nothing a user typed can become markup or script.

// h('button.primary', {onclick, 'aria-label': 'x'}, 'text', child, [kids])
export function h(tag, attrs, ...kids) {
  const [name, ...classes] = tag.split('.');
  const el = document.createElement(name || 'div');
  if (classes.length) el.className = classes.join(' ');
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    kids.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className += (el.className ? ' ' : '') + v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled' || k === 'hidden')
      el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, kids);
  return el;
}

// Appends kids as h() does: null, undefined and false are left out (the
// DOM's own append would write them as text), arrays are flattened.
export function append(el, kids) {
  for (const k of kids) {
    if (k === null || k === undefined || k === false) continue;
    if (Array.isArray(k)) append(el, k);
    else el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
}

export function clear(el, ...kids) {
  el.replaceChildren();
  append(el, kids);
  return el;
}

export const $ = (sel, root = document) => root.querySelector(sel);

// A toast in the corner; kind 'reminder' or 'error'. Gone after ms (0: stays
// until dismissed).
export function toast(text, { kind = '', ms = 6000, action } = {}) {
  const box = document.getElementById('toasts');
  const t = h('div.toast', { class: kind, role: kind === 'error' ? 'alert' : 'status' },
    h('span', text),
    action ? h('button', { onclick: () => { action.run(); t.remove(); } }, action.label) : null,
    h('button', { 'aria-label': 'Dismiss', onclick: () => t.remove() }, '×'));
  box.append(t);
  if (ms) setTimeout(() => t.remove(), ms);
  return t;
}

// A modal <dialog> with a title; returns {dlg, body, close}. Esc closes.
export function modal(title, build) {
  const body = h('div');
  const dlg = h('dialog', { 'aria-label': title }, h('h2', title), body);
  document.body.append(dlg);
  const close = () => { dlg.close(); dlg.remove(); };
  dlg.addEventListener('close', () => dlg.remove());
  build(body, close);
  dlg.showModal();
  return { dlg, body, close };
}

export function debounce(fn, ms) {
  let t;
  return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
}
