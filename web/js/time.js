// time.js -- civil dates and IANA zones with Intl only: what wall time an
// instant is in a zone, which instant a wall time in a zone is, and the
// date arithmetic of the calendar views (dates as {y, m, d}, m 1-12).
const fmts = new Map();

function fmt(tz) {
  let f = fmts.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric',
      hour: 'numeric', minute: 'numeric', second: 'numeric',
    });
    fmts.set(tz, f);
  }
  return f;
}

// The wall time of instant ms (Unix ms) in tz: {y, m, d, hh, mm, ss}.
export function wall(ms, tz) {
  const p = {};
  for (const { type, value } of fmt(tz).formatToParts(ms)) p[type] = value;
  return { y: +p.year, m: +p.month, d: +p.day, hh: +p.hour % 24, mm: +p.minute, ss: +p.second };
}

export function offsetMs(ms, tz) {
  const w = wall(ms, tz);
  return Date.UTC(w.y, w.m - 1, w.d, w.hh, w.mm, w.ss) - Math.floor(ms / 1000) * 1000;
}

// The instant of a wall time in tz (in a gap, the offset before it).
export function instant(y, m, d, hh = 0, mm = 0, tz = 'UTC') {
  const guess = Date.UTC(y, m - 1, d, hh, mm);
  const o1 = offsetMs(guess, tz);
  const o2 = offsetMs(guess - o1, tz);
  return guess - (o2 === o1 ? o1 : o2);
}

export const pad = n => String(n).padStart(2, '0');
export const dateKey = ({ y, m, d }) => `${y}-${pad(m)}-${pad(d)}`;
export function parseDate(s) {
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(s || '');
  return m ? { y: +m[1], m: +m[2], d: +m[3] } : null;
}
export function addDays({ y, m, d }, n) {
  const t = new Date(Date.UTC(y, m - 1, d + n));
  return { y: t.getUTCFullYear(), m: t.getUTCMonth() + 1, d: t.getUTCDate() };
}
export function addMonths({ y, m }, n) {
  const t = new Date(Date.UTC(y, m - 1 + n, 1));
  return { y: t.getUTCFullYear(), m: t.getUTCMonth() + 1, d: 1 };
}
export const weekday = ({ y, m, d }) => (new Date(Date.UTC(y, m - 1, d)).getUTCDay() + 6) % 7; // 0 = Monday
export const daysBetween = (a, b) => Math.round((Date.UTC(b.y, b.m - 1, b.d) - Date.UTC(a.y, a.m - 1, a.d)) / 864e5);
export const sameDay = (a, b) => a.y === b.y && a.m === b.m && a.d === b.d;
export const hm = w => `${pad(w.hh)}:${pad(w.mm)}`;

export function today(tz) {
  const w = wall(Date.now(), tz);
  return { y: w.y, m: w.m, d: w.d };
}

export const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September',
  'October', 'November', 'December'];
export const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

export function localZone() {
  try { return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'; } catch { return 'UTC'; }
}

export function zones() {
  try { return Intl.supportedValuesOf('timeZone'); } catch { return ['UTC', localZone()]; }
}

// "2026-11-24T17:25:41.008Z" -> "Nov 24, 17:25" in tz (or "17:25" today).
export function shortStamp(iso, tz) {
  const ms = Date.parse(iso);
  if (isNaN(ms)) return '';
  const w = wall(ms, tz), t = today(tz);
  return sameDay(w, t) ? hm(w) : `${MONTHS[w.m - 1].slice(0, 3)} ${w.d}, ${hm(w)}`;
}
