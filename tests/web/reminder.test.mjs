// A push reminder pops up in the open page the moment it fires (the
// WebSocket's reminder frame), then shows in the notification list, where
// it can be marked read.
import { run, context, assert, noErrors, shot, pushReminderSoon } from './lib.mjs';

await run('reminder', async ({ server, browser }) => {
  const ann = await server.user('Ann');
  const { page } = await context(browser, server, { session: ann.session });
  await page.goto('/calendar');
  await page.locator('#cal-grid[aria-busy="false"]').waitFor();
  // Wait for the WebSocket to be up (the hello frame set the badge state).
  await page.waitForFunction(() => performance.getEntriesByType('resource').some(e => e.name.includes('/v1/ws/tickets')));
  await page.waitForTimeout(300);

  const due = await pushReminderSoon(server, ann.token, 'Standup now');

  const toast = page.locator('.toast.reminder', { hasText: 'Reminder: Standup now' });
  await toast.waitFor({ timeout: 30000 });
  const late = Date.now() - due;
  // On time: not before it was due, and within a few seconds under the
  // sanitizer build with other tests running beside it.
  assert(late > -1000 && late < 8000, `popped up ${late} ms after it was due`);
  await shot(page, 'reminder');

  await page.getByRole('link', { name: 'Notifications' }).click();
  const item = page.locator('#notifications li.unread', { hasText: 'Standup now' });
  await item.waitFor();
  await item.getByRole('button', { name: 'Mark read' }).click();
  // ("text=read" would match the "Mark read" button itself, at once.)
  await page.locator('#notifications li', { hasText: 'Standup now' }).locator('span.muted', { hasText: /^read$/ }).waitFor();
  assert(await page.locator('#notifications li.unread').count() === 0, 'marked read');
  noErrors(page);
});
