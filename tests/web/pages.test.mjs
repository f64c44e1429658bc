// Every page at desktop and phone width with no console errors, every
// control named for screen readers, no sideways scrolling on a phone;
// signing in with the keyboard alone; the time-zone setting; the admin
// page for the admin only; sign out.
import { run, context, assert, noErrors } from './lib.mjs';

// Controls without an accessible name (a crude but useful check).
function audit(page) {
  return page.evaluate(() => {
    const bad = [];
    const named = el => (el.getAttribute('aria-label') || '').trim() || (el.labels && [...el.labels].some(l => l.textContent.trim()))
      || (el.tagName === 'BUTTON' || el.tagName === 'A' ? el.textContent.trim() : '');
    for (const el of document.querySelectorAll('button, a[href], input:not([type=hidden]), select, textarea'))
      if (el.offsetParent !== null && !named(el)) bad.push(el.outerHTML.slice(0, 120));
    return bad;
  });
}

await run('pages', async ({ server, browser }) => {
  const ann = await server.user('Ann'); // the first user administers the server
  const bob = await server.user('Bob');
  const conv = await server.api('POST', '/v1/conversations', { type: 'direct', user: bob.email }, ann.token);
  await server.api('POST', `/v1/conversations/${conv.json.id}/messages`, { client_msg_id: 'x1', text: 'hi' }, ann.token);
  await server.api('POST', '/v1/posts', { text: 'A post' }, ann.token);

  // Keyboard-only sign-in.
  const K = await context(browser, server);
  await K.page.goto('/signin');
  await K.page.locator('#f-email:focus').waitFor();
  await K.page.keyboard.type(ann.email);
  await K.page.keyboard.press('Tab');
  await K.page.keyboard.type(ann.password);
  await K.page.keyboard.press('Enter');
  await K.page.waitForURL('**/calendar');
  await K.page.locator('nav a', { hasText: 'Admin' }).waitFor();

  const paths = ['/calendar', '/calendar?view=week', '/calendar?view=day', '/chat', '/chat/' + conv.json.id, '/feed',
    '/users/' + bob.user.id, '/notifications', '/admin', '/hot'];
  for (const viewport of [{ width: 1280, height: 860 }, { width: 390, height: 844 }]) {
    const { page } = await context(browser, server, { session: ann.session, viewport });
    for (const p of paths) {
      await page.goto(p);
      await page.waitForLoadState('networkidle');
      await page.locator('main h1').first().waitFor();
      const bad = await audit(page);
      assert(bad.length === 0, `${p} at ${viewport.width}px: unnamed controls:\n${bad.join('\n')}`);
      const wide = await page.evaluate(() => document.scrollingElement.scrollWidth - window.innerWidth);
      assert(wide <= 1, `${p} at ${viewport.width}px scrolls sideways by ${wide}px`);
    }
    noErrors(page);
  }

  // The admin page: counts and jobs.
  await K.page.goto('/admin');
  await K.page.locator('#admin-stats').getByText('registered users').waitFor();
  await K.page.locator('#admin-jobs td', { hasText: 'cleanup' }).first().waitFor();

  // Time zone.
  await K.page.goto('/calendar');
  await K.page.locator('#tz-select').selectOption('Asia/Tokyo');
  await K.page.getByText('Times in Asia/Tokyo.').waitFor();

  // Bob: no admin page.
  const B = await context(browser, server, { session: bob.session });
  await B.page.goto('/calendar');
  await B.page.locator('#cal-grid[aria-busy="false"]').waitFor();
  assert(await B.page.locator('nav a', { hasText: 'Admin' }).count() === 0, 'no admin link for Bob');

  // Sign out, and stay out after a reload.
  await K.page.getByRole('button', { name: 'Sign out' }).click();
  await K.page.waitForURL('**/signin');
  await K.page.reload();
  await K.page.getByRole('heading', { name: 'Sign in' }).waitFor();
  const gone = await server.api('GET', '/v1/me', undefined, ann.token);
  assert(gone.status === 200, 'only that session ended');
  noErrors(K.page, B.page);
});
