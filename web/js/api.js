// api.js -- the /v1 API over fetch. The session token lives in
// localStorage, so a reload and the user's other tabs stay signed in; the
// strict Content-Security-Policy (no inline or foreign script) is what
// keeps other code from reading it. The WebSocket never sees the token:
// it connects with a single-use ticket (ws.js).
const KEY = 'chime.session';

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || 'http_' + status;
    this.field = e.field;
    this.retryAfter = 0;
  }
}

export const session = {
  get() {
    try { return JSON.parse(localStorage.getItem(KEY) || 'null'); } catch { return null; }
  },
  set(s) { localStorage.setItem(KEY, JSON.stringify(s)); },
  clear() { localStorage.removeItem(KEY); },
};

let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

// api('GET', '/v1/me'); body objects go as JSON, strings with `type`.
export async function api(method, path, body, { type, headers = {}, auth = true } = {}) {
  const h = { ...headers };
  const s = session.get();
  if (auth && s) h.Authorization = 'Bearer ' + s.token;
  let data;
  if (body !== undefined && body !== null) {
    if (typeof body === 'string' || body instanceof Blob) { data = body; h['Content-Type'] = type || 'text/plain'; }
    else { data = JSON.stringify(body); h['Content-Type'] = 'application/json'; }
  }
  const res = await fetch(path, { method, headers: h, body: data });
  const text = await res.text();
  let json = null;
  if (text) { try { json = JSON.parse(text); } catch { json = null; } }
  if (!res.ok) {
    const err = new ApiError(res.status, json);
    err.retryAfter = Number(res.headers.get('Retry-After') || 0);
    if (res.status === 401 && auth && s) onUnauthorized();
    throw err;
  }
  return json;
}

export const get = (p, o) => api('GET', p, undefined, o);
export const post = (p, b, o) => api('POST', p, b === undefined ? {} : b, o);
export const patch = (p, b, o) => api('PATCH', p, b, o);
export const put = (p, b, o) => api('PUT', p, b, o);
export const del = (p, o) => api('DELETE', p, undefined, o);

export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, v);
  const s = u.toString();
  return s ? '?' + s : '';
}

// A random id for client_msg_id / client_post_id (retries reuse it).
export function clientId() {
  return (crypto.randomUUID ? crypto.randomUUID() : Array.from(crypto.getRandomValues(new Uint8Array(16)),
    b => b.toString(16).padStart(2, '0')).join(''));
}
