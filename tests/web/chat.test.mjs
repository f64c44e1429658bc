// Two browser contexts as two users chat live: a message arrives over the
// WebSocket without a reload, the unread badge shows and clears when the
// conversation is read, and a second tab of the same user sees the read
// mark too; sending retries without doubling (client message ids).
import { run, context, shot, assert, noErrors } from './lib.mjs';

await run('chat', async ({ server, browser }) => {
  const ann = await server.user('Ann');
  const bob = await server.user('Bob');
  const A = await context(browser, server, { session: ann.session });
  const B = await context(browser, server, { session: bob.session });
  const B2 = await B.ctx.newPage(); // Bob's second tab
  B2.errors = [];
  B2.on('pageerror', e => B2.errors.push('pageerror: ' + e.message));

  await A.page.goto('/chat');
  await A.page.getByRole('button', { name: 'New chat' }).click();
  await A.page.getByLabel('Their email').fill(bob.email);
  await A.page.getByRole('button', { name: 'Start' }).click();
  await A.page.waitForURL(/\/chat\/[0-9a-f]+$/);
  const convId = A.page.url().split('/').pop();

  await B.page.goto('/chat');
  await B2.goto('/feed');
  await B.page.locator(`[data-conv="${convId}"]`).waitFor();
  // Live: Ann writes, Bob's list shows 1 unread without a reload.
  await A.page.locator('#msg-input').fill('Hello Bob!');
  await A.page.locator('#msg-input').press('Enter');
  await A.page.locator('.msg.mine:not(.pending)', { hasText: 'Hello Bob!' }).waitFor();
  await B.page.locator(`[data-conv="${convId}"] .badge`, { hasText: '1' }).waitFor();
  await B2.locator('nav a', { hasText: 'Chat' }).locator('.badge').waitFor();

  // Bob reads it: the badge clears here and in his other tab.
  await B.page.locator(`[data-conv="${convId}"]`).click();
  await B.page.locator('.msg', { hasText: 'Hello Bob!' }).waitFor();
  await B.page.locator(`[data-conv="${convId}"] .badge`).waitFor({ state: 'detached' });
  await B2.locator('nav a', { hasText: 'Chat' }).locator('.badge').waitFor({ state: 'detached' });

  // Bob answers; Ann sees it arrive live in her open pane.
  await B.page.locator('#msg-input').fill('Hi Ann, got it.');
  await B.page.getByRole('button', { name: 'Send' }).click();
  await A.page.locator('.msg:not(.mine)', { hasText: 'Hi Ann, got it.' }).waitFor();

  // The first try of a send fails on the network: the retry reuses the
  // client message id and the message exists once.
  let failed = 0;
  await A.page.route('**/messages', async route => {
    if (route.request().method() === 'POST' && failed++ === 0) return route.abort('connectionreset');
    return route.continue();
  });
  await A.page.locator('#msg-input').fill('Sent despite a glitch');
  await A.page.locator('#msg-input').press('Enter');
  await A.page.locator('.msg.mine:not(.pending)', { hasText: 'Sent despite a glitch' }).waitFor();
  await B.page.locator('.msg', { hasText: 'Sent despite a glitch' }).waitFor();
  assert(failed >= 2, 'the send was retried');
  await shot(A.page, 'chat');
  // The injected failure is the one console error expected.
  A.page.errors = A.page.errors.filter(e => !e.includes('ERR_CONNECTION_RESET'));
  const hist = await server.api('GET', `/v1/conversations/${convId}/messages?limit=50`, undefined, bob.token);
  assert(hist.json.messages.filter(m => m.text === 'Sent despite a glitch').length === 1, 'no duplicate');

  // History loads as you scroll up.
  for (let i = 0; i < 45; i++)
    await server.api('POST', `/v1/conversations/${convId}/messages`, { client_msg_id: 'bulk' + i, text: 'older ' + i }, ann.token);
  await B.page.reload();
  await B.page.locator('.msg', { hasText: 'older 44' }).waitFor();
  assert(await B.page.locator('.msg', { hasText: /^older 0/ }).count() === 0, 'not everything at once');
  for (let i = 0; i < 20 && await B.page.locator('.msg', { hasText: 'Hello Bob!' }).count() === 0; i++) {
    await B.page.locator('#msgs').evaluate(el => { el.scrollTop = 0; el.dispatchEvent(new Event('scroll')); });
    await B.page.waitForTimeout(150);
  }
  await B.page.locator('.msg', { hasText: 'Hello Bob!' }).waitFor();
  await B.page.locator('#msgs').evaluate(el => { el.scrollTop = el.scrollHeight; });

  // A group with both.
  await A.page.getByRole('button', { name: 'New group' }).click();
  await A.page.getByLabel('Group name').fill('Planning');
  await A.page.getByLabel('Members (emails)').fill(bob.email);
  await A.page.getByRole('button', { name: 'Create' }).click();
  await A.page.locator('#conv-title', { hasText: 'Planning' }).waitFor();
  await B.page.locator('.convs .title', { hasText: 'Planning' }).waitFor();
  // Presence: Ann is online for Bob.
  await B.page.locator(`[data-conv="${convId}"] .dot.online`).waitFor({ timeout: 30000 });

  noErrors(A.page, B.page, B2);
});
