"""bench/feed: chime's feed (SQLite, release build, default feed options)
against the two designs a user would otherwise build, on the same graph
and posts (graph.py): (a) Mastodon's home feed -- a Redis sorted set per
user, ZADD per follower on post, trim at 400, ZREVRANGE + multi-get on
read -- driven by a Python worker on Debian's redis-server, its follows and
posts in PostgreSQL as Mastodon keeps them; (b) plain fan-out on read on
PostgreSQL (WHERE author IN (followees) ORDER BY id DESC LIMIT 20).
Run through bench/feed/run.sh, which builds and installs what this needs.

Measures:
  timeline  the reader (follows 1,000 accounts, the ten celebrities among
            them): GET /v1/timeline?limit=20, one connection (wrk -c1),
            server-side latency from chime's access log and client-side
            from wrk; the peers' reads from one Python client.
  unread    GET /v1/timeline/unread_count (the reader's) against /healthz,
            wrk -t2 -c32, same run, access log off.
  visible   the 5,000-follower author posts --posts times, --interval
            apart; post -> 201, post -> in the timeline of its follower
            fanned out last (a poller); chime's watermark shows a post to
            no follower before the whole fan-out is done, so this is the
            time to the last follower; every follower's entry is counted
            afterwards.
  burst     --burst mid-size authors (5,000 followers each) post at once:
            fan-out rows a second until the outbox is empty.
"""
import argparse
import hashlib
import http.client
import json
import os
import platform
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import graph  # noqa: E402

CHIME = os.path.join(ROOT, "build/chime")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def loadavg():
    return open("/proc/loadavg").read().split()[:3]


def pct(v, q):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def dist(v):
    return {"n": len(v), "p50": pct(v, 0.50), "p99": pct(v, 0.99), "max": max(v) if v else None}


# ---- chime ---------------------------------------------------------------------------------


class Chime:
    def __init__(self, d, access_log, tag):
        self.d = d
        self.logpath = os.path.join(d, "chime-%s.log" % tag)
        self.access = os.path.join(d, "access-%s.log" % tag) if access_log else "off"
        self.logf = open(self.logpath, "a")
        self.p = subprocess.Popen([CHIME, "serve", "--listen", "127.0.0.1:0", "--db",
                                   "sqlite:" + os.path.join(d, "chime.db"), "--access-log", self.access],
                                  stdout=self.logf, stderr=self.logf)
        self.port = None
        for _ in range(600):
            time.sleep(0.05)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(self.logpath).read())
            if m:
                self.port = int(m.group(1))
                break
            if self.p.poll() is not None:
                break
        if not self.port:
            raise RuntimeError("chime did not start; see %s" % self.logpath)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return open(self.logpath).read()


class Http:
    def __init__(self, port, token):
        self.port, self.token = port, token
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def req(self, method, path, body=None):
        h = {"Authorization": "Bearer " + self.token}
        if body is not None:
            h["Content-Type"] = "application/json"
        self.c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
        r = self.c.getresponse()
        data = r.read()
        return r.status, json.loads(data) if data else None


def wrk(url, token, secs, threads, conns):
    args = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % secs, "--latency"]
    if token:
        args += ["-H", "Authorization: Bearer " + token]
    out = subprocess.run(args + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
    lat = {}
    for q, v, unit in re.findall(r"^\s+(50|99)%\s+([0-9.]+)(us|ms|s)\s*$", out, re.M):
        lat["p" + q] = float(v) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "client": lat, "non2xx": int(non2xx.group(1)) if non2xx else 0}


def access_times(path, prefix):
    pat = re.compile(re.escape(prefix) + r"\S* 20[01] \d+B ([0-9.]+)ms")
    return [float(m.group(1)) for m in pat.finditer(open(path).read())]


def chime_measure(g, d, a, A_followers, burst_authors):
    R = {}
    ids = g.ids
    tok = graph.token_of
    # 1. latency (access log on): timeline, post -> visible, burst
    c = Chime(d, True, "latency")
    try:
        reader = Http(c.port, tok(graph.READER))
        st, b = reader.req("GET", "/v1/timeline?limit=20")
        if st != 200 or len(b["items"]) != 20:
            raise RuntimeError("timeline: %s %s" % (st, str(b)[:300]))
        celeb = sum(1 for it in b["items"] if int(it["author"]["id"], 16) in set(ids[:graph.CELEBS]))
        st, u = reader.req("GET", "/v1/timeline/unread_count")
        log("chime: the reader's first page has %d items (%d by celebrities, pulled); unread_count %s" % (
            len(b["items"]), celeb, u))
        R["reader_unread"] = u["count"]
        R["first_page_celebrity_items"] = celeb
        open(c.access, "w").close()
        w = wrk("http://127.0.0.1:%d/v1/timeline?limit=20" % c.port, tok(graph.READER), a.seconds, 1, 1)
        R["timeline"] = {"server": dist(access_times(c.access, "GET /v1/timeline?limit=20")), "wrk": w,
                         "load": loadavg()}
        log("chime timeline: %s" % json.dumps(R["timeline"]))
        # post -> visible
        author = Http(c.port, tok(graph.AUTHOR))
        last = A_followers[-1]
        poller = Http(c.port, tok(last))
        acks, vis, posted = [], [], []
        open(c.access, "w").close()
        l0 = loadavg()
        for k in range(a.posts):
            time.sleep(a.interval)
            t0 = time.perf_counter()
            st, p = author.req("POST", "/v1/posts", {"text": "bench post %d" % k})
            t1 = time.perf_counter()
            if st != 201:
                raise RuntimeError("post: %s %s" % (st, p))
            pid = int(p["id"])
            posted.append(pid)
            acks.append((t1 - t0) * 1000)
            while True:
                st, tl = poller.req("GET", "/v1/timeline?limit=5&since_id=%d" % (pid - 1))
                if st != 200:
                    raise RuntimeError("poll: %s %s" % (st, tl))
                if any(int(it["id"]) == pid for it in tl["items"]):
                    break
                time.sleep(0.001)
            vis.append((time.perf_counter() - t0) * 1000)
        R["visible"] = {"ack": dist(acks), "visible": dist(vis), "followers": len(A_followers), "load_before": l0,
                        "load": loadavg(), "server_post": dist(access_times(c.access, "POST /v1/posts"))}
        time.sleep(0.5)
        ro = sqlite3.connect("file:%s?mode=ro" % os.path.join(d, "chime.db"), uri=True)
        got = ro.execute("SELECT count(*) FROM timelines WHERE post_id IN (%s)" % ",".join(map(str, posted))).fetchone()[0]
        R["visible"]["entries"] = got
        R["visible"]["entries_expected"] = len(posted) * (len(A_followers) + 1)
        log("chime post -> visible: %s" % json.dumps(R["visible"]))
        # burst
        outs = [Http(c.port, tok(i)) for i in burst_authors]
        time.sleep(1)
        l0 = loadavg()
        bids = [None] * len(outs)
        # the reader's timeline, one connection, while the fan-out runs
        open(c.access, "w").close()
        reads = subprocess.Popen(["wrk", "-t1", "-c1", "-d%ds" % a.seconds, "-H",
                                  "Authorization: Bearer " + tok(graph.READER),
                                  "http://127.0.0.1:%d/v1/timeline?limit=20" % c.port], stdout=subprocess.DEVNULL)
        t0 = time.perf_counter()

        def post(j):
            st, p = outs[j].req("POST", "/v1/posts", {"text": "burst post"})
            if st != 201:
                raise RuntimeError("burst post: %s %s" % (st, p))
            bids[j] = int(p["id"])

        ts = [threading.Thread(target=lambda k=k: [post(j) for j in range(k, len(outs), 8)]) for k in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        t_acked = time.perf_counter()
        while ro.execute("SELECT count(*) FROM feed_outbox").fetchone()[0]:
            time.sleep(0.005)
        t1 = time.perf_counter()
        rows = ro.execute("SELECT count(*) FROM timelines WHERE post_id IN (%s)" % ",".join(map(str, bids))).fetchone()[0]
        ro.close()
        reads.wait()
        R["burst"] = {"posts": len(bids), "rows": rows, "acked_s": round(t_acked - t0, 3), "secs": round(t1 - t0, 3),
                      "rows_per_s": round(rows / (t1 - t0)), "load_before": l0, "load": loadavg(),
                      "timeline_meanwhile": dist(access_times(c.access, "GET /v1/timeline?limit=20"))}
        log("chime burst: %s" % json.dumps(R["burst"]))
    finally:
        tail = c.stop()
        m = re.search(r"feed: (\d+) posts fanned out, (\d+) timeline entries", tail)
        if m:
            R["fanout_log"] = [int(m.group(1)), int(m.group(2))]
    # 2. throughput (access log off): unread_count against /healthz, timeline req/s
    c = Chime(d, False, "rps")
    try:
        time.sleep(1)
        l0 = loadavg()
        un = wrk("http://127.0.0.1:%d/v1/timeline/unread_count" % c.port, tok(graph.READER), a.seconds, 2, 32)
        hz = wrk("http://127.0.0.1:%d/healthz" % c.port, None, a.seconds, 2, 32)
        me = wrk("http://127.0.0.1:%d/v1/me" % c.port, tok(graph.READER), a.seconds, 2, 32)
        tl = wrk("http://127.0.0.1:%d/v1/timeline?limit=20" % c.port, tok(graph.READER), a.seconds, 2, 32)
        R["rps"] = {"unread": un, "healthz": hz, "me": me, "timeline": tl, "ratio": round(un["rps"] / hz["rps"], 3),
                    "load_before": l0, "load": loadavg()}
        log("chime req/s: %s" % json.dumps(R["rps"]))
    finally:
        c.stop()
    return R


# ---- the peers -------------------------------------------------------------------------------


def mastodon_post(pg, r, author_id, pid, text, now_ms):
    """One post, Mastodon's way: the status row committed in PostgreSQL,
    its rendering cached in Redis, then FanOutOnWriteService: followers in
    batches of 1,000 (find_in_batches), for each a ZADD into its home feed
    and the trim to 400 (FeedManager#add_to_feed / trim). Mastodon makes
    each insert a Sidekiq job; here the worker pipelines them directly,
    which only helps the peer. Returns the timeline rows written."""
    cur = pg.cursor()
    cur.execute("INSERT INTO peer_posts (id, author_id, text, created_ms) VALUES (%s, %s, %s, %s)",
                (pid, author_id, text, now_ms))
    pg.commit()
    r.set("status:%d" % pid, json.dumps({"id": str(pid), "account": {"id": "%016x" % author_id}, "content": text}))
    last, rows = 0, 0
    while True:
        cur.execute("SELECT follower_id FROM peer_follows WHERE followee_id = %s AND follower_id > %s "
                    "ORDER BY follower_id LIMIT 1000", (author_id, last))
        fs = [x[0] for x in cur.fetchall()]
        pg.commit()
        if not fs:
            break
        p = r.pipeline(transaction=False)
        for f in fs:
            key = "feed:home:%d" % f
            p.zadd(key, {str(pid): pid})
            p.zremrangebyrank(key, 0, -(graph.MASTODON_MAX + 1))
        p.execute()
        rows += len(fs)
        last = fs[-1]
        if len(fs) < 1000:
            break
    return rows


def peer_measure(g, a, pg, r, A_followers, burst_authors):
    import random
    R = {}
    ids = g.ids
    reader = ids[graph.READER]
    # (a) Mastodon: reads
    key = "feed:home:%d" % reader
    lat = []
    t_all = time.perf_counter()
    for _ in range(a.reads):
        t0 = time.perf_counter()
        top = r.zrevrange(key, 0, 19)
        items = r.mget(["status:%s" % x.decode() for x in top])
        lat.append((time.perf_counter() - t0) * 1000)
        assert len(items) == 20 and all(items)
    R["mastodon_read"] = dict(dist(lat), rps=round(a.reads / (time.perf_counter() - t_all)), load=loadavg())
    log("Mastodon read: %s" % json.dumps(R["mastodon_read"]))
    # (a) post -> visible for the 5,000-follower author, the same pacing
    nid = [int(time.time() * 1000 - graph.IDGEN_EPOCH_MS) << 22]

    def new_id():
        nid[0] = max(nid[0] + 1, (int(time.time() * 1000) - graph.IDGEN_EPOCH_MS) << 22)
        return nid[0]

    vis, rows = [], 0
    l0 = loadavg()
    for k in range(a.posts):
        time.sleep(a.interval)
        t0 = time.perf_counter()
        rows = mastodon_post(pg, r, ids[graph.AUTHOR], new_id(), "bench post %d" % k, int(time.time() * 1000))
        vis.append((time.perf_counter() - t0) * 1000)
    last = A_followers[-1]
    top = r.zrevrange("feed:home:%d" % ids[last], 0, 0)
    R["mastodon_visible"] = dict(dist(vis), rows_per_post=rows, load_before=l0, load=loadavg(),
                                 last_follower_has_it=bool(top) and int(top[0]) == nid[0])
    log("Mastodon post -> visible: %s" % json.dumps(R["mastodon_visible"]))
    # (a) burst: the same authors, one worker
    time.sleep(1)
    l0 = loadavg()
    t0 = time.perf_counter()
    rows = sum(mastodon_post(pg, r, ids[i], new_id(), "burst post", int(time.time() * 1000)) for i in burst_authors)
    secs = time.perf_counter() - t0
    R["mastodon_burst"] = {"posts": len(burst_authors), "rows": rows, "secs": round(secs, 3),
                           "rows_per_s": round(rows / secs), "load_before": l0, "load": loadavg(),
                           "redis_used_memory_mb": round(r.info("memory")["used_memory"] / 2 ** 20)}
    log("Mastodon burst: %s" % json.dumps(R["mastodon_burst"]))
    # (b) fan-out on read: reads of the same reader, and a post's commit
    cur = pg.cursor()
    cur.execute("PREPARE home(bigint) AS SELECT id, author_id, text, created_ms FROM peer_posts WHERE author_id IN "
                "(SELECT followee_id FROM peer_follows WHERE follower_id = $1) AND NOT deleted ORDER BY id DESC LIMIT 20")
    lat = []
    t_all = time.perf_counter()
    for _ in range(a.reads):
        t0 = time.perf_counter()
        cur.execute("EXECUTE home(%s)", (reader,))
        rows_ = cur.fetchall()
        lat.append((time.perf_counter() - t0) * 1000)
        assert len(rows_) == 20
    pg.commit()
    R["pg_read"] = dict(dist(lat), rps=round(a.reads / (time.perf_counter() - t_all)), load=loadavg())
    cur.execute("EXPLAIN (ANALYZE, BUFFERS) EXECUTE home(%s)", (reader,))
    R["pg_plan"] = "\n".join(x[0] for x in cur.fetchall())
    pg.commit()
    log("PostgreSQL fan-out-on-read read: %s" % json.dumps(R["pg_read"]))
    lat = []
    for k in range(a.posts):
        t0 = time.perf_counter()
        cur.execute("INSERT INTO peer_posts (id, author_id, text, created_ms) VALUES (%s, %s, %s, %s)",
                    (new_id(), ids[graph.AUTHOR], "bench post", int(time.time() * 1000)))
        pg.commit()
        lat.append((time.perf_counter() - t0) * 1000)
    R["pg_post"] = dist(lat)
    return R


# ---- report ---------------------------------------------------------------------------------


def f_ms(x):
    return "-" if x is None else ("%.2f ms" % x if x < 10 else "%.1f ms" % x if x < 100 else "%.0f ms" % x)


def report(info, C, P, a):
    print()
    print("machine: %d cores, %s; date %s; load average at start %s, at end %s" % (
        info["nproc"], info["uname"], info["date"], " ".join(info["load_start"]), " ".join(info.get("load_end", []))))
    print("graph: %s" % info.get("graph", ""))
    print()
    print("| measure | chime (SQLite) | Mastodon design (Redis) | fan-out on read (PostgreSQL) |")
    print("|---|---|---|---|")
    tl = C.get("timeline", {})

    def peer_read(key):
        r = P.get(key)
        return "%s / %s (client, %d reads/s)" % (f_ms(r["p50"]), f_ms(r["p99"]), r["rps"]) if r else "-"

    if tl:
        print("| timeline read, 20 items, reader following 1,000 (10 celebrities): p50 / p99 | server %s / %s; "
              "client %s / %s (wrk -c1, %.0f req/s) | %s | %s |" % (
                  f_ms(tl["server"]["p50"]), f_ms(tl["server"]["p99"]), f_ms(tl["wrk"]["client"].get("p50")),
                  f_ms(tl["wrk"]["client"].get("p99")), tl["wrk"]["rps"], peer_read("mastodon_read"),
                  peer_read("pg_read")))
    if "rps" in C:
        print("| timeline read, wrk -t2 -c32 | %.0f req/s | | |" % C["rps"]["timeline"]["rps"])
    v = C.get("visible")
    if v:
        mv = P.get("mastodon_visible", {})
        print("| post (5,000 followers) -> 201, p50 / p99 | %s / %s | | %s / %s (INSERT + commit) |" % (
            f_ms(v["ack"]["p50"]), f_ms(v["ack"]["p99"]), f_ms(P.get("pg_post", {}).get("p50")),
            f_ms(P.get("pg_post", {}).get("p99"))))
        print("| post (5,000 followers) -> visible to the last follower, p50 / p99 (max) | %s / %s (%s) | %s / %s (%s) "
              "| at commit |" % (f_ms(v["visible"]["p50"]), f_ms(v["visible"]["p99"]), f_ms(v["visible"]["max"]),
                                 f_ms(mv.get("p50")), f_ms(mv.get("p99")), f_ms(mv.get("max"))))
    b = C.get("burst")
    if b:
        mb = P.get("mastodon_burst", {})
        print("| fan-out, %d posts of 5,000-follower authors at once | %d rows in %.2f s: %d rows/s | %s rows in %s s: "
              "%s rows/s | none (0 rows) |" % (b["posts"], b["rows"], b["secs"], b["rows_per_s"], mb.get("rows", "-"),
                                              mb.get("secs", "-"), mb.get("rows_per_s", "-")))
    if b and b.get("timeline_meanwhile", {}).get("n"):
        tm = b["timeline_meanwhile"]
        print("| timeline read while that fan-out runs (wrk -c1, first %d s): server p50 / p99 (max) | %s / %s (%s) | | |" % (
            a.seconds, f_ms(tm["p50"]), f_ms(tm["p99"]), f_ms(tm["max"])))
    if "rps" in C:
        r = C["rps"]
        print("| unread_count (reader) vs /healthz, wrk -t2 -c32 | %.0f vs %.0f req/s: %.0f%% | | |" % (
            r["unread"]["rps"], r["healthz"]["rps"], 100 * r["ratio"]))
        if "me" in r:
            print("| for scale: GET /v1/me (bearer check + one row), same run | %.0f req/s: %.0f%% of /healthz | | |" % (
                r["me"]["rps"], 100 * r["me"]["rps"] / r["healthz"]["rps"]))
    print()
    # The peers' reads are timed in their client, with no HTTP in between;
    # chime's both in the server (its access log) and at wrk, over HTTP.
    for key, name in (("mastodon_read", "Mastodon design"), ("pg_read", "fan-out on read")):
        if tl and key in P:
            for q in ("p50", "p99"):
                print("ratio timeline %s, %s (client) / chime: %.2fx against chime's server-side %s, %.2fx against "
                      "wrk's" % (q, name, P[key][q] / tl["server"][q], f_ms(tl["server"][q]),
                                 P[key][q] / tl["wrk"]["client"][q]))
    if v and "mastodon_visible" in P:
        print("ratio post -> visible p99, Mastodon design / chime: %.2fx" % (P["mastodon_visible"]["p99"] /
                                                                          v["visible"]["p99"]))
    if b and "mastodon_burst" in P:
        print("ratio fan-out rows/s, chime / Mastodon design: %.2fx" % (b["rows_per_s"] / P["mastodon_burst"]["rows_per_s"]))
    if "rps" in C:
        print("unread_count / healthz: %.0f%% (goal >= 50%%)" % (100 * C["rps"]["ratio"]))
    if tl:
        print("timeline p99 server-side: %s (goal < 10 ms)" % f_ms(tl["server"]["p99"]))
    if v:
        print("post -> visible p99: %s (goal < 1 s); entries %d of %d" % (f_ms(v["visible"]["p99"]), v["entries"],
                                                                          v["entries_expected"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=5, help="each wrk run")
    ap.add_argument("--posts", type=int, default=30, help="posts of the 5,000-follower author")
    ap.add_argument("--interval", type=float, default=0.3)
    ap.add_argument("--burst", type=int, default=100, help="authors posting at once")
    ap.add_argument("--reads", type=int, default=2000, help="peers' timeline reads")
    ap.add_argument("--only", choices=["all", "chime", "peers"], default="all")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="feedbench-")
    os.chmod(d, 0o755)
    info = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "nproc": os.cpu_count(),
            "uname": " ".join(platform.uname()), "load_start": loadavg()}
    log("bench/feed: %s; %d cores; load %s; work dir %s" % (info["date"], info["nproc"], " ".join(info["load_start"]), d))
    log("settings: wrk %d s a run; %d posts %.1f s apart; burst of %d authors; peers %d reads; chime SQLite defaults "
        "(--feed-push-max-followers 10000, --feed-timeline-max 800, --feed-active-days 30)" % (
            a.seconds, a.posts, a.interval, a.burst, a.reads))
    g = graph.make(int(time.time() * 1000), log=log)
    info["graph"] = "%d users, %d follows, %d posts" % (graph.N, len(g.fer), len(g.p_id))
    A_followers = graph.followers_of(g, graph.AUTHOR)
    burst_authors = list(range(graph.AUTHOR + 1, graph.AUTHOR + 1 + a.burst))
    C, P = {}, {}
    pgdir = None
    redis = None
    try:
        if a.only in ("all", "chime"):
            c = Chime(d, False, "schema")
            c.stop()
            graph.chime_sqlite(g, os.path.join(d, "chime.db"),
                               [graph.READER, graph.AUTHOR, A_followers[-1]] + burst_authors, log=log)
            C = chime_measure(g, d, a, A_followers, burst_authors)
        if a.only in ("all", "peers"):
            import psycopg2
            import redis as redislib
            pgdir = os.path.join(d, "pg")
            uri = subprocess.run([os.path.join(ROOT, "scripts/pg.sh"), "start", pgdir], check=True, capture_output=True,
                                 text=True, env=dict(os.environ, PG_DURABLE="1")).stdout.strip()
            pg = psycopg2.connect(host=pgdir, user="chime", dbname="postgres")
            graph.peer_pg(g, pg, log=log)
            sock = os.path.join(d, "redis.sock")
            redis = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
                                      "--save", "", "--appendonly", "no", "--dir", d],
                                     stdout=open(os.path.join(d, "redis.log"), "w"), stderr=subprocess.STDOUT)
            for _ in range(100):
                if os.path.exists(sock):
                    break
                time.sleep(0.05)
            r = redislib.Redis(unix_socket_path=sock)
            graph.peer_redis(g, r, A_followers, log=log)
            P = peer_measure(g, a, pg, r, A_followers, burst_authors)
            pg.close()
    finally:
        if redis:
            redis.terminate()
            redis.wait()
        if pgdir:
            subprocess.run([os.path.join(ROOT, "scripts/pg.sh"), "stop", pgdir])
        info["load_end"] = loadavg()
        with open(os.path.join(d, "results.json"), "w") as f:
            json.dump({"info": info, "chime": C, "peers": P}, f, indent=1)
        report(info, C, P, a)
        if a.keep:
            log("work dir kept: %s" % d)
        else:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
