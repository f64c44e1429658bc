// ws.js -- one WebSocket per tab to /v1/ws, opened with a single-use
// ticket (POST /v1/ws/tickets), reconnected with backoff. Frames are
// handed to listeners by type: hello, sync, reminder, feed.
import { post } from './api.js';

const listeners = new Map();
// The last frame of each type (pages opened later read the hello's seq).
export const lastFrame = {};
let sock = null, stopped = true, retry = 0, timer = null, pinger = null;

export function on(type, fn) {
  if (!listeners.has(type)) listeners.set(type, new Set());
  listeners.get(type).add(fn);
  return () => listeners.get(type).delete(fn);
}

function emit(type, frame) {
  for (const fn of listeners.get(type) || []) {
    try { fn(frame); } catch (e) { console.warn('ws listener', e); }
  }
}

export function connected() { return !!sock && sock.readyState === WebSocket.OPEN; }

export function start() {
  stopped = false;
  if (!sock) connect();
}

export function stop() {
  stopped = true;
  clearTimeout(timer);
  clearInterval(pinger);
  if (sock) { const s = sock; sock = null; s.close(1000); }
}

async function connect() {
  clearTimeout(timer);
  let ticket;
  try {
    ticket = (await post('/v1/ws/tickets')).ticket;
  } catch (e) {
    if (e.status === 401) return; // signed out
    return later();
  }
  if (stopped) return;
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const s = new WebSocket(`${proto}//${location.host}/v1/ws?ticket=${encodeURIComponent(ticket)}`);
  sock = s;
  s.onopen = () => {
    retry = 0;
    emit('open', {});
    clearInterval(pinger);
    pinger = setInterval(() => { if (s.readyState === WebSocket.OPEN) s.send('{"type":"ping"}'); }, 20000);
  };
  s.onmessage = ev => {
    let f;
    try { f = JSON.parse(ev.data); } catch { return; }
    if (f && f.type) { lastFrame[f.type] = f; emit(f.type, f); }
  };
  s.onclose = () => {
    if (sock !== s) return;
    sock = null;
    clearInterval(pinger);
    emit('close', {});
    later();
  };
  s.onerror = () => {}; // onclose follows and reconnects
}

function later() {
  if (stopped) return;
  const ms = Math.min(30000, 500 * 2 ** retry++) * (0.75 + Math.random() / 2);
  timer = setTimeout(connect, ms);
}
