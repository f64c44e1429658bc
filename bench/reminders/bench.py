"""bench/reminders: N in-app reminders due within one minute, fired by chime
(one node on SQLite, or several nodes sharing PostgreSQL), and the same
instants as BullMQ delayed jobs on redis-server. Prints fired/s and
lateness (fire time minus due time): median, p99, max. Run through
bench/reminders/run.sh.

The reminder rows are written straight into the database (through SQL, as
the calendar's sync would write them: one-off events, next fire stored):
making a million events over HTTP would measure the HTTP API instead.
Reminders belong to 1000 organizers, so they spread over the shards."""
import argparse
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(ROOT, "build/chime")
ORGS = 1000
M64 = (1 << 64) - 1


def shard_of(uid, shards):
    """notify_shard_of (src/notify/notify_sync.c): splitmix64's finalizer."""
    x = uid & M64
    x ^= x >> 30
    x = (x * 0xbf58476d1ce4e5b9) & M64
    x ^= x >> 27
    x = (x * 0x94d049bb133111eb) & M64
    x ^= x >> 31
    return x % shards


def percentile(xs, q):
    return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else -1


def report(name, lat, n, first_due, last_fired):
    lat.sort()
    span = max(0.001, (last_fired - first_due) / 1000.0)
    line = "%-28s delivered %8d of %8d  fired/s %8.0f  lateness ms: median %6d  p99 %7d  max %7d" % (
        name, len(lat), n, len(lat) / span, percentile(lat, 0.5), percentile(lat, 0.99), lat[-1] if lat else -1)
    print(line, flush=True)
    return {"delivered": len(lat), "n": n, "rate": len(lat) / span, "p50": percentile(lat, 0.5),
            "p99": percentile(lat, 0.99), "max": lat[-1] if lat else -1}


def timeline(rows, t0):
    """Lateness by due time, in 5 s steps: where a run fell behind."""
    steps = {}
    for late, due, _ in rows:
        steps.setdefault((int(due) - t0) // 5000, []).append(int(late))
    for k in sorted(steps):
        v = sorted(steps[k])
        print("  due +%3d s: %7d delivered  lateness ms median %6d  p99 %6d  max %6d" % (
            k * 5, len(v), percentile(v, 0.5), percentile(v, 0.99), v[-1]), flush=True)


def seed_sql(n, shards, t0, seconds, pg, method="push", hook=None, base=0):
    """Statements that write ORGS users, calendars and events and n
    reminders due over [t0, t0 + seconds) (SQL both backends take); for
    method "webhook", one endpoint per organizer at the URL hook. base
    offsets every id and e-mail, so that a second seeding of the same
    database (bench/chat, one per phase) does not collide."""
    per = n // ORGS
    orgs = ",".join("(%d, %d, %d)" % (base + i, base + 1000000 + i, shard_of(base + 1000000 + i, shards))
                    for i in range(ORGS))
    span = seconds * 1000
    ks = ("CREATE TEMP TABLE ks AS SELECT CAST(generate_series(0, %d) AS BIGINT) AS k" % (per - 1) if pg else
          "CREATE TEMP TABLE ks AS WITH RECURSIVE c(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM c WHERE k < %d) "
          "SELECT k FROM c" % (per - 1))
    due = "%d + (ks.k * %d + o.i - %d) * %d / %d" % (t0, ORGS, base, span, n)
    return [
        ks,
        "CREATE TEMP TABLE orgs AS SELECT column1 AS i, column2 AS u, column3 AS sh FROM (VALUES %s) v" % orgs,
        "INSERT INTO users (id, email, email_lower, name, password_hash, created_ms) "
        "SELECT u, 'b' || i || '@bench', 'b' || i || '@bench', 'b', 'x', 0 FROM orgs",
        "INSERT INTO calendars (id, owner_id, summary, time_zone, is_primary, created_ms) "
        "SELECT 2000000 + i, u, 'c', 'UTC', 1, 0 FROM orgs",
        "INSERT INTO events (id, calendar_id, created_by, ical_uid, summary, start_local, end_local, start_ms, "
        "duration_s, etag, created_ms, updated_ms) SELECT 3000000 + i, 2000000 + i, u, 'e' || i, "
        "'bench', '20300101T000000', '20300101T010000', 0, 3600, 'x', 0, 0 FROM orgs",
        "DELETE FROM reminder_dirty",
        # reminder k of organizer i is due at t0 + (k * ORGS + i) * span / n
        "INSERT INTO reminders (id, event_id, user_id, method, minutes_before, shard, single, floor_ms, "
        "next_fire_ms, occurrence_ms, start_ms) SELECT %d + ks.k * %d + o.i + 1, 3000000 + o.i, o.u, "
        "'%s', ks.k, o.sh, 1, 0, %s, %s, 0 FROM orgs o CROSS JOIN ks" % (base * per, ORGS, method, due, due),
    ] + ([] if method != "webhook" else [
        "INSERT INTO webhooks (id, user_id, url, secret, created_ms) SELECT 4000000 + i, u, '%s', 'bench', 0 "
        "FROM orgs" % hook])


def sqlite_exec(path, stmts):
    con = sqlite3.connect(path, timeout=60)
    for s in stmts:
        con.execute(s)
    con.commit()
    con.close()


def sqlite_rows(path, q):
    con = sqlite3.connect(path, timeout=60)
    try:
        return con.execute(q).fetchall()
    finally:
        con.close()


def psql(url, q):
    out = subprocess.run(["psql", url, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", q], check=True, capture_output=True,
                         text=True).stdout
    return [tuple(line.split("|")) for line in out.splitlines() if line]


def cpu_seconds(pid):
    """utime + stime of a live process, in seconds (all its threads)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def written_bytes(pid):
    """Bytes a live process has passed to write(2) and friends (wchar)."""
    try:
        with open("/proc/%d/io" % pid) as f:
            return int(dict(l.split(": ") for l in f.read().splitlines())["wchar"])
    except (OSError, KeyError, ValueError):
        return 0


def start_node(db, port, log, extra):
    # The default lease settings (15 s TTL): a restarted node comes back
    # under its own id and takes its leases back at once (issue 24.1).
    cmd = [BIN, "serve", "--listen", "127.0.0.1:%d" % port, "--db", db, "--access-log", "off", "--threads", "1"] + extra
    return subprocess.Popen(cmd, stdout=log, stderr=log)


def bench_chime(a, tmp):
    pg = a.pg is not None
    if pg:
        name = "bench_rem_%d" % os.getpid()
        subprocess.run(["psql", a.pg, "-qc", "CREATE DATABASE %s" % name], check=True)
        db = re.sub(r"/postgres(\?|$)", r"/%s\1" % name, a.pg)
    else:
        path = os.path.join(tmp, "bench.db")
        db = "sqlite:" + path
    subprocess.run([BIN, "migrate", "--db", db], check=True, capture_output=True)
    t0 = int(time.time() * 1000) + a.lead * 1000
    hook = "http://127.0.0.1:%d/hook" % a.hook_port
    stmts = seed_sql(a.reminders, 1024, t0, a.seconds, pg, a.method, hook)
    s0 = time.time()
    if pg:
        psql(db, ";".join(stmts))
        # A table in service is not freshly bulk-loaded: without this,
        # autovacuum analyzes the million new rows in the middle of the run.
        psql(db, "VACUUM ANALYZE reminders")
    else:
        sqlite_exec(path, stmts)
    print("seeded %d reminders in %.1f s; first due in %.1f s" % (a.reminders, time.time() - s0,
                                                                    (t0 - time.time() * 1000) / 1000), flush=True)
    if t0 < time.time() * 1000 + 3000:
        sys.exit("seeding took longer than --lead; raise it")
    logs, procs = [], []
    extra = ["--delivery-workers", str(a.workers), "--reminder-window", str(a.window)] + a.chime_arg
    receiver = None
    if a.method == "webhook":
        extra += ["--webhook-allow-private", "1"]
        hook_out = os.path.join(tmp, "hooks.json")
        cmd = ([os.path.join(ROOT, "build/bench/receiver")] if a.receiver == "c" else
               ["node", os.path.join(HERE, "receiver.js")])
        receiver = subprocess.Popen(cmd + [str(a.hook_port), hook_out], stdout=subprocess.PIPE, text=True)
        receiver.stdout.readline()
    for i in range(a.nodes):
        log = open(os.path.join(tmp, "node%d.log" % i), "w")
        logs.append(log)
        procs.append(start_node(db, a.port + i, log, extra))
    killed_at = None
    try:
        deadline = t0 + a.seconds * 1000 + a.drain * 1000
        if a.kill_at is not None:
            time.sleep(max(0, (t0 + a.kill_at * 1000) / 1000 - time.time()))
            procs[0].send_signal(signal.SIGKILL)
            procs[0].wait()
            killed_at = time.time()
            down = a.downtime
            time.sleep(down)
            procs[0] = start_node(db, a.port, logs[0], extra)
            print("node 0 SIGKILLed %.1f s after the first due time, restarted %.1f s later" % (a.kill_at, down),
                  flush=True)
        count_q = "SELECT count(*) FROM notifications"
        # Nothing can be complete before the last due time: counting a
        # growing table every second until then only takes CPU from the
        # system under test (on PostgreSQL, a scan of up to 1M rows).
        time.sleep(max(0, (t0 + a.seconds * 1000) / 1000 - time.time()))
        while time.time() * 1000 < deadline:
            time.sleep(1)
            if receiver:
                with urllib.request.urlopen("http://127.0.0.1:%d/count" % a.hook_port) as r:
                    n = json.load(r)["unique"]
            else:
                n = int((psql(db, count_q) if pg else sqlite_rows(path, count_q))[0][0])
            if n >= a.reminders:
                break
        # CPU per delivery says more than lateness on a noisy host: the
        # work done, whatever the neighbours did (a killed node's first
        # life is not counted).
        node_cpu = sum(cpu_seconds(p.pid) for p in procs)
        node_wchar = sum(written_bytes(p.pid) for p in procs)
        recv_cpu = cpu_seconds(receiver.pid) if receiver else 0.0
        if receiver:
            # (lateness, due, arrival) as the receiver saw them; repeats are
            # deliveries of an id it already had (at least once).
            receiver.send_signal(signal.SIGTERM)
            receiver.wait(60)
            with open(hook_out) as f:
                got = json.load(f)
            rows = [(x[0], x[1] - x[0], x[1]) for x in got["got"]]
            dups = got["repeats"]
        else:
            q = "SELECT fired_ms - due_ms, due_ms, fired_ms FROM notifications"
            rows = psql(db, q) if pg else sqlite_rows(path, q)
            dups_q = "SELECT count(*) - count(DISTINCT delivery_id) FROM notifications"
            dups = int((psql(db, dups_q) if pg else sqlite_rows(path, dups_q))[0][0])
        lat = [int(r[0]) for r in rows]
        last = max((int(r[2]) for r in rows), default=t0)
        label = "chime %s x%d%s%s" % ("postgresql" if pg else "sqlite", a.nodes, " webhook" if receiver else "",
                                      " (kill)" if killed_at else "")
        res = report(label, lat, a.reminders, t0, last)
        res["inbox_duplicates"] = dups
        res["node_cpu_s"] = node_cpu
        print("  CPU: chime %.1f s (%.0f us a delivery)%s; chime wrote %.0f bytes a delivery" % (
            node_cpu, node_cpu * 1e6 / max(1, len(lat)),
            ", receiver %.1f s" % recv_cpu if receiver else "", node_wchar / max(1, len(lat))), flush=True)
        if killed_at:
            kill_ms = killed_at * 1000
            restart_ms = kill_ms + a.downtime * 1000
            # Lateness beyond the downtime for what fell due while down or just before.
            beyond = sorted(int(r[2]) - max(int(r[1]), restart_ms) for r in rows
                            if int(r[1]) >= kill_ms - 5000 and int(r[1]) < restart_ms)
            if beyond:
                print("  due around the outage: %d, delivered at most %d ms after the restart (p99 %d)" % (
                    len(beyond), beyond[-1], percentile(beyond, 0.99)), flush=True)
            # The measure: lateness minus the downtime (kill to restart).
            worst = max(lat) - int(a.downtime * 1000)
            print("  max lateness beyond the %.1f s downtime: %d ms (goal <= 2000)" % (a.downtime, worst), flush=True)
            res["beyond_downtime_max"] = worst
        print("  %s: %d" % ("webhook repeats (same delivery id)" if receiver else "inbox duplicates", dups),
              flush=True)
        if a.timeline:
            timeline(rows, t0)
        for log in logs:
            log.flush()
        taken = 0
        for i in range(len(procs)):
            with open(os.path.join(tmp, "node%d.log" % i)) as f:
                taken += sum(int(m.group(1)) for m in re.finditer(r"took over (\d+) outbox rows", f.read()))
        print("  outbox rows taken over by polls (hold lapsed or retried): %d" % taken, flush=True)
        return res
    finally:
        for p in procs + ([receiver] if receiver else []):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        for log in logs:
            log.close()
        if pg and a.keep:
            print("kept database: %s" % name, flush=True)
        elif pg:
            subprocess.run(["psql", a.pg, "-qc", "DROP DATABASE IF EXISTS %s" % name], capture_output=True)


def bench_bullmq(a, tmp):
    port = a.redis_port
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        t0 = int(time.time() * 1000) + a.lead * 1000
        out = os.path.join(tmp, "bullmq.json")
        node = ["node", os.path.join(HERE, "bullmq.js")]
        subprocess.run(node + ["add", str(port), str(a.reminders), str(t0), str(a.seconds * 1000)], check=True)
        if t0 < time.time() * 1000 + 3000:
            print("bullmq: adding took longer than --lead; its lateness includes that", flush=True)
        deadline = t0 + a.seconds * 1000 + a.drain * 1000
        subprocess.run(node + ["worker", str(port), out, str(a.reminders), str(deadline)], check=True)
        with open(out) as f:
            got = json.load(f)
        lat = [x[0] for x in got]
        last = max((x[1] for x in got), default=t0)
        return report("bullmq delayed jobs", lat, a.reminders, t0, last)
    finally:
        redis.terminate()
        redis.wait(10)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reminders", type=int, default=1000000)
    p.add_argument("--seconds", type=int, default=60)
    p.add_argument("--lead", type=int, default=40, help="seconds from seeding to the first due time")
    p.add_argument("--drain", type=int, default=60, help="seconds to wait after the last due time")
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--pg", help="PostgreSQL URI (its /postgres database); default: SQLite")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--window", type=int, default=2000)
    p.add_argument("--port", type=int, default=18600)
    p.add_argument("--redis-port", type=int, default=16398)
    p.add_argument("--kill-at", type=float, help="SIGKILL node 0 this many seconds after the first due time")
    p.add_argument("--downtime", type=float, default=5.0)
    p.add_argument("--only", choices=["chime", "bullmq"])
    p.add_argument("--method", choices=["push", "webhook"], default="push",
                   help="chime's channel: the in-app inbox (push) or a webhook to a local receiver")
    p.add_argument("--hook-port", type=int, default=18700)
    p.add_argument("--receiver", choices=["c", "node"], default="c",
                   help="the webhook receiver: receiver.c (h2o; light on the shared cores) or receiver.js")
    p.add_argument("--timeline", action="store_true", help="print lateness by due time, in 5 s steps")
    p.add_argument("--bin", help="the chime binary to run (default build/chime), for A/B runs")
    p.add_argument("--chime-arg", action="append", default=[], help="an extra argument for chime serve (repeatable)")
    p.add_argument("--keep", action="store_true",
                   help="keep the temp directory (node logs, SQLite file) and the PostgreSQL database, to look into")
    a = p.parse_args()
    if a.bin:
        global BIN
        BIN = os.path.abspath(a.bin)
    a.reminders -= a.reminders % ORGS
    tmp = tempfile.mkdtemp(prefix="chime-bench-rem-")
    results = {}
    try:
        if a.only in (None, "chime"):
            results["chime"] = bench_chime(a, tmp)
        if a.only in (None, "bullmq"):
            results["bullmq"] = bench_bullmq(a, tmp)
    finally:
        if a.keep:
            print("kept: %s" % tmp, flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)  # a 1M-row database each run
    if "chime" in results and "bullmq" in results:
        c, b = results["chime"], results["bullmq"]
        print("ratios (bullmq / chime): fired/s %.2f, p99 lateness %.1f, max lateness %.1f" % (
            b["rate"] / c["rate"], b["p99"] / max(1, c["p99"]), b["max"] / max(1, c["max"])))


if __name__ == "__main__":
    main()
