// admin.js -- for the admin user: online and registered users, the jobs
// and their last runs, dead-lettered deliveries.
import { h, clear, toast } from './dom.js';
import { get, post } from './api.js';
import { state } from './state.js';
import { shortStamp } from './time.js';

export async function render(main) {
  if (!state.admin) { main.append(h('p.error', 'This page is for the server\'s admin.')); return; }
  const box = h('div');
  main.append(h('h1', 'Admin'), box);
  const ts = t => t ? shortStamp(t, state.tz) : '—';
  async function load() {
    const [stats, jobs, dead] = await Promise.all([get('/v1/admin/stats'), get('/v1/admin/jobs'), get('/v1/admin/deliveries?state=dead')]);
    clear(box,
      h('div.stats', { id: 'admin-stats' },
        h('div.card', h('strong', String(stats.online_users)), 'online users'),
        h('div.card', h('strong', String(stats.registered_users)), 'registered users'),
        h('div.card', h('strong', String(stats.connections)), 'WebSocket connections')),
      h('h2', 'Jobs'),
      h('div.scroll-x', h('table', { id: 'admin-jobs' }, h('thead', h('tr', ['Job', 'Schedule', 'Next run', 'Last run', 'Outcome', 'Owner', ''].map(x => h('th', { scope: 'col' }, x)))),
        h('tbody', jobs.items.map(j => h('tr',
          h('td', j.name), h('td', `${j.schedule} (${j.time_zone})`), h('td', ts(j.next_run)),
          h('td', j.last_run ? ts(j.last_run.started) : '—'),
          h('td', j.last_run ? j.last_run.outcome + (j.last_run.error ? ': ' + j.last_run.error : '') : '—'),
          h('td', j.owner || '—'),
          h('td', h('button', { onclick: async () => { await post(`/v1/admin/jobs/${encodeURIComponent(j.name)}/run`); toast(`${j.name} will run`); } }, 'Run now'))))))),
      h('h2', 'Dead-lettered deliveries'),
      dead.items.length ? h('div.scroll-x', h('table', { id: 'admin-dead' }, h('thead', h('tr', ['Delivery', 'Channel', 'Due', 'Attempts', 'Error'].map(x => h('th', { scope: 'col' }, x)))),
        h('tbody', dead.items.map(d => h('tr', h('td', d.id || d.delivery_id || ''), h('td', d.channel || d.method || ''), h('td', ts(d.due)),
          h('td', String(d.attempts ?? '')), h('td', d.last_error || d.error || ''))))))
        : h('p.muted', 'None.'));
  }
  await load();
  const t = setInterval(() => load().catch(() => {}), 10000);
  return () => clearInterval(t);
}
