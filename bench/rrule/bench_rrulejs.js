// rrule.js on the same work as bench.c (see bench_dateutil.py). rrule.js
// works on JavaScript Dates; floating times are given as UTC, as its README
// recommends, so no zone arithmetic is involved.
const fs = require('fs');
const { rrulestr } = require('rrule');

const d = process.argv[2];
const nq = parseInt(process.argv[3] || '60', 10);
const P = (s) => new Date(Date.UTC(+s.slice(0, 4), +s.slice(4, 6) - 1, +s.slice(6, 8),
  +s.slice(9, 11), +s.slice(11, 13), +s.slice(13, 15)));
const F = (x) => x.toISOString().replace(/[-:]/g, '').slice(0, 15);
const rules = fs.readFileSync(d + '/rules.txt', 'utf8').trim().split('\n').map((l) => {
  const i = l.indexOf(' ');
  return [l.slice(0, i), l.slice(i + 1)];
});
const queries = fs.readFileSync(d + '/queries.txt', 'utf8').trim().split('\n').map((l) => l.split(' '));
const now = () => Number(process.hrtime.bigint()) / 1e9;

let total = 0;
let t0 = now();
while (now() - t0 < 3) {
  for (const [dt, text] of rules) {
    const r = rrulestr(text, { dtstart: P(dt) });
    total += r.all((_, i) => i < 1000).length;
  }
}
const a = total / (now() - t0);
console.log(`expand  rrule.js ${a.toFixed(0).padStart(12)} occurrences/s`);

let n = 0;
let wrong = 0;
t0 = now();
for (const [dt, t, want, text] of queries.slice(0, nq)) {
  const got = rrulestr(text, { dtstart: P(dt) }).after(P(t), false);
  if ((got ? F(got) : 'none') !== want) wrong++;
  n++;
}
const b = n / (now() - t0);
console.log(`next    rrule.js ${b.toFixed(1).padStart(12)} queries/s   (${wrong} wrong of ${n})`);
console.log(`RATES rrulejs_expand=${a.toFixed(0)} rrulejs_next=${b.toFixed(2)}`);
