// The hot list renders signed out, with ranks and counts; signed in, a post
// can be liked, commented on and shared from the timeline.
import { run, context, assert, noErrors, shot, sleep } from './lib.mjs';

await run('hot', async ({ server, browser }) => {
  const anon = await context(browser, server);
  const ann = await server.user('Ann');
  const bob = await server.user('Bob');
  const posts = [];
  for (const text of ['Quiet post', 'Hottest post', 'Warm post']) {
    const r = await server.api('POST', '/v1/posts', { text }, ann.token);
    assert(r.status === 201, r.text);
    posts.push(r.json);
  }
  await server.api('PUT', `/v1/posts/${posts[1].id}/like`, undefined, bob.token);
  await server.api('POST', `/v1/posts/${posts[1].id}/shares`, {}, bob.token);
  await server.api('PUT', `/v1/posts/${posts[2].id}/like`, undefined, bob.token);
  let hot;
  for (let i = 0; i < 100; i++) {
    hot = await server.api('GET', '/v1/hot?limit=50');
    if (hot.status === 200 && (hot.json.items || []).length >= 2) break;
    await sleep(200);
  }
  assert(hot.status === 200, 'GET /v1/hot: ' + hot.text);

  await anon.page.goto('/hot');
  const list = anon.page.locator('#hot-list');
  await list.waitFor();
  const first = list.locator('li').first();
  assert((await first.locator('.rank').textContent()) === '#1', 'rank shown');
  assert((await first.locator('.text').textContent()) === 'Hottest post', 'the most liked and shared is first');
  assert(/1 like/.test(await first.locator('[data-action="like"]').textContent()), 'counts shown');
  assert(await first.locator('[data-action="like"]').isDisabled(), 'signed out: no liking');
  await shot(anon.page, 'hot');

  // Signed in: like, comment, share from Bob's timeline (he follows Ann).
  await server.api('PUT', `/v1/me/following/${ann.user.id}`, undefined, bob.token);
  const B = await context(browser, server, { session: bob.session });
  await B.page.goto('/feed');
  const post = B.page.locator(`#timeline [data-post="${posts[0].id}"]`);
  await post.waitFor();
  await post.locator('[data-action="like"]').click();
  await post.locator('[data-action="like"][aria-pressed="true"]', { hasText: '1 like' }).waitFor();
  await post.locator('[data-action="comments"]').click();
  await post.getByLabel('Comment').fill('Nice one');
  await post.getByRole('button', { name: 'Comment', exact: true }).click();
  await post.locator('.comments li', { hasText: 'Nice one' }).waitFor();
  await post.locator('[data-action="comments"]', { hasText: '1 comment' }).waitFor();
  await post.locator('[data-action="share"]').click();
  await post.locator('[data-action="share"]', { hasText: '1 share' }).waitFor();
  const after = await server.api('GET', `/v1/posts/${posts[0].id}`, undefined, bob.token);
  assert(after.json.likes === 1 && after.json.comments === 1 && after.json.shares === 1 && after.json.liked === true,
    'counts on the server: ' + after.text);
  noErrors(anon.page, B.page);
}, { args: ['--hot-every', '0.5'] });
