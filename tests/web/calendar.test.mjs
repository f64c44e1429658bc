// Sign up in the browser; create a weekly series across the start of US
// daylight saving time with the recurrence editor (its English shown as it
// is edited) and see every instance at 09:00 wall time in the month view;
// edit one instance only.
import { run, context, shot, assert, noErrors } from './lib.mjs';

await run('calendar', async ({ server, browser }) => {
  const { page } = await context(browser, server, { tz: 'America/New_York' });
  await page.goto('/');
  await page.waitForURL('**/hot');
  await page.locator('#account').getByRole('link', { name: 'Sign up' }).click();
  await page.getByLabel('Name').fill('Ada');
  const email = `ada-${Date.now()}@example.com`;
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.waitForURL('**/calendar');
  await page.locator('#cal-grid[aria-busy="false"]').waitFor();

  // The session survives a reload.
  await page.reload();
  await page.locator('#cal-grid[aria-busy="false"]').waitFor();
  assert(await page.getByRole('button', { name: 'Sign out' }).isVisible(), 'still signed in after reload');

  // March 2027: DST starts on Sunday the 14th in New York.
  await page.goto('/calendar?view=month&date=2027-03-01');
  await page.locator('#cal-grid[aria-busy="false"]').waitFor();
  await page.getByRole('button', { name: 'New event on Mon 2027-03-01' }).click();
  const dlg = page.getByRole('dialog', { name: 'New event' });
  await dlg.getByLabel('Title').fill('Team sync');
  await dlg.locator('#rec-freq').selectOption('WEEKLY');
  await dlg.locator('#rec-ends').selectOption('count');
  await dlg.locator('#rec-count').fill('4');
  const explain = dlg.locator('#rec-explain');
  await page.waitForFunction(() => /4 times/.test(document.querySelector('#rec-explain')?.textContent || ''));
  const text = await explain.textContent();
  assert(/^Weekly on Monday/.test(text), 'explain text: ' + text);
  await dlg.locator('#ev-save').click();
  await dlg.waitFor({ state: 'detached' });
  await page.locator('#cal-grid[aria-busy="false"]').waitFor();
  for (const d of ['2027-03-01', '2027-03-08', '2027-03-15', '2027-03-22']) {
    const chip = page.locator(`.day[data-date="${d}"] .ev`);
    await chip.first().waitFor();
    const t = await chip.first().textContent();
    assert(t === '09:00 Team sync', `${d}: ${t}`);
  }
  assert(await page.locator('.day[data-date="2027-03-29"] .ev').count() === 0, 'COUNT=4 ends the series');
  // Same wall time, different UTC instants on each side of the change.
  const session = await page.evaluate(() => JSON.parse(localStorage.getItem('chime.session')));
  const list = await server.api('GET', '/v1/events?from=2027-03-01T00:00:00Z&to=2027-03-31T00:00:00Z', undefined, session.token);
  const ids = list.json.items.map(e => e.id.split('_')[1]);
  assert(JSON.stringify(ids) === JSON.stringify(['20270301T140000Z', '20270308T140000Z', '20270315T130000Z', '20270322T130000Z']), ids.join(' '));

  // Edit one instance: this event only.
  await page.locator('.day[data-date="2027-03-15"] .ev').first().click();
  const ed = page.getByRole('dialog', { name: 'Edit event' });
  await ed.getByLabel('Title').fill('Team sync (moved)');
  await ed.locator('#ev-start-time').fill('10:30');
  await ed.locator('#ev-end-time').fill('11:00');
  await ed.locator('#ev-save').click();
  const scope = page.getByRole('dialog', { name: 'Change recurring event' });
  await scope.getByLabel('This event', { exact: true }).check();
  await scope.locator('#scope-ok').click();
  await page.waitForFunction(() => document.querySelector('.day[data-date="2027-03-15"] .ev')?.textContent === '10:30 Team sync (moved)');
  for (const d of ['2027-03-01', '2027-03-08', '2027-03-22'])
    assert(await page.locator(`.day[data-date="${d}"] .ev`).first().textContent() === '09:00 Team sync', d + ' unchanged');

  // Week view shows the moved one at its time.
  await page.goto('/calendar?view=week&date=2027-03-15');
  await page.locator('.daycol[data-date="2027-03-15"] .ev').waitFor();
  await page.goto('/calendar?view=month&date=2027-03-01');
  await page.locator('#cal-grid[aria-busy="false"]').waitFor();
  await shot(page, 'calendar-month');

  // Delete this and following from the 8th: the series ends before it.
  await page.locator('.day[data-date="2027-03-08"] .ev').first().click();
  await page.getByRole('dialog', { name: 'Edit event' }).getByRole('button', { name: 'Delete' }).click();
  const dscope = page.getByRole('dialog', { name: 'Delete recurring event' });
  await dscope.getByLabel('This and following events').check();
  await dscope.locator('#scope-ok').click();
  await page.waitForFunction(() => document.querySelector('#cal-grid[aria-busy="false"]')
    && !document.querySelector('.day[data-date="2027-03-08"] .ev') && document.querySelector('.day[data-date="2027-03-01"] .ev'));
  assert(await page.locator('.day[data-date="2027-03-22"] .ev').count() === 0, 'the 22nd is gone');

  noErrors(page);
});
