"""bench/hot (see run.sh). The data is seeded straight into the database
with SQL (a million posts through the API would take longer than the
benchmark): posts, and the actions as the per-post counts the recompute
reads (hot_counts), summing to --actions. Ingest is measured separately,
over HTTP, on top of that data."""
import argparse
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHIME = os.environ.get("CHIME_BIN") or os.path.join(ROOT, "build/chime")  # CHIME_BIN: another build, for A/B
EPOCH = 1577836800000  # idgen's
WEIGHTS = {"views": 1, "likes": 5, "comments": 10, "shares": 20}
SHARES = {"views": 0.70, "likes": 0.20, "comments": 0.07, "shares": 0.03}

ap = argparse.ArgumentParser()
ap.add_argument("--posts", type=int, default=1000000)
ap.add_argument("--actions", type=int, default=10000000)
ap.add_argument("--users", type=int, default=1000)
ap.add_argument("--seconds", type=int, default=10)
ap.add_argument("--conns", type=int, default=50)
args = ap.parse_args()
tmp = tempfile.mkdtemp(prefix="bench-hot-")
PORT, RPORT = 18471, 18472
procs = []


def http(method, path, body=None, token=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (PORT, path), method=method,
                                 data=json.dumps(body).encode() if body is not None else None)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=60) as r:
        data = r.read()
        return json.loads(data) if data else None


def start_chime(db, one_core):
    cmd = [CHIME, "serve", "--listen", "127.0.0.1:%d" % PORT, "--db", db, "--access-log", "off", "--log-level",
           "warn", "--hot-every", "3600", "--password-ops", "1", "--password-mem", "8192", "--threads", "2"]
    if one_core:
        cmd = ["taskset", "-c", "1"] + cmd
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "chime.log"), "a"))
    procs.append(p)
    for _ in range(600):
        try:
            http("GET", "/healthz")
            return p
        except Exception:
            time.sleep(0.1)
    sys.exit("chime did not start: see " + tmp)


def stop(p):
    p.terminate()
    p.wait(60)


def wrk(url, script=None):
    cmd = ["wrk", "-t2", "-c%d" % args.conns, "-d%ds" % args.seconds] + (["-s", script] if script else []) + [url]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    m = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return float(m.group(1)) if m else 0.0, int(non2xx.group(1)) if non2xx else 0


def counts_for(n, total):
    """Per-post action totals: heavy-tailed (Pareto), summing to total."""
    rnd = random.Random(7)
    w = [rnd.paretovariate(1.2) for _ in range(n)]
    s = sum(w)
    a = [int(total * x / s) for x in w]
    a[0] += total - sum(a)
    return a


def split(total, rnd):
    v = int(total * SHARES["views"])
    l = int(total * SHARES["likes"])
    c = int(total * SHARES["comments"])
    return v, l, c, total - v - l - c


def seed_rows(now):
    rnd = random.Random(11)
    window = 7 * 86400000 - 3600000
    totals = counts_for(args.posts, args.actions)
    for i in range(args.posts):
        created = now - rnd.randrange(window)
        pid = ((created - EPOCH) << 22) | (i & 0x3FFFFF)
        v, l, c, s = split(totals[i], rnd)
        yield pid, created, v, l, c, s


def month_of(ms):
    t = time.gmtime(ms // 1000)
    return t.tm_year * 100 + t.tm_mon


def main():
    db_path = os.path.join(tmp, "bench.db")
    db = "sqlite:" + db_path
    subprocess.run([CHIME, "migrate", "--db", db], check=True, stdout=subprocess.DEVNULL)
    p = start_chime(db, False)
    tokens = []
    for i in range(100):
        email = "u%d@bench.example" % i
        http("POST", "/v1/users", {"email": email, "name": "User %d" % i, "password": "bench password"})
        tokens.append(http("POST", "/v1/sessions", {"email": email, "password": "bench password"})["token"])
    stop(p)

    t0 = time.time()
    now = int(time.time() * 1000)
    con = sqlite3.connect(db_path)
    users = [r[0] for r in con.execute("SELECT id FROM users")]
    for k in range(args.users):
        con.execute("INSERT INTO users (id, email, email_lower, name, password_hash, created_ms) VALUES (?,?,?,?,?,0)",
                    (1000000 + k, "a%d@x" % k, "a%d@x" % k, "Author %d" % k, "-"))
    users += [1000000 + k for k in range(args.users)]
    rows = list(seed_rows(now))
    rnd = random.Random(3)
    con.executemany("INSERT INTO posts (id, month, author_id, text, created_ms) VALUES (?,?,?,?,?)",
                    ((r[0], month_of(r[1]), rnd.choice(users), "post number %d, with some text" % i, r[1])
                     for i, r in enumerate(rows)))
    con.executemany("INSERT INTO hot_counts (post_id, created_ms, views, likes, comments, shares) VALUES (?,?,?,?,?,?)",
                    rows)
    con.commit()
    con.execute("ANALYZE")
    con.close()
    seed_s = time.time() - t0
    post_ids = [r[0] for r in rows]

    # Recompute: the whole server on one core; runs asked for by the admin.
    p = start_chime(db, True)
    admin = tokens[0]
    durations = []
    for _ in range(3):
        v = http("GET", "/v1/hot")["version"]
        http("POST", "/v1/admin/jobs/hot.recompute/run", token=admin)
        while http("GET", "/v1/hot")["version"] == v:
            time.sleep(0.05)
        m = re.search(r"^chime_hot_recompute_seconds ([0-9.]+)$", urllib.request.urlopen(
            "http://127.0.0.1:%d/metrics" % PORT).read().decode(), re.M)
        durations.append(float(m.group(1)))
    top = http("GET", "/v1/hot")
    stop(p)

    # HTTP: ingest and reads, both loops.
    p = start_chime(db, False)
    sample = random.Random(5).sample(post_ids, 20000)
    lua = os.path.join(tmp, "%s.lua")
    for name, method, suffix in (("like", "PUT", "like"), ("view", "POST", "views")):
        with open(lua % name, "w") as f:
            f.write("local ids = {%s}\nlocal toks = {%s}\n" % (",".join('"%d"' % i for i in sample),
                                                              ",".join('"%s"' % t for t in tokens)))
            f.write('math.randomseed(os.time())\nrequest = function()\n'
                    '  local path = "/v1/posts/" .. ids[math.random(#ids)] .. "/%s"\n'
                    '  return wrk.format("%s", path, {["Authorization"] = "Bearer " .. toks[math.random(#toks)]})\n'
                    'end\n' % (suffix, method))
    base = "http://127.0.0.1:%d" % PORT
    likes, likes_bad = wrk(base + "/", lua % "like")
    views, views_bad = wrk(base + "/", lua % "view")
    hot_rps, _ = wrk(base + "/v1/hot")
    health_rps, _ = wrk(base + "/healthz")
    stop(p)

    # (a) Redis: a sorted set, Reddit's additive score (time term plus
    # points/45000 * 100: ten points are worth 100 x 45000 / 10 s -- an
    # additive stand-in for log10, which ZINCRBY cannot do).
    rdir = os.path.join(tmp, "redis")
    os.makedirs(rdir)
    rp = subprocess.Popen(["redis-server", "--port", str(RPORT), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                           "no", "--dir", rdir], stdout=subprocess.DEVNULL)
    procs.append(rp)
    time.sleep(0.5)
    proto = []
    for r in rows:
        pts = r[2] * 1 + r[3] * 5 + r[4] * 10 + r[5] * 20
        score = "%.7f" % ((r[1] // 1000 - 1134028003) / 45000 + pts * 100 / 45000)
        member = str(r[0])
        proto.append("*4\r\n$4\r\nZADD\r\n$3\r\nhot\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(score), score, len(member), member))
    subprocess.run(["redis-cli", "-p", str(RPORT), "--pipe"], input="".join(proto).encode(), check=True,
                   stdout=subprocess.DEVNULL)

    def rbench(*cmd):
        out = subprocess.run(["redis-benchmark", "-p", str(RPORT), "-c", str(args.conns), "-n", "300000", "-r",
                              str(args.posts), "-q"] + list(cmd), capture_output=True, text=True).stdout
        m = re.findall(r"([0-9.]+) requests per second", out)
        return float(m[-1]) if m else 0.0
    zincr = rbench("ZINCRBY", "hot", "%.7f" % (5 * 100 / 45000), "__rand_int__")
    zrange = rbench("ZREVRANGE", "hot", "0", "49", "WITHSCORES")
    rp.terminate()
    rp.wait()

    # (b) PostgreSQL: the score computed and sorted per request.
    pgdir = os.path.join(tmp, "pg")
    os.chmod(tmp, 0o755)  # PostgreSQL runs as its own user under root
    url = subprocess.run([os.path.join(ROOT, "scripts/pg.sh"), "start", pgdir], capture_output=True, text=True,
                         check=True, env=dict(os.environ, PG_DURABLE="1")).stdout.strip()
    try:
        csv = os.path.join(tmp, "counts.csv")
        with open(csv, "w") as f:
            for r in rows:
                f.write("%d,%d,%d,%d,%d,%d\n" % r)
        os.chmod(csv, 0o644)
        subprocess.run(["psql", url, "-q", "-c", "CREATE TABLE hot_counts (post_id BIGINT PRIMARY KEY, created_ms "
                        "BIGINT NOT NULL, views BIGINT, likes BIGINT, comments BIGINT, shares BIGINT)",
                        "-c", "\\copy hot_counts FROM '%s' CSV" % csv,
                        "-c", "CREATE INDEX ON hot_counts(created_ms)", "-c", "VACUUM ANALYZE hot_counts"], check=True)
        q = os.path.join(tmp, "q.sql")
        with open(q, "w") as f:
            # float8 throughout: extract() is numeric, and numeric power()
            # would measure PostgreSQL's bignum arithmetic, not the design.
            f.write("SELECT post_id, (CASE WHEN p > 1 THEN power(p - 1, 0.8) ELSE p - 1 END) / "
                    "power((now_ms - least(created_ms, now_ms)) / 3600000.0 + 2, 1.8) AS score FROM (SELECT "
                    "post_id, created_ms, (views + 5 * likes + 10 * comments + 20 * shares)::float8 AS p, "
                    "extract(epoch FROM now())::float8 * 1000 AS now_ms FROM hot_counts WHERE created_ms >= "
                    "(extract(epoch FROM now())::float8 * 1000 - 7 * 86400000)::bigint) s "
                    "ORDER BY score DESC, created_ms DESC, post_id DESC LIMIT 50;\n")
        out = subprocess.run(["pgbench", "-n", "-c", "2", "-j", "2", "-T", str(args.seconds), "-f", q, url],
                             capture_output=True, text=True).stdout
        m = re.search(r"tps = ([0-9.]+)", out)
        lat = re.search(r"latency average = ([0-9.]+ ms)", out)
        pg_tps = float(m.group(1)) if m else 0.0
        pg_lat = lat.group(1) if lat else "?"
    finally:
        subprocess.run([os.path.join(ROOT, "scripts/pg.sh"), "stop", pgdir])

    load = open("/proc/loadavg").read().split()[:3]
    print("machine: %d cores, %s; load average %s; date %s" % (os.cpu_count(), os.uname().release, " ".join(load),
                                                              time.strftime("%Y-%m-%d", time.gmtime())))
    print("data: %d posts in the window, %d actions (seeded by SQL in %.0f s), %d users" %
          (args.posts, args.actions, seed_s, len(users)))
    print("top of the list: %s (score %.3f)" % (top["items"][0]["id"], top["items"][0]["score"]))
    rows_out = [
        ("hot.recompute, SQLite, one core (s, min/median of 3)", "%.3f / %.3f" % (min(durations), statistics.median(durations))),
        ("ingest: likes over HTTP (req/s; non-2xx)", "%.0f (%d)" % (likes, likes_bad)),
        ("ingest: views over HTTP (req/s; non-2xx)", "%.0f (%d)" % (views, views_bad)),
        ("GET /v1/hot (req/s)", "%.0f" % hot_rps),
        ("GET /healthz, same run (req/s)", "%.0f" % health_rps),
        ("(a) Redis ZINCRBY (req/s)", "%.0f" % zincr),
        ("(a) Redis ZREVRANGE 0 49 WITHSCORES (req/s)", "%.0f" % zrange),
        ("(b) PostgreSQL score + ORDER BY LIMIT 50 (req/s, 2 clients; latency)", "%.1f; %s" % (pg_tps, pg_lat)),
    ]
    for k, v in rows_out:
        print("%-62s %s" % (k, v))
    print("ratio GET /v1/hot / GET /healthz: %.0f%% (goal >= 80%%)" % (100 * hot_rps / health_rps))
    if zrange:
        print("ratio GET /v1/hot / Redis ZREVRANGE: %.2fx" % (hot_rps / zrange))
    if pg_tps:
        print("ratio GET /v1/hot / PostgreSQL per-request: %.0fx" % (hot_rps / pg_tps))
    if zincr:
        print("ratio views ingest / Redis ZINCRBY: %.3fx" % (views / zincr))


try:
    main()
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
    shutil.rmtree(tmp, ignore_errors=True)
