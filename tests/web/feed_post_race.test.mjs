// A post made while the timeline is still loading (web/feed failed so once
// under load): the page read the timeline before the post and drew that
// older answer after it, over the post the author had just been shown.
// Here the first read of the timeline is answered by the server before the
// post and handed to the page only after it: the author's post must still
// be on the page, once.
import { run, context, assert, noErrors } from './lib.mjs';

await run('feed_post_race', async ({ server, browser }) => {
  const ann = await server.user('Ann');
  const { page } = await context(browser, server, { session: ann.session });

  let release, answered;
  const gate = new Promise(r => { release = r; });
  const fetched = new Promise(r => { answered = r; });
  let held = 0;
  await page.route('**/v1/timeline?limit=20', async route => {
    if (held++ > 0) return route.continue();
    const response = await route.fetch(); // the server answers now: no post yet
    answered();
    await gate;
    return route.fulfill({ response });
  });

  await page.goto('/feed');
  await fetched;
  await page.locator('#compose').fill('Posted while loading');
  await page.getByRole('button', { name: 'Post', exact: true }).click();
  const mine = page.locator('#timeline .post', { hasText: 'Posted while loading' });
  await mine.waitFor();
  release();
  await page.waitForLoadState('networkidle');
  await page.waitForTimeout(500);

  assert(held === 1, `the timeline was read ${held} times`);
  const n = await mine.count();
  assert(n === 1, `the post is shown ${n} times once the timeline has loaded`);
  noErrors(page);
});
