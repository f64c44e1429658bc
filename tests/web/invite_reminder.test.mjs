// An invitee sets their own reminder while answering an invitation (from
// the invitations panel's details): it is stored as theirs (the event's own
// list is untouched), shown when the event is opened again, and it pops up
// in the invitee's page when it fires.
import { run, context, assert, noErrors, shot } from './lib.mjs';

await run('invite_reminder', async ({ server, browser }) => {
  const ann = await server.user('Ann');
  const bob = await server.user('Bob');
  // Due in about 30 s: Bob's reminder will be 1 minute before the start.
  const start = new Date(Date.now() + 90000);
  start.setUTCMilliseconds(0);
  const end = new Date(start.getTime() + 15 * 60000);
  const iso = d => d.toISOString().replace('.000', '');
  const ev = await server.api('POST', '/v1/events', {
    summary: 'Quick sync', start: { date_time: iso(start), time_zone: 'UTC' }, end: { date_time: iso(end), time_zone: 'UTC' },
    attendees: [{ email: bob.email }], reminders: [],
  }, ann.token);
  assert(ev.status === 201, ev.text);
  const id = ev.json.id;
  const due = start.getTime() - 60000;

  const { page } = await context(browser, server, { session: bob.session });
  await page.goto('/calendar');
  await page.locator('#cal-grid[aria-busy="false"]').waitFor();
  await page.waitForFunction(() => performance.getEntriesByType('resource').some(e => e.name.includes('/v1/ws/tickets')));

  // The invitation's details: no reminders yet (the organizer set none).
  const card = page.locator(`[data-invitation="${id}"]`);
  await card.getByRole('button', { name: 'Details and reminders of Quick sync' }).click();
  const dlg = page.getByRole('dialog', { name: 'Quick sync' });
  await dlg.getByText('The organizer\'s reminders, until you change them.').waitFor();
  assert(await dlg.locator('.reminder').count() === 0, 'no reminders to start with');
  assert(!/null|undefined/.test(await dlg.textContent()), 'no "null" for the missing location: ' + await dlg.textContent());
  await dlg.getByRole('button', { name: 'Add reminder' }).click();
  await dlg.getByLabel('Reminder method').selectOption('push');
  await dlg.getByLabel('Minutes before').fill('1');
  await dlg.getByRole('button', { name: 'Accept' }).click();
  await dlg.waitFor({ state: 'detached' });
  await card.waitFor({ state: 'detached' });

  // Stored as Bob's own; the event's list is unchanged.
  const got = await server.api('GET', `/v1/events/${id}`, undefined, bob.token);
  const me = got.json.attendees.find(a => a.self);
  assert(me.response_status === 'accepted', 'answered: ' + got.text);
  assert(JSON.stringify(me.reminders) === '[{"method":"push","minutes_before":1}]', 'own reminders: ' + got.text);
  const org = await server.api('GET', `/v1/events/${id}`, undefined, ann.token);
  assert(JSON.stringify(org.json.reminders) === '[]', 'the event keeps its own list: ' + org.text);

  // Shown when the event is opened again.
  await page.locator('.ev', { hasText: 'Quick sync' }).first().click();
  const again = page.getByRole('dialog', { name: 'Quick sync' });
  await again.getByText('These are your own reminders.').waitFor();
  assert(await again.locator('#my-answer').textContent() === 'accepted', 'the answer shown');
  assert(await again.getByLabel('Minutes before').inputValue() === '1', 'the reminder shown');
  await again.getByRole('button', { name: 'Close' }).click();

  // It fires for Bob, on time.
  const toast = page.locator('.toast.reminder', { hasText: 'Reminder: Quick sync' });
  await toast.waitFor({ timeout: 60000 });
  const late = Date.now() - due;
  assert(late > -1000 && late < 8000, `popped up ${late} ms after it was due`);
  await shot(page, 'invite-reminder');
  // Ann, who set no reminder, got none.
  const inbox = await server.api('GET', '/v1/notifications', undefined, ann.token);
  assert(inbox.json.items.length === 0, 'nothing for the organizer: ' + inbox.text);
  noErrors(page);
});
