// calendar.js -- month, week and day views of everything the user
// organizes or is invited to, series expanded by the server, placed in
// the viewer's time zone; the side panel with invitations, import and the
// subscription URL.
import { h, clear, toast } from './dom.js';
import { get, post, del, qs } from './api.js';
import { state, navigate } from './state.js';
import * as T from './time.js';
import { openEvent, newEvent, answer } from './event_dialog.js';

let cache = { key: '', items: [] };

export async function render(main, _p, params) {
  const tz = state.tz;
  const view = ['month', 'week', 'day'].includes(params.get('view')) ? params.get('view') : 'month';
  const anchor = T.parseDate(params.get('date')) || T.today(tz);
  const cal = await primaryCalendar();
  const { from, days } = range(view, anchor);
  const go = (v, d) => navigate(`/calendar${qs({ view: v, date: T.dateKey(d) })}`);
  const step = n => view === 'month' ? T.addMonths(anchor, n) : T.addDays(anchor, n * (view === 'week' ? 7 : 1));

  const title = view === 'month' ? `${T.MONTHS[anchor.m - 1]} ${anchor.y}`
    : view === 'week' ? `Week of ${T.MONTHS[from.m - 1].slice(0, 3)} ${from.d}, ${from.y}`
    : `${T.DAYS[T.weekday(anchor)]} ${T.MONTHS[anchor.m - 1]} ${anchor.d}, ${anchor.y}`;
  const grid = h('div', { id: 'cal-grid', 'aria-busy': 'true' });
  const side = h('aside.side', { 'aria-label': 'Calendar tools' });
  main.append(
    h('div.cal-head',
      h('h1', { id: 'cal-title' }, title),
      h('button', { onclick: () => go(view, step(-1)), 'aria-label': 'Previous' }, '‹'),
      h('button', { onclick: () => go(view, T.today(tz)) }, 'Today'),
      h('button', { onclick: () => go(view, step(1)), 'aria-label': 'Next' }, '›'),
      h('span.grow'),
      ['month', 'week', 'day'].map(v => h('button', { 'aria-pressed': String(v === view), onclick: () => go(v, anchor) },
        v[0].toUpperCase() + v.slice(1))),
      h('button.primary', { onclick: () => newEvent(anchor, reload) }, 'New event')),
    h('p.muted', `Times in ${tz}.`),
    h('div.cal-layout', grid, side));

  const reload = () => render(clear(main), _p, params);
  const fromMs = T.instant(from.y, from.m, from.d, 0, 0, tz);
  const end = T.addDays(from, days);
  const toMs = T.instant(end.y, end.m, end.d, 0, 0, tz);
  let items;
  try {
    items = await loadEvents(new Date(fromMs).toISOString(), new Date(toMs).toISOString(), cal);
  } catch (e) {
    clear(grid, h('p.error', { role: 'alert' }, 'Could not load events: ' + e.message));
    return;
  }
  const t0 = performance.now();
  const placed = place(items, tz);
  if (view === 'month') renderMonth(grid, from, anchor, placed, tz, reload);
  else renderTimeGrid(grid, from, days, placed, tz, reload);
  grid.setAttribute('aria-busy', 'false');
  // For the browser test's timing: after the API answered, the script's
  // time, and the time until the frame with the view is painted.
  document.body.dataset.calRenderMs = String(Math.round(performance.now() - t0));
  document.body.dataset.calEvents = String(items.length);
  requestAnimationFrame(() => setTimeout(() => { document.body.dataset.calPaintMs = String(Math.round(performance.now() - t0)); }));
  renderSide(side, items, cal, reload);
}

async function primaryCalendar() {
  const cals = await get('/v1/calendars');
  return cals.items.find(c => c.primary) || cals.items[0];
}

function range(view, anchor) {
  if (view === 'day') return { from: anchor, days: 1 };
  if (view === 'week') return { from: T.addDays(anchor, -T.weekday(anchor)), days: 7 };
  const first = { y: anchor.y, m: anchor.m, d: 1 };
  return { from: T.addDays(first, -T.weekday(first)), days: 42 };
}

async function loadEvents(from, to) {
  const key = from + to;
  const items = [];
  let token = null;
  for (let page = 0; page < 20; page++) {
    const r = await get('/v1/events' + qs({ from, to, max_results: 2500, page_token: token }));
    items.push(...r.items);
    token = r.next_page_token;
    if (!token) break;
  }
  cache = { key, items };
  return items;
}

function myStatus(ev) {
  const me = (ev.attendees || []).find(a => a.self || (state.me && a.user_id === state.me.id));
  const organizer = ev.organizer && state.me && ev.organizer.id === state.me.id;
  return { organizer, status: me ? me.response_status : null };
}

// Each event on the days (keys) it covers, with its wall times in tz.
function place(items, tz) {
  const byDay = new Map();
  const add = (key, entry) => { if (!byDay.has(key)) byDay.set(key, []); byDay.get(key).push(entry); };
  for (const ev of items) {
    if (ev.start.date) {
      let d = T.parseDate(ev.start.date);
      const end = T.parseDate(ev.end.date) || T.addDays(d, 1);
      for (let i = 0; i < 366 && T.daysBetween(d, end) > 0; i++, d = T.addDays(d, 1))
        add(T.dateKey(d), { ev, allDay: true });
      continue;
    }
    const s = Date.parse(ev.start.date_time), e = Math.max(s, Date.parse(ev.end.date_time));
    const ws = T.wall(s, tz), we = T.wall(Math.max(s, e - 1), tz);
    let d = { y: ws.y, m: ws.m, d: ws.d };
    for (let i = 0; i < 62; i++) {
      const first = T.sameDay(d, ws), last = T.sameDay(d, we);
      add(T.dateKey(d), {
        ev, allDay: false, first,
        startMin: first ? ws.hh * 60 + ws.mm : 0,
        endMin: last ? (e > s ? T.wall(e, tz).hh * 60 + T.wall(e, tz).mm || 1440 : ws.hh * 60 + ws.mm + 15) : 1440,
        label: first ? T.hm(ws) : '',
      });
      if (last) break;
      d = T.addDays(d, 1);
    }
  }
  for (const list of byDay.values())
    list.sort((a, b) => (b.allDay - a.allDay) || (a.startMin - b.startMin) || a.ev.summary.localeCompare(b.ev.summary));
  return byDay;
}

function chip(entry, reload) {
  const { ev } = entry;
  const st = myStatus(ev);
  const cls = [entry.allDay ? 'allday' : '', !st.organizer ? 'invited' : '', st.status === 'declined' ? 'declined' : '']
    .filter(Boolean).join(' ');
  const text = (entry.label ? entry.label + ' ' : '') + (ev.summary || '(no title)');
  return h('button.ev', { class: cls || null, title: text, 'data-event-id': ev.id, onclick: e => { e.stopPropagation(); openEvent(ev, reload); } }, text);
}

function renderMonth(grid, from, anchor, byDay, tz, reload) {
  const today = T.today(tz);
  const frag = document.createDocumentFragment();
  const month = h('div.month', { role: 'group', 'aria-label': `${T.MONTHS[anchor.m - 1]} ${anchor.y}` });
  for (const d of T.DAYS) frag.append(h('div.dow', { 'aria-hidden': 'true' }, d));
  for (let i = 0; i < 42; i++) {
    const d = T.addDays(from, i);
    const key = T.dateKey(d);
    const list = byDay.get(key) || [];
    const shown = list.slice(0, 4);
    const cell = h('div.day', {
      'data-date': key,
      class: [d.m !== anchor.m ? 'other' : '', T.sameDay(d, today) ? 'today' : ''].filter(Boolean).join(' ') || null,
    },
    h('button.num', { 'aria-label': `New event on ${T.DAYS[T.weekday(d)]} ${key}`, onclick: () => newEvent(d, reload) }, String(d.d)),
    shown.map(en => chip(en, reload)),
    list.length > shown.length
      ? h('button.link.more', { onclick: () => navigate(`/calendar${qs({ view: 'day', date: key })}`) }, `+${list.length - shown.length} more`)
      : null);
    frag.append(cell);
  }
  month.append(frag);
  clear(grid, month);
}

function renderTimeGrid(grid, from, days, byDay, tz, reload) {
  const cols = `3.2em repeat(${days}, minmax(0, 1fr))`;
  const head = h('div.tgrid');
  head.style.gridTemplateColumns = cols;
  const dayList = Array.from({ length: days }, (_, i) => T.addDays(from, i));
  head.append(h('div.col-head', ''), dayList.map(d => h('div.col-head', `${T.DAYS[T.weekday(d)]} ${d.d}`)));
  head.append(h('div.allday-row.muted', 'all day'),
    dayList.map(d => h('div.allday-row', { 'data-date': T.dateKey(d) },
      (byDay.get(T.dateKey(d)) || []).filter(e => e.allDay).map(e => chip(e, reload)))));
  const hours = h('div.hours', Array.from({ length: 24 }, (_, i) => h('div.hour', `${T.pad(i)}:00`)));
  head.append(hours);
  for (const d of dayList) {
    const col = h('div.daycol', { 'data-date': T.dateKey(d) });
    col.style.height = 24 * 40 + 'px';
    col.addEventListener('dblclick', e => {
      if (e.target !== col) return;
      const hour = Math.floor(e.offsetY / 40);
      newEvent(d, reload, hour);
    });
    const timed = (byDay.get(T.dateKey(d)) || []).filter(e => !e.allDay);
    const lanes = [];
    for (const en of timed) {
      let lane = lanes.findIndex(end => end <= en.startMin);
      if (lane < 0) { lane = lanes.length; lanes.push(0); }
      lanes[lane] = Math.max(en.endMin, en.startMin + 15);
      en.lane = lane;
    }
    const n = Math.max(1, lanes.length);
    for (const en of timed) {
      const c = chip(en, reload);
      c.style.top = (en.startMin * 40 / 60) + 'px';
      c.style.height = Math.max(18, (Math.max(en.endMin, en.startMin + 15) - en.startMin) * 40 / 60 - 2) + 'px';
      c.style.left = `calc(${(en.lane / n) * 100}% + 2px)`;
      c.style.width = `calc(${100 / n}% - 4px)`;
      c.style.right = 'auto';
      col.append(c);
    }
    head.append(col);
  }
  clear(grid, head);
}

function renderSide(side, items, cal, reload) {
  const seen = new Set();
  const pending = items.filter(ev => {
    const st = myStatus(ev);
    const key = ev.recurring_event_id || ev.id;
    if (st.organizer || st.status !== 'needs_action' || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const inv = h('section', { 'aria-labelledby': 'inv-h' }, h('h2', { id: 'inv-h' }, 'Invitations'),
    pending.length ? pending.map(ev => h('div.card', { 'data-invitation': ev.recurring_event_id || ev.id },
      h('strong', ev.summary || '(no title)'), h('div.muted', `from ${ev.organizer.email}`),
      h('div.row', ['accepted', 'tentative', 'declined'].map(s => h('button', {
        onclick: async () => { await answer(ev, s); reload(); },
      }, { accepted: 'Accept', tentative: 'Maybe', declined: 'Decline' }[s])),
      h('button', { 'aria-label': `Details and reminders of ${ev.summary || '(no title)'}`, onclick: () => openEvent(ev, reload) }, 'Details…'))))
      : h('p.muted', 'Nothing waiting in this range.'));

  const fileIn = h('input', { type: 'file', accept: '.ics,text/calendar', id: 'ics-file', 'aria-label': 'iCalendar file' });
  const importOut = h('div', { role: 'status' });
  const imp = h('section', h('h2', 'Import'), fileIn, h('button', {
    onclick: async () => {
      const f = fileIn.files[0];
      if (!f) { importOut.textContent = 'Choose an .ics file first.'; return; }
      importOut.textContent = 'Importing…';
      try {
        const r = await post(`/v1/calendars/${cal.id}/import`, await f.text(), { type: 'text/calendar' });
        // The view reloads with what came in; the toast outlives it.
        toast(`Imported ${r.imported}, updated ${r.updated}, skipped ${r.skipped_count}.`);
        reload();
      } catch (e) { importOut.textContent = 'Import failed: ' + e.message; }
    },
  }, 'Import .ics'), importOut);

  const urlBox = h('input', { readonly: true, 'aria-label': 'Subscription URL', id: 'sub-url', hidden: true });
  const copyBtn = h('button', {
    hidden: true,
    onclick: async () => {
      urlBox.select();
      try { await navigator.clipboard.writeText(urlBox.value); toast('Copied'); } catch { toast('Press Ctrl+C to copy'); }
    },
  }, 'Copy');
  const sub = h('section', h('h2', 'Subscribe'),
    h('p.muted', 'A secret address other calendar apps can subscribe to. Making a new one stops the old one.'),
    h('div.row', h('button', {
      onclick: async () => {
        const r = await post(`/v1/calendars/${cal.id}/feed`);
        urlBox.value = location.origin + r.url;
        urlBox.hidden = false; copyBtn.hidden = false;
        urlBox.select();
      },
    }, 'New subscription URL'), h('button.danger', {
      onclick: async () => { await del(`/v1/calendars/${cal.id}/feed`); urlBox.hidden = true; copyBtn.hidden = true; toast('Subscription revoked'); },
    }, 'Revoke')), h('div.row', urlBox, copyBtn));

  const exp = h('p', h('a', { href: '#', onclick: async e => {
    e.preventDefault();
    const res = await fetch(`/v1/calendars/${cal.id}/export.ics`, { headers: { Authorization: 'Bearer ' + JSON.parse(localStorage.getItem('chime.session')).token } });
    const url = URL.createObjectURL(await res.blob());
    const a = h('a', { href: url, download: 'calendar.ics' });
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  } }, 'Download .ics'));
  clear(side, inv, imp, sub, exp);
}
