// The chat page's list loads before its WebSocket says hello, and a
// message arrives in between: the hello's seq already counts it, so the
// page must not take that seq as where its list stands (it did, pulled
// nothing after it, and the unread badge never showed: web/chat failed so
// once in make test, its WebSocket slow to connect on a loaded machine).
// Here the WebSocket is held at the network until the message is sent.
import { run, context, assert, noErrors } from './lib.mjs';

await run('chat_hello_late', async ({ server, browser }) => {
  const ann = await server.user('Ann');
  const bob = await server.user('Bob');
  const conv = await server.api('POST', '/v1/conversations', { type: 'direct', user: bob.email }, ann.token);
  assert(conv.status === 201, conv.text);
  const convId = conv.json.id;

  const B = await context(browser, server, { session: bob.session });
  let release;
  const held = new Promise(r => { release = r; });
  let routed = 0;
  await B.ctx.routeWebSocket(/\/v1\/ws\?/, async ws => {
    routed++;
    await held;
    ws.connectToServer(); // frames pass through from here on
  });

  await B.page.goto('/chat');
  await B.page.locator(`[data-conv="${convId}"]`).waitFor();
  assert(await B.page.locator(`[data-conv="${convId}"] .badge`).count() === 0, 'no unread before the message');

  const sent = await server.api('POST', `/v1/conversations/${convId}/messages`, { client_msg_id: 'late-1', text: 'Before your hello' }, ann.token);
  assert(sent.status === 201, sent.text);
  release();

  await B.page.locator(`[data-conv="${convId}"] .badge`, { hasText: '1' }).waitFor({ timeout: 10000 });
  assert(routed >= 1, 'the WebSocket went through the route');
  noErrors(B.page);
});
