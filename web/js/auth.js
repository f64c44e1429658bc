// auth.js -- sign in and sign up.
import { h } from './dom.js';
import { post } from './api.js';
import { state, navigate } from './state.js';

function field(label, attrs) {
  const id = 'f-' + attrs.name;
  return [h('label', { for: id }, label), h('input', { id, required: true, ...attrs })];
}

function form(main, title, fields, submit, footer) {
  const err = h('p.error', { role: 'alert' });
  const btn = h('button.primary', { type: 'submit' }, title);
  const f = h('form', {
    onsubmit: async e => {
      e.preventDefault();
      err.textContent = '';
      btn.disabled = true;
      try { await submit(Object.fromEntries(new FormData(f))); }
      catch (x) {
        err.textContent = x.status === 429 ? `Too many attempts; try again in ${x.retryAfter || 'a few'} seconds.` : x.message;
      } finally { btn.disabled = false; }
    },
  }, fields, h('p', btn), err);
  main.append(h('section.narrow.card', h('h1', title), f, footer));
  f.querySelector('input').focus();
}

async function startSession(email, password, params) {
  const s = await post('/v1/sessions', { email, password }, { auth: false });
  const next = params.get('next');
  document.dispatchEvent(new CustomEvent('chime:signedin', {
    detail: { session: s, next: next && next.startsWith('/') && !next.startsWith('//') ? next : '/calendar' },
  }));
}

export function signin(main, _p, params) {
  if (state.me) return navigate('/calendar', { replace: true });
  form(main, 'Sign in', [
    field('Email', { name: 'email', type: 'email', autocomplete: 'username' }),
    field('Password', { name: 'password', type: 'password', autocomplete: 'current-password' }),
  ], v => startSession(v.email, v.password, params),
  h('p', 'No account? ', h('a', { href: '/signup', 'data-link': '' }, 'Sign up')));
}

export function signup(main, _p, params) {
  if (state.me) return navigate('/calendar', { replace: true });
  form(main, 'Sign up', [
    field('Name', { name: 'name', autocomplete: 'name' }),
    field('Email', { name: 'email', type: 'email', autocomplete: 'username' }),
    field('Password', { name: 'password', type: 'password', autocomplete: 'new-password', minlength: 8 }),
  ], async v => {
    await post('/v1/users', v, { auth: false });
    await startSession(v.email, v.password, params);
  }, h('p', 'Have an account? ', h('a', { href: '/signin', 'data-link': '' }, 'Sign in')));
}
