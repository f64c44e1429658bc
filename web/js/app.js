// app.js -- the shell: sign-in state, the navigation, client-side routes,
// the WebSocket, reminders popping up, the time-zone setting. Each page is
// a module with render(main, params) returning an optional cleanup.
import { h, clear, toast } from './dom.js';
import { get, post, del, session, setUnauthorizedHandler } from './api.js';
import * as ws from './ws.js';
import { zones } from './time.js';
import { state, installHooks, setCount } from './state.js';

// The server answers these paths with index.html: their first segments are
// listed in src/web/web_files.c too (web_is_app_route).
const routes = [
  [/^\/$/, () => state.me ? redirect('/calendar') : redirect('/hot')],
  [/^\/signin$/, () => import('./auth.js').then(m => m.signin)],
  [/^\/signup$/, () => import('./auth.js').then(m => m.signup)],
  [/^\/calendar$/, () => import('./calendar.js').then(m => m.render), true],
  [/^\/chat(?:\/([0-9a-f]{1,16}))?$/, () => import('./chat.js').then(m => m.render), true],
  [/^\/feed$/, () => import('./feed.js').then(m => m.renderTimeline), true],
  [/^\/users\/([0-9a-f]{1,16})$/, () => import('./feed.js').then(m => m.renderProfile), true],
  [/^\/hot$/, () => import('./feed.js').then(m => m.renderHot)],
  [/^\/notifications$/, () => import('./notifications.js').then(m => m.render), true],
  [/^\/admin$/, () => import('./admin.js').then(m => m.render), true],
];

let cleanup = null;
let redirecting = null;

function redirect(path) {
  redirecting = path;
}

function navigate(path, { replace = false } = {}) {
  if (path === location.pathname + location.search) return route();
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  return route();
}

// The newest route(): one still loading its page when the next began (a
// zone change, a quick click) draws into an element of its own, no longer
// in the page, and hands its cleanup back at once.
let routeSeq = 0;

async function route() {
  const seq = ++routeSeq;
  const main = document.getElementById('main');
  const path = location.pathname;
  let found = null, params = [];
  for (const [re, load, needsAuth] of routes) {
    const m = re.exec(path);
    if (m) { found = { load, needsAuth }; params = m.slice(1); break; }
  }
  if (typeof cleanup === 'function') { try { cleanup(); } catch (e) { console.warn(e); } }
  cleanup = null;
  renderNav();
  if (!found) {
    clear(main, h('h1', 'Not found'), h('p', h('a', { href: '/', 'data-link': '' }, 'Home')));
    return;
  }
  if (found.needsAuth && !state.me) return navigate('/signin?next=' + encodeURIComponent(path + location.search), { replace: true });
  redirecting = null;
  const page = await found.load();
  if (seq !== routeSeq) return;
  if (redirecting) return navigate(redirecting, { replace: true });
  if (typeof page !== 'function') return;
  const view = h('div.view');
  clear(main, view);
  try {
    const done = await page(view, params, new URLSearchParams(location.search));
    if (seq === routeSeq) cleanup = done;
    else if (typeof done === 'function') done();
  } catch (e) {
    console.warn(e);
    clear(view, h('p.error', { role: 'alert' }, 'Could not load this page: ' + e.message));
  }
}

// ---- navigation and account ----

function link(href, text, badge) {
  const here = location.pathname === href || (href !== '/' && location.pathname.startsWith(href + '/'));
  return h('a', { href, 'data-link': '', 'aria-current': here ? 'page' : null }, text,
    badge ? [' ', h('span.badge', { 'aria-label': `${badge} unread` }, String(badge))] : null);
}

function renderNav() {
  const nav = document.getElementById('nav');
  const acct = document.getElementById('account');
  if (!state.me) {
    clear(nav, link('/hot', 'Hot'));
    clear(acct, h('a', { href: '/signin', 'data-link': '' }, 'Sign in'), h('a', { href: '/signup', 'data-link': '' }, 'Sign up'));
    return;
  }
  clear(nav, link('/calendar', 'Calendar'), link('/chat', 'Chat', state.chatUnread), link('/feed', 'Feed', state.feedUnread),
    link('/hot', 'Hot'), link('/notifications', 'Notifications', state.noteUnread),
    state.admin ? link('/admin', 'Admin') : null);
  const tzSel = h('select', { 'aria-label': 'Time zone', id: 'tz-select', onchange: e => setZone(e.target.value) },
    zones().map(z => h('option', { value: z, selected: z === state.tz }, z)));
  if (![...tzSel.options].some(o => o.value === state.tz)) tzSel.prepend(h('option', { value: state.tz, selected: true }, state.tz));
  clear(acct, tzSel, h('a', { href: '/users/' + state.me.id, 'data-link': '', title: state.me.email }, state.me.name),
    h('button', { onclick: signOut }, 'Sign out'));
}

function setZone(tz) {
  state.tz = tz;
  localStorage.setItem('chime.tz', tz);
  route();
}

async function signedIn(s) {
  session.set(s);
  await loadMe();
}

async function loadMe() {
  const s = session.get();
  if (!s) { state.me = null; return; }
  try {
    state.me = await get('/v1/me');
  } catch (e) {
    if (e.status === 401) { session.clear(); state.me = null; return; }
    state.me = s.user; // offline: trust what we had
  }
  state.admin = !!(state.me && state.me.admin);
  ws.start();
  refreshCounts();
}

async function signOut() {
  try { await del('/v1/sessions/current'); } catch { /* gone already */ }
  localSignOut();
}

function localSignOut() {
  session.clear();
  state.me = null;
  state.admin = false;
  ws.stop();
  navigate('/signin');
}

// ---- counts for the badges ----

async function refreshCounts() {
  if (!state.me) return;
  try {
    const [u, f] = await Promise.all([get('/v1/unread'), get('/v1/timeline/unread_count')]);
    state.chatUnread = u.total;
    state.feedUnread = f.count;
    renderNav();
  } catch { /* the next frame tries again */ }
}

// ---- reminders over the WebSocket ----

ws.on('hello', f => setCount('chatUnread', f.unread));
ws.on('sync', f => setCount('chatUnread', f.unread));
ws.on('feed', f => setCount('feedUnread', f.unread));
ws.on('reminder', f => {
  const when = f.original_start ? new Date(f.original_start).toLocaleTimeString([], { timeZone: state.tz, hour: '2-digit', minute: '2-digit' }) : '';
  const text = `Reminder: ${f.summary || 'event'}${when ? ' at ' + when : ''}`;
  toast(text, { kind: 'reminder', ms: 0, action: { label: 'Mark read', run: () => post(`/v1/notifications/${f.id}/read`).catch(() => {}) } });
  if ('Notification' in window && Notification.permission === 'granted') {
    try { new Notification('chime', { body: text, tag: 'chime-' + f.id }); } catch { /* not in this context */ }
  }
  setCount('noteUnread', (state.noteUnread || 0) + 1);
  document.dispatchEvent(new CustomEvent('chime:reminder', { detail: f }));
});

// ---- boot ----

// The sign-in page hands the new session over through this event.
document.addEventListener('chime:signedin', async e => {
  await signedIn(e.detail.session);
  navigate(e.detail.next || '/calendar', { replace: true });
});

document.addEventListener('click', e => {
  const a = e.target.closest('a[data-link]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
  e.preventDefault();
  navigate(a.getAttribute('href'));
});
window.addEventListener('popstate', route);
// Another tab signed out (or in): follow it.
window.addEventListener('storage', e => {
  if (e.key !== 'chime.session') return;
  if (!e.newValue) { if (state.me) localSignOut(); }
  else if (!state.me) loadMe().then(route);
});
setUnauthorizedHandler(() => { if (state.me) { toast('Your session ended; please sign in again.', { kind: 'error' }); localSignOut(); } });
window.addEventListener('online', () => document.getElementById('status').textContent = '');
window.addEventListener('offline', () => document.getElementById('status').textContent = 'You are offline; changes will be retried.');

installHooks({ navigate, counts: renderNav });
await loadMe();
route();
