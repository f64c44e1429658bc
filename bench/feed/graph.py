"""bench/feed: the follow graph and the posts, made once (deterministic,
seed 20) and written straight into each store with SQL (not through the
API: 100,000 sign-ups and 8 million follows over HTTP would take most of
an hour here).

Users: index 0-9 are the celebrities (followed by every other user: 99,999
followers each), 10-1009 the thousand mid-size accounts (5,000 followers
each), the rest ordinary. Everyone's out-degree is drawn from a Pareto
law (x_min 50, alpha 2.5, capped at 500: median ~66, mean ~80): the ten
celebrities, a share of the mid-size accounts (a global cursor walks them
round-robin, so each gets exactly 5,000), and ordinary accounts picked
with a skew towards the popular ones. User READER (index 1010) follows
exactly 1,000: the ten celebrities, 300 mid-size, 690 ordinary.

Posts: 100 per celebrity, 30 per mid-size account, 3 per ordinary user,
spread over the last 50 days; ids made the way src/cluster/idgen.c makes
them (ms since 2020 << 22 | node << 12 | seq), node 1023.
"""
import array
import bisect
import calendar
import hashlib
import random
import time

N = 100000
CELEBS = 10
MIDS = 1000
MID_FOLLOWERS = 5000
READER = CELEBS + MIDS  # index 1010
AUTHOR = CELEBS  # the first mid-size account: 5,000 followers
IDGEN_EPOCH_MS = 1577836800000
DAY_MS = 86400000
TIMELINE_MAX = 800  # chime's --feed-timeline-max default
MASTODON_MAX = 400  # Mastodon's FeedManager::MAX_ITEMS


class Graph:
    pass


def token_of(i):
    return "chm_bench_feed_%d" % i


def month_of(ms):
    t = time.gmtime(ms // 1000)
    return t.tm_year * 100 + t.tm_mon


def make(now_ms, log=print):
    t0 = time.time()
    rng = random.Random(20)
    g = Graph()
    g.now_ms = now_ms
    seen = set()
    ids = array.array("q")
    while len(ids) < N:
        x = rng.getrandbits(63)
        if x and x not in seen:
            seen.add(x)
            ids.append(x)
    g.ids = ids
    # out-degrees
    deg = [min(500, int(50 / (1.0 - rng.random()) ** (1 / 2.5))) for _ in range(N)]
    deg[READER] = 1000
    total_mid = MIDS * MID_FOLLOWERS
    rest = sum(max(0, d - CELEBS) for i, d in enumerate(deg) if i != READER) - (1000 - CELEBS)
    frac = (total_mid - 300) / rest
    mids_of = [0] * N
    acc = 0.0
    given = 0
    for i in range(N):
        if i == READER:
            mids_of[i] = 300
            continue
        acc += max(0, deg[i] - CELEBS) * frac
        k = min(MIDS - 1, int(acc) - given)
        mids_of[i] = k
        given += k
    # the cursor must go round exactly MID_FOLLOWERS times
    short = total_mid - 300 - given
    i = N - 1
    while short != 0:
        if i != READER:
            step = 1 if short > 0 else -1
            if 0 <= mids_of[i] + step <= MIDS - 1 and mids_of[i] + step + CELEBS <= 500:
                mids_of[i] += step
                short -= step
        i = i - 1 if i > 0 else N - 1
    # edges, follower by follower in user-id order (the follows key order)
    order = sorted(range(N), key=lambda i: ids[i])
    fer, fee = array.array("q"), array.array("q")  # by index
    followers = [0] * N
    following = [0] * N
    cursor = 0
    reg_lo, reg_n = CELEBS + MIDS, N - CELEBS - MIDS
    out = [None] * N
    for i in range(N):
        f = set(c for c in range(CELEBS) if c != i)
        for j in range(mids_of[i]):
            m = CELEBS + (cursor + j) % MIDS
            if m != i:
                f.add(m)
        cursor = (cursor + mids_of[i]) % MIDS
        want = len(f) + max(0, (690 if i == READER else deg[i] - CELEBS - mids_of[i]))
        while len(f) < want:
            r = reg_lo + int(reg_n * rng.random() ** 2.0)
            if r != i:
                f.add(r)
        out[i] = f
    for i in order:
        for j in sorted(out[i], key=lambda j: ids[j]):
            fer.append(i)
            fee.append(j)
            followers[j] += 1
        following[i] = len(out[i])
    g.reader_followees = sorted(out[READER])
    del out
    g.fer, g.fee, g.followers, g.following = fer, fee, followers, following
    log("graph: %d users, %d follows (out-degree median %d, max %d); celebrity followers %d, mid-size %d-%d; "
        "reader follows %d; made in %.1f s" % (
            N, len(fer), sorted(following)[N // 2], max(following), followers[0], min(followers[CELEBS:READER]),
            max(followers[CELEBS:READER]), following[READER], time.time() - t0))
    # posts
    p_id, p_author, p_ms = array.array("q"), array.array("l"), array.array("q")
    used = set()
    for i in range(N):
        k = 100 if i < CELEBS else 30 if i < READER else 3
        for _ in range(k):
            ms = now_ms - 60000 - int(rng.random() * 50 * DAY_MS)
            seq = 0
            pid = ((ms - IDGEN_EPOCH_MS) << 22) | (1023 << 12) | seq
            while pid in used:
                seq += 1
                pid += 1
            used.add(pid)
            p_id.append(pid)
            p_author.append(i)
            p_ms.append(ms)
    del used
    idx = sorted(range(len(p_id)), key=lambda k: p_id[k])
    g.p_id = array.array("q", (p_id[k] for k in idx))
    g.p_author = array.array("l", (p_author[k] for k in idx))
    g.p_ms = array.array("q", (p_ms[k] for k in idx))
    g.posts_of = [0] * N
    for a in g.p_author:
        g.posts_of[a] += 1
    # the reader's pushed timeline: the newest 800 posts of the accounts it
    # follows that are not pulled (the celebrities are pulled at read time)
    fol = set(g.reader_followees)
    pushed = [g.p_id[k] for k in range(len(g.p_id) - 1, -1, -1)
              if g.p_author[k] in fol and g.p_author[k] >= CELEBS]
    g.reader_timeline = [(pid, None) for pid in pushed[:TIMELINE_MAX]]
    author_of = {g.p_id[k]: g.p_author[k] for k in range(len(g.p_id))}
    g.reader_timeline = [(pid, author_of[pid]) for pid, _ in g.reader_timeline]
    g.reader_trimmed_below = g.reader_timeline[-1][0] if len(pushed) > TIMELINE_MAX else 0
    g.reader_home_read = g.reader_timeline[199][0]  # 199 pushed entries unread, plus the pulled ones
    allf = [g.p_id[k] for k in range(len(g.p_id) - 1, -1, -1) if g.p_author[k] in fol]
    g.reader_mastodon = allf[:MASTODON_MAX]
    g.author_of = author_of
    log("posts: %d (celebrities 100 each, mid-size 30, others 3; last 50 days); the reader's pushed timeline %d entries "
        "of %d candidates; made in %.1f s" % (len(g.p_id), len(g.reader_timeline), len(pushed), time.time() - t0))
    return g


def text_of(pid, author):
    return "post %d by u%d: the quick brown fox jumps over the lazy dog, again and again and again." % (pid % 100000,
                                                                                                      author)


# ---- chime's SQLite ------------------------------------------------------------------------


def chime_sqlite(g, path, sessions, log=print):
    """Writes the graph into chime's own schema (made by chime at its first
    start, then stopped): users, sessions for the users the benchmark acts
    as, feed_users (counts, all active within the day, not stale; the
    celebrities in pull mode), follows, posts (celebrities' pulled),
    author_months, the reader's pushed timeline. The secondary indexes are
    dropped for the load and made again with chime's own definitions."""
    import sqlite3
    t0 = time.time()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=OFF")
    db.execute("PRAGMA cache_size=-400000")
    idx = {r[0]: r[1] for r in db.execute("SELECT name, sql FROM sqlite_master WHERE type='index' AND sql IS NOT NULL "
                                          "AND tbl_name IN ('follows','posts','timelines')")}
    db.execute("BEGIN")
    for name in idx:
        db.execute("DROP INDEX %s" % name)
    now = g.now_ms
    db.executemany("INSERT INTO users (id, email, email_lower, name, password_hash, is_admin, created_ms) "
                   "VALUES (?, ?, ?, ?, 'bench: no password', 0, ?)",
                   ((g.ids[i], "u%d@bench.test" % i, "u%d@bench.test" % i, "u%d" % i, now - 90 * DAY_MS)
                    for i in range(N)))
    db.executemany("INSERT INTO sessions (token_hash, user_id, created_ms, expires_ms) VALUES (?, ?, ?, ?)",
                   ((hashlib.sha256(token_of(i).encode()).hexdigest(), g.ids[i], now, now + 30 * DAY_MS)
                    for i in sessions))
    db.executemany("INSERT INTO feed_users (user_id, followers, following, posts, active_ms, stale, pull_mode, "
                   "home_read, home_read_ms, trimmed_below) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?)",
                   ((g.ids[i], g.followers[i], g.following[i], g.posts_of[i], now - 60000, 1 if i < CELEBS else 0,
                     g.reader_home_read if i == READER else 0, now if i == READER else 0,
                     g.reader_trimmed_below if i == READER else 0) for i in range(N)))
    ids = g.ids
    db.executemany("INSERT INTO follows (follower_id, followee_id, created_ms) VALUES (?, ?, ?)",
                   ((ids[a], ids[b], now - 30 * DAY_MS) for a, b in zip(g.fer, g.fee)))
    db.executemany("INSERT INTO posts (id, month, author_id, text, created_ms, pulled, deleted) "
                   "VALUES (?, ?, ?, ?, ?, ?, 0)",
                   ((g.p_id[k], month_of(g.p_ms[k]), ids[g.p_author[k]], text_of(g.p_id[k], g.p_author[k]),
                     g.p_ms[k], 1 if g.p_author[k] < CELEBS else 0) for k in range(len(g.p_id))))
    am = {}
    for k in range(len(g.p_id)):
        key = (ids[g.p_author[k]], month_of(g.p_ms[k]))
        am[key] = am.get(key, 0) + 1
    db.executemany("INSERT INTO author_months (author_id, month, posts) VALUES (?, ?, ?)",
                   ((a, m, n) for (a, m), n in sorted(am.items())))
    db.executemany("INSERT INTO timelines (user_id, post_id, author_id) VALUES (?, ?, ?)",
                   ((ids[READER], pid, ids[a]) for pid, a in g.reader_timeline))
    t1 = time.time()
    for name, sql in idx.items():
        db.execute(sql)
    db.execute("COMMIT")
    db.execute("ANALYZE")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    log("chime SQLite: loaded in %.1f s (rows %.1f s, indexes %.1f s)" % (time.time() - t0, t1 - t0, time.time() - t1))


# ---- the peers' PostgreSQL -------------------------------------------------------------------


PEER_SCHEMA = """
DROP TABLE IF EXISTS peer_posts, peer_follows;
CREATE TABLE peer_posts (id BIGINT PRIMARY KEY, author_id BIGINT NOT NULL, text TEXT NOT NULL,
                         created_ms BIGINT NOT NULL, deleted BOOLEAN NOT NULL DEFAULT false);
CREATE TABLE peer_follows (follower_id BIGINT NOT NULL, followee_id BIGINT NOT NULL, created_ms BIGINT NOT NULL);
"""
PEER_INDEXES = """
ALTER TABLE peer_follows ADD PRIMARY KEY (follower_id, followee_id);
CREATE INDEX peer_follows_followee ON peer_follows (followee_id, follower_id);
CREATE INDEX peer_posts_author ON peer_posts (author_id, id);
"""


def peer_pg(g, conn, log=print):
    """The plain schema a user would write for fan-out on read: posts with
    an (author, id) index, follows both ways. Loaded with COPY, then
    indexed and analyzed. Mastodon keeps its statuses and follows in
    PostgreSQL too, so its fan-out reads the followers from here."""
    import io
    t0 = time.time()
    cur = conn.cursor()
    cur.execute(PEER_SCHEMA)
    ids = g.ids

    def copy(table, cols, rows, chunk=500000):
        buf, n = [], 0
        for r in rows:
            buf.append("\t".join(str(x) for x in r))
            n += 1
            if len(buf) >= chunk:
                cur.copy_expert("COPY %s (%s) FROM STDIN" % (table, cols), io.StringIO("\n".join(buf) + "\n"))
                buf = []
        if buf:
            cur.copy_expert("COPY %s (%s) FROM STDIN" % (table, cols), io.StringIO("\n".join(buf) + "\n"))
        return n

    now = g.now_ms
    copy("peer_follows", "follower_id, followee_id, created_ms",
         ((ids[a], ids[b], now) for a, b in zip(g.fer, g.fee)))
    copy("peer_posts", "id, author_id, text, created_ms",
         ((g.p_id[k], ids[g.p_author[k]], text_of(g.p_id[k], g.p_author[k]), g.p_ms[k]) for k in range(len(g.p_id))))
    conn.commit()
    t1 = time.time()
    cur.execute("SET maintenance_work_mem = '512MB'")
    cur.execute(PEER_INDEXES)
    conn.commit()
    conn.autocommit = True
    cur.execute("VACUUM ANALYZE peer_follows")
    cur.execute("VACUUM ANALYZE peer_posts")
    conn.autocommit = False
    log("PostgreSQL: loaded in %.1f s (rows %.1f s, indexes and analyze %.1f s)" % (time.time() - t0, t1 - t0,
                                                                                   time.time() - t1))


def peer_redis(g, r, timelines, log=print):
    """Mastodon's Redis: every post's rendering under status:<id> (its
    Rails cache entry, what the multi-get reads), the reader's home feed
    (the newest 400 posts of everyone it follows: Mastodon has no pull
    mode, celebrities are pushed too), and 400 entries in each home feed
    of `timelines` (the author's followers), so that the fan-out writes
    into full sorted sets as it would in a running instance (their
    contents are random posts: only the size matters there)."""
    t0 = time.time()
    rng = random.Random(7)
    p = r.pipeline(transaction=False)
    ids = g.ids
    for k in range(len(g.p_id)):
        pid, a = g.p_id[k], g.p_author[k]
        p.set("status:%d" % pid, '{"id":"%d","account":{"id":"%016x","username":"u%d"},"content":"%s","created_at":%d}'
              % (pid, ids[a], a, text_of(pid, a), g.p_ms[k]))
        if k % 10000 == 9999:
            p.execute()
    p.execute()
    p.zadd("feed:home:%d" % ids[READER], {str(x): x for x in g.reader_mastodon})
    n = 0
    for u in timelines:
        some = rng.sample(range(len(g.p_id)), MASTODON_MAX)
        p.zadd("feed:home:%d" % ids[u], {str(g.p_id[k]): g.p_id[k] for k in some})
        n += 1
        if n % 500 == 0:
            p.execute()
    p.execute()
    log("Redis: %d statuses, %d home feeds loaded in %.1f s" % (len(g.p_id), len(timelines) + 1, time.time() - t0))


def followers_of(g, i):
    """Indexes of i's followers, in follower-id order."""
    return sorted((g.fer[k] for k in range(len(g.fee)) if g.fee[k] == i), key=lambda j: g.ids[j])
