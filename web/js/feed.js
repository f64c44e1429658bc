// feed.js -- the home timeline with its "N new posts" bar (fed by the
// WebSocket's "feed" frame and the unread count), compose, profiles with
// follow/unfollow, and the hot list (readable signed out). Likes, comments
// and shares appear when the server has them (posts that carry a "likes"
// count: the hot-list API).
import { h, clear, modal, toast } from './dom.js';
import { get, post, put, del, qs, clientId } from './api.js';
import { state, setCount, navigate } from './state.js';
import * as ws from './ws.js';
import { shortStamp } from './time.js';

function postEl(p, { rank, score } = {}) {
  const social = typeof p.likes === 'number';
  const el = h('article.card.post', { 'data-post': p.id },
    h('div.row',
      rank ? h('span.rank', `#${rank}`) : null,
      h('a.who', { href: '/users/' + p.author.id, 'data-link': '' }, p.author.name),
      h('span.muted', shortStamp(p.created, state.tz)),
      score !== undefined ? h('span.muted', `score ${Number(score).toFixed(2)}`) : null),
    p.repost_of ? h('div.muted', '↻ shared a post ', h('button.link', {
      onclick: async e => {
        const orig = await get('/v1/posts/' + p.repost_of).catch(() => null);
        e.target.replaceWith(orig ? postEl(orig) : h('span', '(deleted)'));
      },
    }, 'show it')) : null,
    h('div.text', p.text),
    social ? actions(p) : null);
  return el;
}

function actions(p) {
  const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;
  const like = h('button', { 'aria-pressed': String(!!p.liked), 'data-action': 'like' }, count(p.likes, 'like', 'likes'));
  const comments = h('button', { 'aria-expanded': 'false', 'data-action': 'comments' }, count(p.comments, 'comment', 'comments'));
  const share = h('button', { 'data-action': 'share' }, count(p.shares, 'share', 'shares'));
  const box = h('div.comments', { hidden: true });
  const signedIn = !!state.me;
  like.disabled = !signedIn;
  // A post is shared by others, never by its author (the API says 422).
  share.disabled = !signedIn || (state.me && p.author.id === state.me.id);
  if (signedIn && typeof p.views === 'number') seen(p.id);
  like.addEventListener('click', async () => {
    const on = like.getAttribute('aria-pressed') !== 'true';
    try {
      const r = on ? await put(`/v1/posts/${p.id}/like`) : await del(`/v1/posts/${p.id}/like`);
      // The answer carries the exact counts (a DELETE may answer 204).
      if (r && typeof r.likes === 'number') Object.assign(p, { likes: r.likes, liked: r.liked });
      else { p.likes += on ? 1 : -1; p.liked = on; }
      like.setAttribute('aria-pressed', String(p.liked));
      like.textContent = count(p.likes, 'like', 'likes');
    } catch (e) { toast(e.message, { kind: 'error' }); }
  });
  share.addEventListener('click', async () => {
    try {
      await post(`/v1/posts/${p.id}/shares`);
      // Sharing twice answers the first repost: ask for the real count.
      const fresh = await get(`/v1/posts/${p.id}`);
      p.shares = fresh.shares;
      share.textContent = count(p.shares, 'share', 'shares');
      toast('Shared with your followers');
    } catch (e) { toast(e.message, { kind: 'error' }); }
  });
  comments.addEventListener('click', async () => {
    const show = box.hidden;
    box.hidden = !show;
    comments.setAttribute('aria-expanded', String(show));
    if (!show) return;
    clear(box, h('p.muted', 'Loading…'));
    try {
      const r = await get(`/v1/posts/${p.id}/comments?limit=50`, { auth: signedIn });
      const list = h('ul', (r.items || []).map(c => commentEl(c)));
      const text = h('input', { 'aria-label': 'Comment', placeholder: 'Write a comment', maxlength: 2000, class: 'grow' });
      clear(box, list, signedIn ? h('form.row', {
        onsubmit: async e => {
          e.preventDefault();
          if (!text.value.trim()) return;
          try {
            const c = await post(`/v1/posts/${p.id}/comments`, { text: text.value.trim() });
            list.append(commentEl(c));
            text.value = '';
            p.comments += 1;
            comments.textContent = count(p.comments, 'comment', 'comments');
          } catch (x) { toast(x.message, { kind: 'error' }); }
        },
      }, text, h('button', { type: 'submit' }, 'Comment')) : null);
    } catch (e) { clear(box, h('p.error', e.message)); }
  });
  return [h('div.actions', like, comments, share), box];
}

// A view counts when a post has been half on screen (the server counts
// one per user per post per hour).
let viewer = null;
const viewed = new Set();
function seen(id) {
  if (viewed.has(id)) return;
  if (!viewer) {
    viewer = new IntersectionObserver(entries => {
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        const pid = e.target.dataset.post;
        viewer.unobserve(e.target);
        if (viewed.has(pid)) continue;
        viewed.add(pid);
        post(`/v1/posts/${pid}/views`).catch(() => {});
      }
    }, { threshold: 0.5 });
  }
  // Observed once the element is in the document.
  setTimeout(() => {
    const el = document.querySelector(`[data-post="${id}"]`);
    if (el) viewer.observe(el);
  });
}

function commentEl(c) {
  const who = c.author || c.user || {};
  return h('li', h('strong', who.name || 'someone'), ' ', c.text);
}

// ---- home timeline ----

export async function renderTimeline(main) {
  const list = h('div', { id: 'timeline' });
  const bar = h('button.newbar', { id: 'new-posts', hidden: true, onclick: () => loadTop() });
  const more = h('button', { hidden: true, onclick: () => loadMore() }, 'Older posts');
  const text = h('textarea', { id: 'compose', rows: 3, maxlength: 2000, 'aria-label': 'What is new?', placeholder: 'What is new?' });
  const err = h('p.error', { role: 'alert' });
  main.append(h('div.feed',
    h('h1', 'Home'),
    h('form.card', {
      onsubmit: async e => {
        e.preventDefault();
        const t = text.value.trim();
        if (!t) return;
        err.textContent = '';
        const cid = clientId();
        try {
          let made;
          for (let i = 0; ; i++) {
            try { made = await post('/v1/posts', { text: t, client_post_id: cid }); break; }
            catch (x) { if ((x.status && x.status < 500 && x.status !== 429) || i >= 4) throw x; await new Promise(r => setTimeout(r, 400 * 2 ** i)); }
          }
          text.value = '';
          // The timeline shows a post once its fan-out is done; the author
          // sees it at once.
          mine.push({ post: made, reads });
          showMine(made);
        } catch (x) { err.textContent = x.message; }
      },
    }, text, err, h('div.row', h('span.grow'), h('button.primary', { type: 'submit' }, 'Post'))),
    bar, list, more));

  let nextMax = null, newest = null;
  // Posts made on this page, and how many timeline reads had begun then: a
  // read that began before a post may be answered after it, and drawing
  // that answer must not take the post off the page again.
  let mine = [], reads = 0;

  function showMine(p) {
    if (list.querySelector(`[data-post="${p.id}"]`)) return;
    list.querySelector('p.muted')?.remove();
    list.prepend(postEl(p));
  }

  async function loadTop() {
    const read = ++reads;
    const r = await get('/v1/timeline?limit=20');
    clear(list, r.items.length ? r.items.map(p => postEl(p)) : h('p.muted', 'Nothing here yet: post something, or follow people from their profiles (the names on posts and in chats, and the hot list).'));
    mine = mine.filter(m => m.reads >= read); // a later read has the rest
    for (const m of mine) showMine(m.post);
    nextMax = r.next_max_id;
    more.hidden = !nextMax;
    bar.hidden = true;
    if (r.items.length) {
      newest = r.items[0].id;
      await post('/v1/markers', { home: { last_read_id: newest } }).catch(() => {});
    }
    setCount('feedUnread', 0);
  }

  async function loadMore() {
    if (!nextMax) return;
    const r = await get('/v1/timeline' + qs({ limit: 20, max_id: nextMax }));
    list.append(...r.items.map(p => postEl(p)));
    nextMax = r.next_max_id;
    more.hidden = !nextMax;
  }

  const showBar = n => {
    if (n > 0) { bar.textContent = `${n} new post${n === 1 ? '' : 's'}`; bar.hidden = false; }
  };
  const off = ws.on('feed', f => showBar(f.unread));
  await loadTop();
  // Anything that arrived while the page loaded.
  try { showBar((await get('/v1/timeline/unread_count')).count); } catch { /* next frame */ }
  return off;
}

// ---- profiles ----

export async function renderProfile(main, [id]) {
  const p = await get('/v1/users/' + id);
  const me = state.me && state.me.id === id;
  const followBtn = h('button.primary', { id: 'follow', 'aria-pressed': String(p.followed) }, p.followed ? 'Unfollow' : 'Follow');
  const counts = h('p.muted', { id: 'profile-counts' });
  const drawCounts = () => counts.replaceChildren(`${p.posts} posts · ${p.followers} followers · ${p.following} following`);
  drawCounts();
  followBtn.addEventListener('click', async () => {
    try {
      if (p.followed) { await del('/v1/me/following/' + id); p.followed = false; p.followers -= 1; }
      else Object.assign(p, await put('/v1/me/following/' + id));
      followBtn.textContent = p.followed ? 'Unfollow' : 'Follow';
      followBtn.setAttribute('aria-pressed', String(p.followed));
      drawCounts();
    } catch (e) { toast(e.message, { kind: 'error' }); }
  });
  const posts = await get(`/v1/users/${id}/posts?limit=30`);
  main.append(h('div.feed',
    h('h1', p.name), counts, me ? null : h('div.row', followBtn,
      h('button', { onclick: async () => {
        try { const c = await post('/v1/conversations', { type: 'direct', user: id }); navigate('/chat/' + c.id); }
        catch (e) { toast(e.message, { kind: 'error' }); }
      } }, 'Message')),
    h('h2', 'Posts'),
    posts.items.length ? posts.items.map(x => postEl(x)) : h('p.muted', 'No posts yet.')));
}

// ---- the hot list ----

export async function renderHot(main) {
  const box = h('div.hot.feed', h('h1', 'Hot'));
  main.append(box);
  let r;
  try {
    r = await get('/v1/hot?limit=50', { auth: !!state.me });
  } catch (e) {
    box.append(h('p.error', { id: 'hot-error', role: 'alert' }, 'The hot list is not available: ' + e.message));
    return;
  }
  const items = r.items || r.posts || [];
  box.append(h('p.muted', `Updated ${r.computed_at ? shortStamp(r.computed_at, state.tz) : '—'} (version ${r.version ?? '—'})`),
    items.length ? h('ol', { id: 'hot-list' }, items.map((it, i) => {
      const p = it.post || it;
      return h('li', postEl(p, { rank: it.rank || i + 1, score: it.score }));
    })) : h('p.muted', 'Nothing is hot yet.'));
  if (!state.me) box.append(h('p', h('a', { href: '/signup', 'data-link': '' }, 'Sign up'), ' to post, follow and chat.'));
}
