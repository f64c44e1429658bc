// A follower follows from the author's profile page; the author posts in
// the browser; the follower's open timeline shows the "1 new post" bar
// (the WebSocket's feed frame) and the post after a click; unfollow.
import { run, context, assert, noErrors, shot } from './lib.mjs';

await run('feed', async ({ server, browser }) => {
  const ann = await server.user('Ann');
  const bob = await server.user('Bob');
  const A = await context(browser, server, { session: ann.session });
  const B = await context(browser, server, { session: bob.session });

  await B.page.goto('/users/' + ann.user.id);
  await B.page.getByRole('heading', { name: 'Ann' }).waitFor();
  await B.page.locator('#follow').click();
  await B.page.locator('#follow', { hasText: 'Unfollow' }).waitFor();
  await B.page.locator('#profile-counts', { hasText: '1 followers' }).waitFor();

  await B.page.goto('/feed');
  await B.page.locator('#timeline').waitFor();
  await A.page.goto('/feed');
  await A.page.locator('#compose').fill('Fresh from the oven');
  await A.page.getByRole('button', { name: 'Post', exact: true }).click();
  await A.page.locator('#timeline .post', { hasText: 'Fresh from the oven' }).waitFor();

  const bar = B.page.locator('#new-posts');
  await bar.waitFor({ state: 'visible', timeout: 20000 });
  assert(/^1 new post$/.test(await bar.textContent()), 'bar: ' + await bar.textContent());
  assert(await B.page.locator('#timeline .post', { hasText: 'Fresh from the oven' }).count() === 0, 'not shown before the click');
  await bar.click();
  await B.page.locator('#timeline .post', { hasText: 'Fresh from the oven' }).waitFor();
  await bar.waitFor({ state: 'hidden' });
  // Read: the unread count is back to zero (the app hides the bar, then
  // posts the read marker: give that request a moment).
  let n;
  for (let i = 0; i < 50; i++) {
    n = await server.api('GET', '/v1/timeline/unread_count', undefined, bob.token);
    if (n.json.count === 0) break;
    await new Promise(r => setTimeout(r, 100));
  }
  assert(n.json.count === 0, 'unread after reading: ' + n.text);
  await shot(B.page, 'feed');

  // Unfollow from the profile.
  await B.page.locator('#timeline .post a.who', { hasText: 'Ann' }).first().click();
  await B.page.locator('#follow', { hasText: 'Unfollow' }).click();
  await B.page.locator('#follow', { hasText: /^Follow$/ }).waitFor();
  noErrors(A.page, B.page);
});
