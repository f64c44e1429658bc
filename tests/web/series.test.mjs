// "This and following" edit of a recurring series from the dialog: a later
// instance gets a new time and title; the earlier instances (one of them
// changed alone before) keep theirs, the later ones take the new ones, in
// the month and week views and in the API (the series is split in two).
import { run, context, assert, noErrors, shot } from './lib.mjs';

await run('series', async ({ server, browser }) => {
  const ann = await server.user('Ann');
  const TZ = 'Europe/Berlin';
  // Mondays 2027-05-03 to 2027-06-07, 09:00-10:00 Berlin (UTC+2 all along).
  const ev = await server.api('POST', '/v1/events', {
    summary: 'Sync', start: { date_time: '2027-05-03T09:00:00', time_zone: TZ }, end: { date_time: '2027-05-03T10:00:00', time_zone: TZ },
    recurrence: ['RRULE:FREQ=WEEKLY;COUNT=6'],
  }, ann.token);
  assert(ev.status === 201, ev.text);
  const id = ev.json.id;
  // The 10th was changed alone before: it must stay as it is.
  const one = await server.api('PATCH', `/v1/events/${id}/instances/20270510T070000Z`, {
    summary: 'Sync (one-off)', start: { date_time: '2027-05-10T10:00:00', time_zone: TZ }, end: { date_time: '2027-05-10T11:00:00', time_zone: TZ },
  }, ann.token);
  assert(one.status === 200, one.text);

  const { page } = await context(browser, server, { session: ann.session, tz: TZ });
  await page.goto('/calendar?view=month&date=2027-05-01');
  await page.locator('#cal-grid[aria-busy="false"]').waitFor();
  const chipText = d => page.locator(`.day[data-date="${d}"] .ev`).first().textContent();
  assert(await chipText('2027-05-17') === '09:00 Sync', 'before the edit');

  await page.locator('.day[data-date="2027-05-17"] .ev').first().click();
  const ed = page.getByRole('dialog', { name: 'Edit event' });
  await ed.getByLabel('Title').fill('Sync (afternoons)');
  await ed.locator('#ev-start-time').fill('14:00');
  await ed.locator('#ev-end-time').fill('15:00');
  await ed.locator('#ev-save').click();
  const scope = page.getByRole('dialog', { name: 'Change recurring event' });
  await scope.getByLabel('This and following events').check();
  await scope.locator('#scope-ok').click();
  await scope.waitFor({ state: 'detached' });
  await page.waitForFunction(() => document.querySelector('#cal-grid[aria-busy="false"] .day[data-date="2027-05-17"] .ev')?.textContent
    === '14:00 Sync (afternoons)');

  // Month view: before the 17th as they were, from it on the new time.
  const want = {
    '2027-05-03': '09:00 Sync', '2027-05-10': '10:00 Sync (one-off)',
    '2027-05-17': '14:00 Sync (afternoons)', '2027-05-24': '14:00 Sync (afternoons)', '2027-05-31': '14:00 Sync (afternoons)',
  };
  for (const [d, t] of Object.entries(want)) {
    assert(await page.locator(`.day[data-date="${d}"] .ev`).count() === 1, d + ': one event');
    assert(await chipText(d) === t, `${d}: ${await chipText(d)}`);
  }
  await shot(page, 'series-following');
  // Week views on each side: the last instance and an early one.
  await page.goto('/calendar?view=week&date=2027-06-07');
  await page.locator('.daycol[data-date="2027-06-07"] .ev', { hasText: '14:00 Sync (afternoons)' }).waitFor();
  assert(await page.locator('.ev').count() === 1, 'one in that week');
  await page.goto('/calendar?view=week&date=2027-05-03');
  await page.locator('.daycol[data-date="2027-05-03"] .ev', { hasText: '09:00 Sync' }).waitFor();

  // The API: two series, six instances in all, the first keeping the override.
  const list = await server.api('GET', '/v1/events?from=2027-05-01T00:00:00Z&to=2027-07-01T00:00:00Z', undefined, ann.token);
  const got = list.json.items.map(e => `${e.start.date_time} ${e.summary}`);
  assert(JSON.stringify(got) === JSON.stringify([
    '2027-05-03T09:00:00+02:00 Sync', '2027-05-10T10:00:00+02:00 Sync (one-off)',
    '2027-05-17T14:00:00+02:00 Sync (afternoons)', '2027-05-24T14:00:00+02:00 Sync (afternoons)',
    '2027-05-31T14:00:00+02:00 Sync (afternoons)', '2027-06-07T14:00:00+02:00 Sync (afternoons)',
  ]), got.join('\n'));
  const series = new Set(list.json.items.map(e => e.recurring_event_id));
  assert(series.size === 2 && series.has(id), 'split in two: ' + [...series].join(' '));
  const old = await server.api('GET', `/v1/events/${id}`, undefined, ann.token);
  assert(old.json.summary === 'Sync' && old.json.start.date_time === '2027-05-03T09:00:00+02:00', 'the first series kept its start: ' + old.text);
  noErrors(page);
});
