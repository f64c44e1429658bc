// Group membership from the chat page: create a group, add a member,
// remove one, and a member leaving; the member lists in the page and in the
// API follow, and a removed member gets no more messages.
import { run, context, assert, noErrors, sleep } from './lib.mjs';

await run('groups', async ({ server, browser }) => {
  const ann = await server.user('Ann');
  const bob = await server.user('Bob');
  const carol = await server.user('Carol');
  const A = await context(browser, server, { session: ann.session });
  const B = await context(browser, server, { session: bob.session });
  const C = await context(browser, server, { session: carol.session });

  // Ann makes a group with Bob.
  await A.page.goto('/chat');
  await A.page.getByRole('button', { name: 'New group' }).click();
  await A.page.getByLabel('Group name').fill('Trip');
  await A.page.getByLabel('Members (emails)').fill(bob.email);
  await A.page.getByRole('button', { name: 'Create' }).click();
  await A.page.locator('#conv-title', { hasText: 'Trip' }).waitFor();
  const convId = A.page.url().split('/').pop();
  const membersOf = async token => {
    const r = await server.api('GET', `/v1/conversations/${convId}`, undefined, token);
    return r.json;
  };
  const names = c => c.members.map(m => m.name).sort().join(',');

  await B.page.goto('/chat');
  await C.page.goto('/chat');
  await B.page.locator(`[data-conv="${convId}"]`).waitFor();

  // Add Carol: she sees the group without a reload.
  await A.page.getByRole('button', { name: 'Members (2)' }).click();
  let dlg = A.page.getByRole('dialog', { name: 'Members of Trip' });
  await dlg.locator('li', { hasText: 'Ann (admin)' }).waitFor();
  assert(await dlg.locator('li').count() === 2, 'two members');
  await dlg.getByLabel('Add members').fill(carol.email);
  await dlg.getByRole('button', { name: 'Add', exact: true }).click();
  await dlg.waitFor({ state: 'detached' });
  await A.page.getByRole('button', { name: 'Members (3)' }).waitFor();
  await C.page.locator(`[data-conv="${convId}"]`).waitFor();
  assert(names(await membersOf(ann.token)) === 'Ann,Bob,Carol', 'three in the API');

  // Remove Bob, who has the group open: his open pane says so at once.
  await B.page.locator(`[data-conv="${convId}"]`).click();
  await B.page.locator('#conv-title', { hasText: 'Trip' }).waitFor();
  await A.page.getByRole('button', { name: 'Members (3)' }).click();
  dlg = A.page.getByRole('dialog', { name: 'Members of Trip' });
  assert(await dlg.locator('li').count() === 3, 'three listed');
  await dlg.locator('li', { hasText: 'Bob' }).getByRole('button', { name: 'Remove' }).click();
  await dlg.waitFor({ state: 'detached' });
  await A.page.getByRole('button', { name: 'Members (2)' }).waitFor();
  assert(names(await membersOf(ann.token)) === 'Ann,Carol', 'Bob removed in the API');
  assert((await membersOf(bob.token)).left === true, 'Bob has left, for Bob');
  await B.page.getByText('You are no longer in this conversation.').waitFor({ timeout: 5000 });
  assert(await B.page.locator('#msg-input').isDisabled(), 'the open pane stops sending');

  // Bob's pane says so and cannot send.
  await B.page.locator(`[data-conv="${convId}"]`).click();
  await B.page.getByText('You are no longer in this conversation.').waitFor();
  assert(await B.page.locator('#msg-input').isDisabled(), 'no sending after removal');

  // A message after the removal reaches Carol, live, and not Bob.
  await C.page.locator(`[data-conv="${convId}"]`).click();
  await A.page.locator('#msg-input').fill('Bob is off the trip');
  await A.page.locator('#msg-input').press('Enter');
  await C.page.locator('.msg', { hasText: 'Bob is off the trip' }).waitFor();
  await sleep(500);
  assert(await B.page.locator('.msg', { hasText: 'Bob is off the trip' }).count() === 0, 'not in Bob\'s pane');
  const bobHist = await server.api('GET', `/v1/conversations/${convId}/messages?limit=50`, undefined, bob.token);
  assert(!(bobHist.json.messages || []).some(m => m.text === 'Bob is off the trip'), 'not in Bob\'s history: ' + bobHist.text);
  assert((await server.api('GET', '/v1/unread', undefined, bob.token)).json.total === 0, 'nothing unread for Bob');

  // Carol leaves; Ann's list of members follows.
  await C.page.getByRole('button', { name: 'Members (2)' }).click();
  dlg = C.page.getByRole('dialog', { name: 'Members of Trip' });
  assert(await dlg.getByRole('button', { name: 'Remove' }).count() === 0, 'only the admin removes others');
  assert(!/null/.test(await dlg.textContent()), 'nothing written for the missing add form: ' + await dlg.textContent());
  await dlg.getByRole('button', { name: 'Leave group' }).click();
  await dlg.waitFor({ state: 'detached' });
  await C.page.getByText('You are no longer in this conversation.').waitFor();
  await A.page.getByRole('button', { name: 'Members (1)' }).waitFor();
  assert(names(await membersOf(ann.token)) === 'Ann', 'Carol left in the API');
  assert((await membersOf(carol.token)).left === true, 'Carol has left, for Carol');
  await A.page.locator('#msg-input').fill('Just me now');
  await A.page.locator('#msg-input').press('Enter');
  await A.page.locator('.msg.mine:not(.pending)', { hasText: 'Just me now' }).waitFor();
  await sleep(500);
  const carolHist = await server.api('GET', `/v1/conversations/${convId}/messages?limit=50`, undefined, carol.token);
  assert(carolHist.json.messages.some(m => m.text === 'Bob is off the trip'), 'Carol keeps what came before');
  assert(!carolHist.json.messages.some(m => m.text === 'Just me now'), 'and nothing after leaving');
  noErrors(A.page, B.page, C.page);
});
