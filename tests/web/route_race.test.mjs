// A route started while the previous one's page is still loading (here:
// the time zone changed while the calendar waits for /v1/calendars, as
// pages.test.mjs did by chance once): the page must be drawn once, by the
// newer route. Before, both routes cleared the page and then, their data
// in, each added its own copy, so the calendar showed twice.
import { run, context, assert, noErrors } from './lib.mjs';

await run('route_race', async ({ server, browser }) => {
  const ann = await server.user('Ann');
  const { page } = await context(browser, server, { session: ann.session });
  await page.goto('/calendar');
  await page.locator('#cal-grid[aria-busy="false"]').waitFor();

  // The next read of the calendars waits until the zone has changed.
  let release;
  const gate = new Promise(r => { release = r; });
  let held = 0;
  await page.route('**/v1/calendars', async route => {
    if (held++ === 0) await gate;
    return route.continue();
  });
  await page.getByRole('button', { name: 'Today' }).click();
  for (let i = 0; i < 250 && held < 1; i++) await page.waitForTimeout(20);
  assert(held === 1, 'the calendar page did not read /v1/calendars');
  await page.locator('#tz-select').selectOption('Asia/Tokyo');
  await page.getByText('Times in Asia/Tokyo.').waitFor();
  release();
  await page.waitForTimeout(1500);
  await page.waitForLoadState('networkidle');

  const copies = await page.locator('#cal-grid').count();
  assert(copies === 1, `the calendar is drawn ${copies} times`);
  const zones = await page.locator('main p.muted', { hasText: /^Times in / }).allInnerTexts();
  assert(zones.length === 1 && zones[0] === 'Times in Asia/Tokyo.', `zone lines: ${JSON.stringify(zones)}`);
  assert(held >= 2, `the calendars were read ${held} times`);
  noErrors(page);
});
