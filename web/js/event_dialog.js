// event_dialog.js -- create and edit an event: times and zone, the
// recurrence editor with the engine's English as you edit it, guests and
// their free/busy, reminders; "this event / this and following / all
// events" for a series; the invitee's answer.
import { h, append, modal, toast, debounce } from './dom.js';
import { get, post, patch, del, qs } from './api.js';
import { state } from './state.js';
import * as T from './time.js';

const CODES = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'];
const DAY_NAMES = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const NTH = { 1: 'first', 2: 'second', 3: 'third', 4: 'fourth', '-1': 'last' };

export const seriesId = ev => ev.recurring_event_id || ev.id;
const originalOf = ev => ev.id.slice(ev.id.lastIndexOf('_') + 1);

export async function answer(ev, status) {
  try {
    await post(`/v1/events/${seriesId(ev)}/rsvp`, { status });
    toast(`Answered: ${status.replace('_', ' ')}`);
  } catch (e) { toast('Could not answer: ' + e.message, { kind: 'error' }); }
}

export function newEvent(date, reload, hour = 9) {
  const d = T.dateKey(date);
  editor({
    summary: '', start: { date_time: `${d}T${T.pad(hour)}:00:00`, time_zone: state.tz },
    end: { date_time: `${d}T${T.pad(Math.min(hour + 1, 23))}:${hour >= 23 ? '59' : '00'}:00`, time_zone: state.tz },
    attendees: [], reminders: [], recurrence: [],
  }, null, reload);
}

export async function openEvent(ev, reload) {
  const organizer = state.me && ev.organizer && ev.organizer.id === state.me.id;
  if (!organizer) return details(ev, reload);
  let series = null;
  if (ev.recurring_event_id) {
    try { series = await get(`/v1/events/${ev.recurring_event_id}`); } catch { series = null; }
  }
  editor(ev, series, reload);
}

function when(ev) {
  if (ev.start.date) return `${ev.start.date} (all day)`;
  const s = Date.parse(ev.start.date_time), e = Date.parse(ev.end.date_time);
  const ws = T.wall(s, state.tz), we = T.wall(e, state.tz);
  return `${T.dateKey(ws)} ${T.hm(ws)} – ${T.sameDay(ws, we) ? '' : T.dateKey(we) + ' '}${T.hm(we)} (${state.tz})`;
}

function attendeeList(ev) {
  const a = ev.attendees || [];
  if (!a.length) return null;
  return h('ul.attendees', { 'aria-label': 'Guests' }, a.map(x => h('li', `${x.email}: `,
    h('span', { 'data-status': x.response_status }, x.response_status.replace('_', ' ')))));
}

// A list of reminders (method, minutes before) with add and remove.
function reminderEditor(initial, legend = 'Reminders') {
  const list = h('div', { id: 'ev-reminders' });
  const add = (m = 'push', min = 10) => {
    const row = h('div.row.reminder',
      h('select', { 'aria-label': 'Reminder method' }, ['push', 'email', 'webhook'].map(x => h('option', { value: x, selected: x === m }, x))),
      h('input', { type: 'number', min: 0, max: 40320, value: min, 'aria-label': 'Minutes before', style: null }),
      'minutes before', h('button.link', { type: 'button', onclick: () => row.remove() }, 'Remove'));
    row.children[1].style.width = '6em';
    list.append(row);
  };
  for (const r of initial) add(r.method, r.minutes_before);
  return {
    el: h('fieldset', h('legend', legend), list, h('button', { type: 'button', onclick: () => add() }, 'Add reminder')),
    value: () => [...list.querySelectorAll('.reminder')].map(r => ({ method: r.children[0].value, minutes_before: +r.children[1].value })),
  };
}

const sameReminders = (a, b) => JSON.stringify(a.map(r => [r.method, r.minutes_before]))
  === JSON.stringify(b.map(r => [r.method, r.minutes_before]));

// What an invitee sees: the event, the guests, their answer and their own
// reminders. Until they set their own, the organizer's apply to them too
// (shown as the starting list); an answer sends the list only when it was
// changed here, so the invitee keeps following the organizer's otherwise.
export function details(ev, reload) {
  modal(ev.summary || '(no title)', (body, close) => {
    const mine = (ev.attendees || []).find(a => a.self) || {};
    const own = Array.isArray(mine.reminders);
    const start = own ? mine.reminders : ev.reminders || [];
    const rem = reminderEditor(start, 'Your reminders');
    const err = h('p.error', { role: 'alert' });
    const current = mine.response_status || 'needs_action';
    const send = async status => {
      const body = { status };
      const r = rem.value();
      if (own || !sameReminders(r, start)) body.reminders = r;
      try {
        await post(`/v1/events/${seriesId(ev)}/rsvp`, body);
      } catch (e) { err.textContent = (e.field ? e.field + ': ' : '') + e.message; return; }
      toast(status === current ? 'Reminders saved' : `Answered: ${status.replace('_', ' ')}`);
      close();
      reload();
    };
    append(body, [h('p', when(ev)), ev.location ? h('p', ev.location) : null,
      ev.description ? h('p', ev.description) : null,
      h('p.muted', `Organized by ${ev.organizer ? ev.organizer.email : '?'}`), attendeeList(ev),
      h('p', 'Your answer: ', h('strong', { id: 'my-answer' }, current.replace('_', ' '))),
      rem.el,
      h('p.muted', own ? 'These are your own reminders.' : 'The organizer\'s reminders, until you change them.'),
      err,
      h('div.actions',
        ['accepted', 'tentative', 'declined'].map(s => h('button', {
          'aria-pressed': String(current === s),
          onclick: () => send(s),
        }, { accepted: 'Accept', tentative: 'Maybe', declined: 'Decline' }[s])),
        current !== 'needs_action' ? h('button', { onclick: () => send(current) }, 'Save reminders') : null,
        h('button', { onclick: close }, 'Close'))]);
  });
}

// ---- the recurrence editor ----

function parseRule(text) {
  const r = { freq: '', interval: 1, byday: [], nth: null, count: '', until: '', custom: false };
  if (!text) return r;
  for (const part of text.replace(/^RRULE:/i, '').split(';')) {
    const [k, v = ''] = part.split('=');
    switch (k.toUpperCase()) {
      case 'FREQ': r.freq = v.toUpperCase(); break;
      case 'INTERVAL': r.interval = +v || 1; break;
      case 'COUNT': r.count = v; break;
      case 'UNTIL': r.until = `${v.slice(0, 4)}-${v.slice(4, 6)}-${v.slice(6, 8)}`; break;
      case 'BYDAY': {
        const days = v.split(',');
        const m = /^([+-]?\d+)([A-Z]{2})$/.exec(days[0]);
        if (m && days.length === 1) r.nth = { n: +m[1], day: m[2] };
        else if (days.every(d => CODES.includes(d))) r.byday = days;
        else r.custom = true;
        break;
      }
      case 'BYMONTHDAY': case 'WKST': break;
      default: r.custom = true;
    }
  }
  if (!['DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY'].includes(r.freq)) r.custom = true;
  return r;
}

function recurrenceEditor(initial, getStart) {
  const r = parseRule(initial);
  const freq = h('select', { id: 'rec-freq', 'aria-label': 'Repeats' },
    [['', 'Does not repeat'], ['DAILY', 'Daily'], ['WEEKLY', 'Weekly'], ['MONTHLY', 'Monthly'], ['YEARLY', 'Yearly']]
      .map(([v, t]) => h('option', { value: v, selected: v === r.freq }, t)));
  const interval = h('input', { id: 'rec-interval', type: 'number', min: 1, max: 999, value: r.interval, 'aria-label': 'Every how many', style: null });
  interval.style.width = '5em';
  const unit = h('span');
  const days = CODES.map((c, i) => h('label.inline', h('input', { type: 'checkbox', value: c, checked: r.byday.includes(c), 'data-day': c }), DAY_NAMES[i].slice(0, 3)));
  const weekly = h('fieldset.weekdays', h('legend', 'On'), days);
  const monthMode = h('select', { id: 'rec-monthly', 'aria-label': 'Monthly on' });
  const ends = h('select', { id: 'rec-ends', 'aria-label': 'Ends' },
    [['never', 'Never'], ['until', 'On date'], ['count', 'After']].map(([v, t]) => h('option', { value: v,
      selected: v === (r.count ? 'count' : r.until ? 'until' : 'never') }, t)));
  const until = h('input', { id: 'rec-until', type: 'date', value: r.until, 'aria-label': 'Ends on' });
  const count = h('input', { id: 'rec-count', type: 'number', min: 1, max: 1000, value: r.count || 10, 'aria-label': 'Number of occurrences' });
  count.style.width = '5em';
  const raw = h('input', { id: 'rec-raw', 'aria-label': 'Rule (RRULE)', value: initial || '', class: 'grow' });
  const explain = h('div.explain', { id: 'rec-explain', role: 'status', 'aria-live': 'polite' });
  let custom = r.custom;
  const body = h('div.rec-body',
    h('div.row', 'Every', interval, unit), weekly,
    h('div.row', monthMode),
    h('div.row', h('label.inline', { for: 'rec-ends' }, 'Ends'), ends, until, count, h('span', { id: 'rec-count-unit' }, 'times')));

  function monthOptions() {
    const s = getStart();
    const nth = Math.ceil(s.d / 7), wd = CODES[T.weekday(s)];
    const last = T.addDays(s, 7).m !== s.m;
    const keep = monthMode.value || (r.nth ? (r.nth.n === -1 ? 'last' : 'nth') : 'day');
    monthMode.replaceChildren(
      h('option', { value: 'day' }, `on day ${s.d}`),
      nth <= 4 ? h('option', { value: 'nth' }, `on the ${NTH[nth]} ${DAY_NAMES[T.weekday(s)]}`) : null,
      last ? h('option', { value: 'last' }, `on the last ${DAY_NAMES[T.weekday(s)]}`) : null);
    monthMode.value = [...monthMode.options].some(o => o.value === keep) ? keep : 'day';
    return { nth, wd };
  }

  function build() {
    if (custom) return raw.value.trim().replace(/^RRULE:/i, '');
    const f = freq.value;
    if (!f) return '';
    const parts = ['FREQ=' + f];
    const n = Math.max(1, Math.floor(+interval.value || 1));
    if (n > 1) parts.push('INTERVAL=' + n);
    if (f === 'WEEKLY') {
      const picked = days.map(l => l.firstChild).filter(c => c.checked).map(c => c.value);
      if (picked.length) parts.push('BYDAY=' + picked.join(','));
    }
    if (f === 'MONTHLY') {
      const { nth, wd } = monthOptions();
      if (monthMode.value === 'nth') parts.push(`BYDAY=${nth}${wd}`);
      if (monthMode.value === 'last') parts.push(`BYDAY=-1${wd}`);
    }
    if (ends.value === 'count') parts.push('COUNT=' + Math.max(1, Math.floor(+count.value || 1)));
    if (ends.value === 'until' && until.value) parts.push('UNTIL=' + untilValue(until.value));
    return parts.join(';');
  }

  // UNTIL in the form the event's start has: a date for all-day events, the
  // UTC instant of the end of that day in the event's zone otherwise.
  let untilValue = d => d.replaceAll('-', '');

  function sync() {
    const f = freq.value;
    unit.textContent = { DAILY: 'day(s)', WEEKLY: 'week(s)', MONTHLY: 'month(s)', YEARLY: 'year(s)' }[f] || '';
    body.hidden = !f || custom;
    weekly.hidden = f !== 'WEEKLY';
    monthMode.hidden = f !== 'MONTHLY';
    until.hidden = ends.value !== 'until';
    count.hidden = ends.value !== 'count';
    document.getElementById('rec-count-unit') && (document.getElementById('rec-count-unit').hidden = ends.value !== 'count');
    if (f === 'MONTHLY') monthOptions();
    if (!custom) raw.value = build();
    explainNow();
  }

  const explainNow = debounce(async () => {
    const rule = build();
    if (!rule) { explain.textContent = 'Once'; explain.dataset.rule = ''; return; }
    const s = getStart();
    try {
      const r2 = await get('/v1/recurrence/explain' + qs({ rrule: rule, start: `${T.dateKey(s)}T${s.time || '00:00'}:00` }));
      explain.textContent = r2.text.charAt(0).toUpperCase() + r2.text.slice(1);
      explain.dataset.rule = r2.rrule;
      explain.classList.remove('error');
    } catch (e) {
      explain.textContent = e.message;
      explain.classList.add('error');
    }
  }, 200);

  for (const el of [freq, interval, ends, until, count, monthMode]) el.addEventListener('input', sync);
  weekly.addEventListener('change', sync);
  raw.addEventListener('input', () => { custom = true; body.hidden = true; explainNow(); });
  const fs = h('fieldset', h('legend', 'Repeat'), h('div.row', freq,
    h('button.link', { type: 'button', onclick: () => { custom = false; sync(); } }, 'Use editor')),
  body, h('div.row', h('label.inline', { for: 'rec-raw' }, 'Rule'), raw), explain);
  return {
    el: fs,
    rule: build,
    refresh: sync,
    setUntil(fn) { untilValue = fn; },
    init() {
      if (!r.freq) freq.value = '';
      // A new weekly rule starts on the start's weekday.
      freq.addEventListener('change', () => {
        if (freq.value === 'WEEKLY' && !days.some(l => l.firstChild.checked)) {
          const wd = T.weekday(getStart());
          days[wd].firstChild.checked = true;
        }
      });
      sync();
    },
  };
}

// ---- the editor dialog ----

function wallOf(obj) {
  if (obj.date) return { date: obj.date, time: '' };
  return { date: obj.date_time.slice(0, 10), time: obj.date_time.slice(11, 16) };
}

// An event time as the dialog writes it: wall time without the offset.
function norm(t) {
  if (t.date) return { date: t.date };
  return { date_time: t.date_time.slice(0, 19), time_zone: t.time_zone };
}

function editor(ev, series, reload) {
  const isNew = !ev.id;
  const tzName = ev.start.time_zone || state.tz;
  const allDay0 = !!ev.start.date;
  const s0 = wallOf(ev.start), e0 = wallOf(ev.end);
  if (allDay0) e0.date = T.dateKey(T.addDays(T.parseDate(e0.date), -1)); // shown inclusive
  const recurrence = (series || ev).recurrence || [];
  const rule0 = (recurrence.find(x => /^RRULE:/i.test(x)) || '').replace(/^RRULE:/i, '');

  modal(isNew ? 'New event' : 'Edit event', (body, close) => {
    const inp = (id, label, attrs) => [h('label', { for: id }, label), h('input', { id, ...attrs })];
    const [lTitle, title] = inp('ev-title', 'Title', { value: ev.summary || '', required: true, autocomplete: 'off' });
    const allDay = h('input', { id: 'ev-allday', type: 'checkbox', checked: allDay0 });
    const sDate = h('input', { id: 'ev-start-date', type: 'date', value: s0.date, 'aria-label': 'Start date', required: true });
    const sTime = h('input', { id: 'ev-start-time', type: 'time', value: s0.time || '09:00', 'aria-label': 'Start time' });
    const eDate = h('input', { id: 'ev-end-date', type: 'date', value: e0.date, 'aria-label': 'End date', required: true });
    const eTime = h('input', { id: 'ev-end-time', type: 'time', value: e0.time || '10:00', 'aria-label': 'End time' });
    const zone = h('select', { id: 'ev-tz', 'aria-label': 'Event time zone' },
      [...new Set([tzName, state.tz, ...T.zones()])].map(z => h('option', { value: z, selected: z === tzName }, z)));
    const getStart = () => ({ ...T.parseDate(sDate.value || s0.date), time: allDay.checked ? '' : sTime.value });
    const rec = recurrenceEditor(rule0, getStart);
    rec.setUntil(d => {
      if (allDay.checked) return d.replaceAll('-', '');
      const p = T.parseDate(d);
      const ms = T.instant(p.y, p.m, p.d, 23, 59, zone.value) + 59000;
      return new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d+/, '');
    });
    const [lGuests, guests] = inp('ev-guests', 'Guests (emails, comma separated)',
      { value: (ev.attendees || []).map(a => a.email).join(', '), type: 'text', autocomplete: 'off' });
    const busy = h('div.busy', { id: 'ev-busy', 'aria-live': 'polite' });
    const reminders = reminderEditor(ev.reminders || []);
    const [lLoc, loc] = inp('ev-location', 'Location', { value: ev.location || '' });
    const desc = h('textarea', { id: 'ev-desc', rows: 2 }, ev.description || '');
    const err = h('p.error', { role: 'alert', id: 'ev-error' });

    const timeShown = () => { sTime.hidden = eTime.hidden = zone.hidden = allDay.checked; rec.refresh(); };
    allDay.addEventListener('change', timeShown);
    sDate.addEventListener('change', () => {
      if (!eDate.value || eDate.value < sDate.value) eDate.value = sDate.value;
      rec.refresh(); freeBusy();
    });
    sTime.addEventListener('change', () => { rec.refresh(); freeBusy(); });

    const freeBusy = debounce(async () => {
      const emails = guests.value.split(',').map(s => s.trim()).filter(Boolean);
      if (!emails.length || !sDate.value) { busy.replaceChildren(); return; }
      const d = T.parseDate(sDate.value), tz = allDay.checked ? state.tz : zone.value;
      const from = T.instant(d.y, d.m, d.d, 0, 0, tz), to = T.instant(...Object.values(T.addDays(d, 1)), 0, 0, tz);
      try {
        const r = await post('/v1/freebusy', { users: emails, from: new Date(from).toISOString(), to: new Date(to).toISOString() });
        const pick = allDay.checked ? null : [T.instant(d.y, d.m, d.d, ...sTime.value.split(':').map(Number), tz),
          T.instant(...Object.values(T.parseDate(eDate.value)), ...eTime.value.split(':').map(Number), tz)];
        busy.replaceChildren(h('strong', `Busy on ${sDate.value}:`), h('ul', Object.entries(r.users).map(([who, u]) => {
          if (u.error) return h('li', `${who}: not a user here`);
          const clash = pick && u.busy.some(b => Date.parse(b.start) < pick[1] && Date.parse(b.end) > pick[0]);
          const spans = u.busy.map(b => `${T.hm(T.wall(Date.parse(b.start), tz))}–${T.hm(T.wall(Date.parse(b.end), tz))}`);
          return h('li', { class: clash ? 'error' : null }, `${who}: ${spans.length ? spans.join(', ') : 'free all day'}${clash ? ' (conflicts)' : ''}`);
        })));
      } catch (e) { busy.textContent = 'Free/busy unavailable: ' + e.message; }
    }, 400);
    guests.addEventListener('input', freeBusy);

    const form = h('form', { onsubmit: e => { e.preventDefault(); save(); } },
      lTitle, title,
      h('div.row', h('label.inline', allDay, 'All day')),
      h('div.row', h('span', 'Starts'), sDate, sTime, h('span', 'Ends'), eDate, eTime),
      h('div.row', h('label.inline', { for: 'ev-tz' }, 'Time zone'), zone),
      rec.el,
      lGuests, guests, busy,
      !isNew ? attendeeList(ev) : null,
      reminders.el,
      lLoc, loc, h('label', { for: 'ev-desc' }, 'Description'), desc, err,
      h('div.actions',
        !isNew ? h('button.danger', { type: 'button', onclick: remove }, 'Delete') : null,
        h('span.grow'),
        h('button', { type: 'button', onclick: close }, 'Cancel'),
        h('button.primary', { type: 'submit', id: 'ev-save' }, 'Save')));
    body.append(form);
    rec.init();
    timeShown();
    freeBusy();
    title.focus();

    function fields() {
      const tz = zone.value;
      const start = allDay.checked ? { date: sDate.value } : { date_time: `${sDate.value}T${sTime.value}:00`, time_zone: tz };
      const end = allDay.checked ? { date: T.dateKey(T.addDays(T.parseDate(eDate.value), 1)) }
        : { date_time: `${eDate.value}T${eTime.value}:00`, time_zone: tz };
      const rule = rec.rule();
      return {
        summary: title.value, location: loc.value, description: desc.value, start, end,
        recurrence: rule ? ['RRULE:' + rule, ...recurrence.filter(x => !/^RRULE:/i.test(x))] : [],
        attendees: guests.value.split(',').map(s => s.trim()).filter(Boolean).map(email => ({ email })),
        reminders: reminders.value(),
      };
    }

    // Only what changed: PATCH merges, and an unchanged time or rule
    // sent again could still drop a series' overrides.
    function changes(f, orig, keys) {
      const out = {};
      for (const k of keys) if (JSON.stringify(f[k]) !== JSON.stringify(orig[k])) out[k] = f[k];
      return out;
    }

    async function save() {
      err.textContent = '';
      const f = fields();
      const orig = {
        summary: ev.summary || '', location: ev.location || '', description: ev.description || '',
        start: norm(ev.start), end: norm(ev.end), recurrence: (series || ev).recurrence || [],
        attendees: (ev.attendees || []).map(a => ({ email: a.email })),
        reminders: (ev.reminders || []).map(r => ({ method: r.method, minutes_before: r.minutes_before })),
      };
      const all = ['summary', 'location', 'description', 'start', 'end', 'recurrence', 'attendees', 'reminders'];
      try {
        if (isNew) await post('/v1/events', f);
        else if (ev.recurring_event_id) {
          const scope = await askScope('Change');
          if (!scope) return;
          const base = `/v1/events/${ev.recurring_event_id}`;
          if (scope === 'this') {
            await patch(`${base}/instances/${originalOf(ev)}`, changes(f, orig, ['summary', 'location', 'description', 'start', 'end']));
          } else if (scope === 'following') {
            await patch(`${base}/instances/${originalOf(ev)}?scope=following`, changes(f, orig, all));
          } else {
            // The series keeps its first date, moved by as many days as
            // this instance was.
            const shift = T.daysBetween(T.parseDate(s0.date), T.parseDate(sDate.value));
            const len = T.daysBetween(T.parseDate(sDate.value), T.parseDate(eDate.value));
            const first = T.addDays(T.parseDate(wallOf(series ? series.start : ev.start).date), shift);
            const last = T.dateKey(T.addDays(first, len));
            const timesChanged = JSON.stringify([f.start, f.end]) !== JSON.stringify([orig.start, orig.end]);
            if (f.start.date) { f.start.date = T.dateKey(first); f.end.date = T.dateKey(T.addDays(first, len + 1)); }
            else { f.start.date_time = T.dateKey(first) + f.start.date_time.slice(10); f.end.date_time = last + f.end.date_time.slice(10); }
            const body = changes(f, orig, ['summary', 'location', 'description', 'recurrence', 'attendees', 'reminders']);
            if (timesChanged) Object.assign(body, { start: f.start, end: f.end });
            await patch(base, body);
          }
        } else await patch(`/v1/events/${ev.id}`, changes(f, orig, all));
        close();
        toast(isNew ? 'Event created' : 'Event saved');
        reload();
      } catch (e) {
        err.textContent = (e.field ? e.field + ': ' : '') + e.message;
      }
    }

    async function remove() {
      try {
        if (ev.recurring_event_id) {
          const scope = await askScope('Delete');
          if (!scope) return;
          const base = `/v1/events/${ev.recurring_event_id}`;
          if (scope === 'this') await del(`${base}/instances/${originalOf(ev)}`);
          else if (scope === 'following') await del(`${base}/instances/${originalOf(ev)}?scope=following`);
          else await del(base);
        } else await del(`/v1/events/${ev.id}`);
        close();
        toast('Event deleted');
        reload();
      } catch (e) { err.textContent = e.message; }
    }
  });
}

function askScope(verb) {
  return new Promise(resolve => {
    let done = false;
    const finish = v => { if (!done) { done = true; resolve(v); } };
    const { dlg } = modal(`${verb} recurring event`, (body, close) => {
      const opts = [['this', 'This event'], ['following', 'This and following events'], ['all', 'All events']];
      const radios = opts.map(([v, t], i) => h('label.inline', h('input', { type: 'radio', name: 'scope', value: v, checked: i === 0 }), t));
      body.append(h('form', {
        onsubmit: e => { e.preventDefault(); finish(new FormData(e.target).get('scope')); close(); },
      }, h('fieldset', h('legend', 'Apply to'), radios.map(r => h('div', r))),
      h('div.actions', h('button', { type: 'button', onclick: () => { finish(null); close(); } }, 'Cancel'),
        h('button.primary', { type: 'submit', id: 'scope-ok' }, 'OK'))));
    });
    dlg.addEventListener('close', () => finish(null));
  });
}
