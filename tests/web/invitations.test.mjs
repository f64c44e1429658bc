// Invite by email with the guest's free/busy in the dialog; the guest
// answers from the invitations panel and the organizer sees the answer;
// import an .ics file; make and use the subscription URL.
import path from 'node:path';
import { run, context, assert, noErrors, ROOT } from './lib.mjs';

await run('invitations', async ({ server, browser }) => {
  const ann = await server.user('Ann');
  const bob = await server.user('Bob');
  // Bob is busy 10:00-11:00 UTC on 2027-04-05.
  await server.api('POST', '/v1/events', {
    summary: 'Dentist', start: { date_time: '2027-04-05T10:00:00Z' }, end: { date_time: '2027-04-05T11:00:00Z' },
  }, bob.token);

  const A = await context(browser, server, { session: ann.session });
  await A.page.goto('/calendar?view=month&date=2027-04-01');
  await A.page.locator('#cal-grid[aria-busy="false"]').waitFor();
  await A.page.getByRole('button', { name: 'New event on Mon 2027-04-05' }).click();
  const dlg = A.page.getByRole('dialog', { name: 'New event' });
  await dlg.getByLabel('Title').fill('Review');
  await dlg.locator('#ev-start-time').fill('10:30');
  await dlg.locator('#ev-end-time').fill('11:30');
  await dlg.getByLabel('Guests (emails, comma separated)').fill(bob.email);
  await dlg.locator('#ev-busy li', { hasText: '10:00–11:00 (conflicts)' }).waitFor();
  await dlg.getByRole('button', { name: 'Add reminder' }).click();
  await dlg.locator('#ev-save').click();
  await dlg.waitFor({ state: 'detached' });

  const B = await context(browser, server, { session: bob.session });
  await B.page.goto('/calendar?view=month&date=2027-04-01');
  const inv = B.page.locator('[data-invitation]', { hasText: 'Review' });
  await inv.waitFor();
  await inv.getByRole('button', { name: 'Accept' }).click();
  await inv.waitFor({ state: 'detached' });
  await B.page.locator('.day[data-date="2027-04-05"] .ev', { hasText: 'Review' }).click();
  await B.page.getByRole('dialog', { name: 'Review' }).locator('strong', { hasText: 'accepted' }).waitFor();
  await B.page.getByRole('button', { name: 'Close' }).click();

  await A.page.reload();
  await A.page.locator('.day[data-date="2027-04-05"] .ev', { hasText: 'Review' }).click();
  const ed = A.page.getByRole('dialog', { name: 'Edit event' });
  await ed.locator(`.attendees li`, { hasText: bob.email }).locator('[data-status="accepted"]').waitFor();
  assert(await ed.locator('.reminder').count() === 1, 'the reminder was saved');
  await ed.getByRole('button', { name: 'Cancel' }).click();

  // Import a Google Calendar export.
  await A.page.locator('#ics-file').setInputFiles(path.join(ROOT, 'tests/data/ical/google.ics'));
  await A.page.getByRole('button', { name: 'Import .ics' }).click();
  await A.page.locator('.toast', { hasText: /^Imported [1-9]\d*, updated 0/ }).waitFor();

  // A subscription URL that answers with the calendar.
  await A.page.getByRole('button', { name: 'New subscription URL' }).click();
  await A.page.waitForFunction(() => document.querySelector('#sub-url').value);
  const url = await A.page.locator('#sub-url').inputValue();
  assert(url.startsWith(server.url + '/v1/feeds/'), url);
  const res = await fetch(url);
  assert(res.status === 200 && (await res.text()).includes('SUMMARY:Review'), 'the feed serves the calendar');
  noErrors(A.page, B.page);
});
