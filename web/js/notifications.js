// notifications.js -- the in-app inbox: reminders that fired, newest
// first, with read marks; asks once for browser notifications.
import { h, clear } from './dom.js';
import { get, post, qs } from './api.js';
import { state, setCount } from './state.js';
import { shortStamp } from './time.js';

export async function render(main) {
  const list = h('ul.notes', { id: 'notifications' });
  const perm = 'Notification' in window && Notification.permission === 'default'
    ? h('button', { onclick: async () => { await Notification.requestPermission(); perm.remove(); } }, 'Show reminders as browser notifications')
    : null;
  let last = '0';
  const markAll = h('button', { onclick: async () => { await post('/v1/notifications/read', { up_to: last }); load(); } }, 'Mark all read');
  main.append(h('h1', 'Notifications'), h('div.row', markAll, perm), list);

  // expect: the id of a reminder whose frame just came; true once it is
  // listed.
  async function load(expect) {
    // Oldest first by cursor: walk to the end (bounded), show newest first.
    const items = [];
    let after = '0';
    for (let i = 0; i < 10; i++) {
      const r = await get('/v1/notifications' + qs({ after, limit: 1000 }));
      items.push(...r.items);
      if (!r.items.length || r.next === after) break;
      after = r.next;
      if (r.items.length < 1000) break;
    }
    last = after;
    items.reverse();
    const missing = expect && !items.some(n => n.id === expect);
    setCount('noteUnread', items.filter(n => !n.read).length + (missing ? 1 : 0));
    clear(list, items.length ? items.map(n => h('li.card', { class: n.read ? null : 'unread', 'data-note': n.id },
      h('div.row', h('span.grow', `${n.summary || 'Event'} — ${n.original_start ? shortStamp(n.original_start, state.tz) : ''}`),
        h('span.muted', `fired ${shortStamp(n.fired || n.due, state.tz)}${n.late ? ' (late)' : ''}`),
        n.read ? h('span.muted', 'read') : h('button', { onclick: async () => { await post(`/v1/notifications/${n.id}/read`); load(); } }, 'Mark read'))))
      : h('li.muted', 'No notifications yet. Reminders set to "push" land here.'));
    return !missing;
  }
  // On PostgreSQL the inbox lists a row only once every older write
  // transaction has ended, so the frame can come a moment before the list
  // shows its reminder: read it again, a few times, until it does.
  let gone = false;
  const onReminder = async e => {
    for (let i = 0; i < 10 && !gone; i++) {
      if (await load(e.detail.id)) return;
      await new Promise(ok => setTimeout(ok, 300));
    }
  };
  document.addEventListener('chime:reminder', onReminder);
  await load();
  return () => { gone = true; document.removeEventListener('chime:reminder', onReminder); };
}
