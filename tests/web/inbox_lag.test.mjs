// The Notifications page open while a push reminder fires: the WebSocket's
// reminder frame makes the page reload the list. On PostgreSQL the inbox
// lists a row only once every older write transaction has ended (cursors
// never skip a row; src/notify/notify_http.c), so the frame can arrive a
// moment before GET /v1/notifications shows the row. Here that answer is
// played once at the network (the server runs on SQLite, where the row is
// listed at once): the page must still come to show the reminder, and the
// unread count with it.
import { run, context, assert, noErrors, pushReminderSoon } from './lib.mjs';

await run('inbox_lag', async ({ server, browser }) => {
  const ann = await server.user('Ann');
  const { page } = await context(browser, server, { session: ann.session });
  await page.goto('/notifications');
  await page.locator('#notifications li.muted', { hasText: 'No notifications yet' }).waitFor();
  await page.waitForFunction(() => performance.getEntriesByType('resource').some(e => e.name.includes('/v1/ws/tickets')));
  await page.waitForTimeout(300);

  // The first list read from here on, the one the frame sets off, answers
  // as PostgreSQL does while an older transaction is still open: without
  // the new row.
  let held = 0;
  await page.route('**/v1/notifications?*', async route => {
    if (held > 0) return route.continue();
    held++;
    const resp = await route.fetch();
    const body = await resp.json();
    body.items = body.items.filter(n => n.summary !== 'Standup now');
    if (!body.items.length) body.next = new URL(route.request().url()).searchParams.get('after');
    return route.fulfill({ response: resp, json: body });
  });

  await pushReminderSoon(server, ann.token, 'Standup now');

  await page.locator('.toast.reminder', { hasText: 'Reminder: Standup now' }).waitFor({ timeout: 30000 });
  await page.locator('#notifications li.unread', { hasText: 'Standup now' }).waitFor({ timeout: 5000 });
  assert(held === 1, `the lagging answer was played ${held} times`);
  const badge = await page.getByRole('link', { name: /Notifications/ }).innerText();
  assert(/1/.test(badge), `the unread count shows the reminder: "${badge}"`);
  noErrors(page);
});
