// chat.js -- conversations with unread badges and presence dots; a pane
// whose history loads as you scroll up; sending that retries with the same
// client_msg_id (so a retry never doubles a message); live arrival through
// the WebSocket's "sync" frames and /v1/sync; read marks that the user's
// other tabs see through the same sync; groups and their members.
import { h, append, clear, modal, toast, debounce } from './dom.js';
import { get, post, del, qs, clientId } from './api.js';
import { state, navigate, setCount } from './state.js';
import * as ws from './ws.js';
import { shortStamp } from './time.js';

let seq = null;          // the last change of /v1/sync applied
let pulling = false, pullAgain = false;

export async function render(main, [openId]) {
  const list = h('ul.convs', { 'aria-label': 'Conversations', id: 'conv-list' });
  const pane = h('section.pane', { 'aria-label': 'Conversation' });
  main.append(h('div.row', h('h1.grow', 'Chat'),
    h('button', { onclick: newDirect }, 'New chat'), h('button', { onclick: newGroup }, 'New group')),
  h('div.chat', list, pane));

  let convs = [];
  let open = null; // the pane's state
  const presence = new Map();

  const title = c => c.type === 'group' ? (c.title || 'Group')
    : (c.members.find(m => m.id !== state.me.id) || { name: 'Just you' }).name;
  const other = c => c.type === 'direct' ? c.members.find(m => m.id !== state.me.id) : null;

  async function loadList() {
    const r = await get('/v1/conversations');
    convs = r.items;
    drawList();
    setCount('chatUnread', convs.reduce((n, c) => n + (c.left ? 0 : c.unread), 0));
    if (open) {
      // The open pane follows: its header (members, title), and on removal
      // or re-adding the whole pane, whose compose box depends on it.
      const c = convs.find(x => x.id === open.id);
      if (c && !!c.left !== !!open.conv.left) openPane(open.id);
      else if (c) { open.conv = c; drawHeader(); }
    }
  }
  const reloadList = debounce(() => loadList().catch(() => {}), 100);

  function drawList() {
    clear(list, convs.length ? convs.map(c => {
      const o = other(c);
      const p = o ? presence.get(o.id) : null;
      return h('li', h('a', { href: '/chat/' + c.id, 'data-link': '', 'data-conv': c.id, 'aria-current': open && open.id === c.id ? 'true' : null },
        o ? h('span.dot', { class: p && p.online ? 'online' : null, 'aria-label': p && p.online ? 'online' : 'offline', role: 'img' }) : null,
        h('span.grow', h('div.title', title(c)), h('div.last', c.last_message ? c.last_message.text : 'No messages yet')),
        c.unread > 0 && !c.left ? h('span.badge', { 'aria-label': `${c.unread} unread` }, String(c.unread)) : null));
    }) : h('li.muted', { style: null }, h('p', 'No conversations yet. Start one with "New chat".')));
  }

  async function refreshPresence() {
    const ids = [...new Set(convs.map(other).filter(Boolean).map(m => m.id))];
    await Promise.all(ids.map(async id => {
      try { presence.set(id, await get(`/v1/users/${id}/presence`)); } catch { /* not shared any more */ }
    }));
    drawList();
    if (open) drawHeader();
  }

  // News from someone is a good moment to look at who is online.
  const presenceSoon = debounce(() => refreshPresence().catch(() => {}), 500);

  // ---- the open conversation ----

  function openPane(id) {
    const c = convs.find(x => x.id === id);
    if (!c) { clear(pane, h('p.muted', { style: null }, 'Pick a conversation.')); return; }
    const msgs = h('div.msgs', { id: 'msgs', 'aria-live': 'polite', tabindex: 0, 'aria-label': 'Messages' });
    const input = h('input', { id: 'msg-input', 'aria-label': 'Message', placeholder: 'Message', autocomplete: 'off', maxlength: 8000, disabled: !!c.left });
    const header = h('header');
    open = { id, conv: c, msgs, header, byId: new Map(), pending: new Map(), oldest: null, hasMore: false, newest: 0, loading: false };
    clear(pane, header, msgs, h('form.compose', {
      onsubmit: e => {
        e.preventDefault();
        const text = input.value.trim();
        if (!text) return;
        input.value = '';
        send(text);
      },
    }, input, h('button.primary', { type: 'submit', disabled: !!c.left }, 'Send')));
    drawHeader();
    msgs.addEventListener('scroll', () => { if (msgs.scrollTop < 40) older(); });
    loadLatest().then(() => input.focus());
  }

  function drawHeader() {
    const c = open.conv;
    const o = other(c);
    const p = o ? presence.get(o.id) : null;
    clear(open.header, h('div.row',
      h('strong.grow', { id: 'conv-title' }, title(c)),
      o ? h('span', h('span.dot', { class: p && p.online ? 'online' : null }), p && p.online ? 'online' : 'offline',
        ' · ', h('a', { href: '/users/' + o.id, 'data-link': '' }, 'profile')) : null,
      c.type === 'group' ? h('button', { onclick: () => members(c) }, `Members (${c.members.length})`) : null),
    c.left ? h('p.muted', 'You are no longer in this conversation.') : null);
  }

  function msgEl(m, { pending = false } = {}) {
    const mine = m.sender === state.me.id;
    const who = (open.conv.members.find(x => x.id === m.sender) || { name: 'someone' }).name;
    return h('div.msg', { class: [mine ? 'mine' : '', pending ? 'pending' : ''].filter(Boolean).join(' ') || null, 'data-seq': m.seq || null, 'data-client-id': m.client_msg_id },
      h('div.text', m.text),
      h('div.meta', `${mine ? 'You' : who} · ${m.sent ? shortStamp(m.sent, state.tz) : 'sending…'}`));
  }

  function addMessages(items, where) {
    const atBottom = open.msgs.scrollHeight - open.msgs.scrollTop - open.msgs.clientHeight < 60;
    const before = open.msgs.scrollHeight;
    const els = [];
    for (const m of items) {
      if (open.byId.has(m.id)) continue;
      const pend = open.pending.get(m.client_msg_id);
      if (pend && m.sender === state.me.id) { pend.el.remove(); open.pending.delete(m.client_msg_id); }
      const el = msgEl(m);
      open.byId.set(m.id, el);
      els.push(el);
      open.newest = Math.max(open.newest, m.seq);
      if (open.oldest === null || m.seq < open.oldest) open.oldest = m.seq;
    }
    if (where === 'top') {
      open.msgs.prepend(...els);
      open.msgs.scrollTop += open.msgs.scrollHeight - before; // stay where the reader was
    } else {
      const firstPending = [...open.pending.values()][0];
      for (const el of els) firstPending ? open.msgs.insertBefore(el, firstPending.el) : open.msgs.append(el);
      if (atBottom || where === 'latest') open.msgs.scrollTop = open.msgs.scrollHeight;
    }
    markRead();
  }

  async function loadLatest() {
    const r = await get(`/v1/conversations/${open.id}/messages?limit=30`);
    open.hasMore = r.has_more;
    addMessages(r.messages, 'latest');
    // Fill the pane so that scrolling up is possible.
    while (open.hasMore && open.msgs.scrollHeight <= open.msgs.clientHeight) { if (!(await older())) break; }
  }

  async function older() {
    if (!open || open.loading || !open.hasMore || open.oldest === null) return false;
    open.loading = true;
    try {
      const r = await get(`/v1/conversations/${open.id}/messages${qs({ before_seq: open.oldest, limit: 30 })}`);
      open.hasMore = r.has_more;
      addMessages(r.messages, 'top');
      return r.messages.length > 0;
    } finally { open.loading = false; }
  }

  function markRead() {
    if (!open || document.visibilityState !== 'visible' || open.conv.left) return;
    if (open.newest > (open.conv.read_up_to || 0)) {
      const up = open.newest;
      open.conv.read_up_to = up;
      post(`/v1/conversations/${open.id}/read`, { up_to: up }).then(reloadList).catch(() => {});
    }
  }

  // Sends until the server has it: network errors, 429 and 5xx are retried
  // with the same client_msg_id; the server answers a repeat with the
  // original, so the message exists once.
  async function send(text, cid = clientId(), existing = null) {
    const conv = open;
    const el = existing || msgEl({ sender: state.me.id, text, client_msg_id: cid }, { pending: true });
    el.classList.remove('failed');
    el.classList.add('pending');
    if (!existing) { conv.msgs.append(el); conv.msgs.scrollTop = conv.msgs.scrollHeight; }
    conv.pending.set(cid, { el, text });
    for (let attempt = 0; ; attempt++) {
      try {
        const m = await post(`/v1/conversations/${conv.id}/messages`, { client_msg_id: cid, text });
        if (conv.pending.has(cid)) {
          conv.pending.delete(cid);
          el.remove();
          if (open === conv) addMessages([m], 'bottom');
        }
        return;
      } catch (e) {
        const retriable = !e.status || e.status === 429 || e.status >= 500;
        if (!retriable || attempt >= 5) {
          el.classList.remove('pending');
          el.classList.add('failed');
          el.querySelector('.meta').replaceChildren('Not sent: ' + e.message + ' ',
            h('button.link', { onclick: () => send(text, cid, el) }, 'Retry'));
          return;
        }
        await new Promise(r => setTimeout(r, e.retryAfter ? e.retryAfter * 1000 : 500 * 2 ** attempt));
      }
    }
  }

  // ---- live changes ----

  async function pull() {
    if (seq === null) return;
    if (pulling) { pullAgain = true; return; }
    pulling = true;
    try {
      for (let more = true; more;) {
        const r = await get(`/v1/sync${qs({ since: seq, limit: 500 })}`);
        seq = r.seq;
        more = r.has_more;
        const forOpen = r.changes.filter(c => open && c.conversation_id === open.id && c.kind === 'message').map(c => c.message);
        if (forOpen.length) addMessages(forOpen, 'bottom');
        if (r.changes.length) { reloadList(); presenceSoon(); }
      }
    } catch (e) {
      if (e.status === 410 || e.status === 400) { seq = (ws.lastFrame.sync || ws.lastFrame.hello || {}).seq ?? null; await loadList(); }
    } finally {
      pulling = false;
      if (pullAgain) { pullAgain = false; pull(); }
    }
  }

  const offSync = ws.on('sync', f => { if (seq === null || f.seq > seq) pull(); });
  // A hello is where the user's changes stand now; a list loaded before it
  // may lack some of them (a message between the two), so without a seq of
  // its own the page reads the list again rather than pull only after it.
  const offHello = ws.on('hello', f => {
    if (seq === null) { seq = f.seq; reloadList(); }
    pull();
  });
  const onVisible = () => { if (document.visibilityState === 'visible') markRead(); };
  document.addEventListener('visibilitychange', onVisible);
  const timer = setInterval(refreshPresence, 20000);

  // ---- dialogs ----

  function newDirect() {
    modal('New chat', (body, close) => {
      const email = h('input', { id: 'chat-with', type: 'email', required: true, autocomplete: 'off' });
      const err = h('p.error', { role: 'alert' });
      body.append(h('form', {
        onsubmit: async e => {
          e.preventDefault();
          try {
            const c = await post('/v1/conversations', { type: 'direct', user: email.value.trim() });
            close();
            await loadList();
            navigate('/chat/' + c.id);
          } catch (x) { err.textContent = x.message; }
        },
      }, h('label', { for: 'chat-with' }, 'Their email'), email, err,
      h('div.actions', h('button', { type: 'button', onclick: close }, 'Cancel'), h('button.primary', { type: 'submit' }, 'Start'))));
      email.focus();
    });
  }

  function newGroup() {
    modal('New group', (body, close) => {
      const name = h('input', { id: 'group-title', required: true, maxlength: 200 });
      const who = h('input', { id: 'group-members', placeholder: 'a@example.com, b@example.com' });
      const err = h('p.error', { role: 'alert' });
      body.append(h('form', {
        onsubmit: async e => {
          e.preventDefault();
          try {
            const c = await post('/v1/conversations', { type: 'group', title: name.value.trim(),
              members: who.value.split(',').map(s => s.trim()).filter(Boolean) });
            close();
            await loadList();
            navigate('/chat/' + c.id);
          } catch (x) { err.textContent = (x.field ? x.field + ': ' : '') + x.message; }
        },
      }, h('label', { for: 'group-title' }, 'Group name'), name, h('label', { for: 'group-members' }, 'Members (emails)'), who, err,
      h('div.actions', h('button', { type: 'button', onclick: close }, 'Cancel'), h('button.primary', { type: 'submit' }, 'Create'))));
      name.focus();
    });
  }

  function members(c) {
    const admin = c.members.some(m => m.id === state.me.id && m.role === 'admin');
    modal(`Members of ${title(c)}`, (body, close) => {
      const err = h('p.error', { role: 'alert' });
      const act = fn => async () => { try { await fn(); close(); await loadList(); } catch (x) { err.textContent = x.message; } };
      const add = h('input', { id: 'add-members', placeholder: 'emails, comma separated', 'aria-label': 'Add members' });
      append(body, [h('ul', c.members.map(m => h('li', h('a', { href: '/users/' + m.id, 'data-link': '' }, m.name), m.role === 'admin' ? ' (admin)' : '',
        admin && m.id !== state.me.id ? [' ', h('button.link', { onclick: act(() => del(`/v1/conversations/${c.id}/members/${m.id}`)) }, 'Remove')] : null))),
      admin ? h('form', { onsubmit: e => { e.preventDefault(); act(() => post(`/v1/conversations/${c.id}/members`, { users: add.value.split(',').map(s => s.trim()).filter(Boolean) }))(); } },
        add, h('button', { type: 'submit' }, 'Add')) : null,
      err,
      h('div.actions', h('button.danger', { onclick: act(() => del(`/v1/conversations/${c.id}/members/${state.me.id}`)) }, 'Leave group'),
        h('button', { onclick: close }, 'Close'))]);
    });
  }

  // ---- start ----
  await loadList();
  if (seq === null && ws.lastFrame.hello) seq = ws.lastFrame.hello.seq;
  pull();
  openPane(openId);
  drawList();
  refreshPresence();
  return () => {
    offSync(); offHello(); clearInterval(timer);
    document.removeEventListener('visibilitychange', onVisible);
    open = null;
  };
}
