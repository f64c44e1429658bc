// state.js -- what every page shares: who is signed in, the viewer's time
// zone, the unread counts, and navigation (set by app.js).
import { localZone } from './time.js';

export const state = {
  me: null,          // {id, email, name}
  admin: false,
  tz: localStorage.getItem('chime.tz') || localZone(),
  chatUnread: 0,
  feedUnread: 0,
  noteUnread: 0,
};

const hooks = { navigate: () => {}, counts: () => {} };
export const navigate = (path, opts) => hooks.navigate(path, opts);
// Re-renders the navigation's badges after a count changed.
export function setCount(key, n) {
  if (state[key] === n) return;
  state[key] = n;
  hooks.counts();
}
export function installHooks(h) { Object.assign(hooks, h); }
