"""bench/jobs: start lateness and load of many second-level cron jobs on
several nodes -- chime's scheduler on a shared PostgreSQL against BullMQ
job schedulers on redis-server. Run through bench/jobs/run.sh.

Both get the same timetable: job i fires at second (i % EVERY) of every
EVERY seconds. Lateness is (time the run started) - (its fire time): for
chime the database clock at the start of the run against the cron time
(job_runs.started_ms - scheduled_ms), for BullMQ job.processedOn against
job.opts.prevMillis. Only fire times inside the measuring window count;
runs still missing 3 s after the window are reported as missing.

--bin PATH (default: $CHIME_BIN, else build/chime) runs another chime
binary, for A/B runs of two builds; nothing else changes."""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "bench", "jobs")
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid, children=False):
    """utime+stime of pid (and, if asked, of its live children)."""
    total = 0.0
    pids = [pid]
    if children:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
        pids += [int(p) for p in out.split()]
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICK
        except (OSError, IndexError):
            pass
    return total


def percentile(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def psql(url, sql):
    out = subprocess.run(["psql", url, "-qAt", "-F", "\t", "-c", sql], check=True, capture_output=True,
                         text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def wait_window(seconds):
    """A window starting on a whole second a moment from now."""
    start = int(time.time()) + 2
    return start * 1000, (start + seconds) * 1000


def sleep_until(ms):
    time.sleep(max(0.0, ms / 1000.0 - time.time()))


def bench_chime(a, tmp):
    pgdir = os.path.join(tmp, "pg")
    base = subprocess.run([os.path.join(ROOT, "scripts/pg.sh"), "start", pgdir], check=True, capture_output=True,
                          text=True).stdout.strip()
    procs = []
    try:
        psql(base, "CREATE DATABASE bench")
        url = base.replace("/postgres?", "/bench?")
        for i in range(a.nodes):
            log = open(os.path.join(tmp, "chime-%d.log" % i), "w")
            procs.append(subprocess.Popen(
                [a.bin, "serve", "--listen", "127.0.0.1:0", "--db", url,
                 "--bench-jobs", str(a.jobs), "--bench-every", str(a.every), "--access-log", "off",
                 "--threads", "1", "--job-runners", str(a.runners)], stdout=log, stderr=log))
        # Wait until every job's lease is held and the nodes hold about
        # equal shares (they start one after another and rebalance).
        deadline = time.time() + 180
        while True:
            try:
                rows = psql(url, "SELECT owner, count(*) FROM leases WHERE name LIKE 'job:bench-%'"
                                 " AND owner IS NOT NULL AND expires_ms >"
                                 " (extract(epoch FROM clock_timestamp()) * 1000)::bigint GROUP BY owner")
            except subprocess.CalledProcessError:
                rows = []  # not migrated yet
            counts = sorted(int(c) for _, c in rows)
            if sum(counts) == a.jobs and len(counts) == a.nodes and counts[-1] - counts[0] <= a.jobs // 50:
                break
            if time.time() > deadline:
                raise RuntimeError("leases never balanced: %s" % counts)
            time.sleep(1)
        time.sleep(a.every)  # let catch-up from the start settle
        start, end = wait_window(a.seconds)
        sleep_until(start)
        pg_pid = int(open(os.path.join(pgdir, "data", "postmaster.pid")).readline())
        stat_sql = ("SELECT xact_commit, tup_returned + tup_fetched, tup_inserted + tup_updated + tup_deleted"
                    " FROM pg_stat_database WHERE datname = 'bench'")
        c0 = [cpu_seconds(p.pid) for p in procs]
        pg0 = cpu_seconds(pg_pid, children=True)
        s0 = [int(x) for x in psql(url, stat_sql)[0]]
        sleep_until(end)
        c1 = [cpu_seconds(p.pid) for p in procs]
        pg1 = cpu_seconds(pg_pid, children=True)
        s1 = [int(x) for x in psql(url, stat_sql)[0]]
        time.sleep(3)
        rows = psql(url, "SELECT started_ms - scheduled_ms, node, outcome FROM job_runs WHERE scheduled_ms >= %d"
                         " AND scheduled_ms < %d AND job LIKE 'bench-%%'" % (start, end))
        late = [int(r[0]) for r in rows if r[2] == "ok"]
        per_node = {}
        for r in rows:
            per_node[r[1]] = per_node.get(r[1], 0) + 1
        secs = (end - start) / 1000.0
        return {
            "runs": len(late), "expected": a.jobs * a.seconds // a.every,
            "not_ok": len(rows) - len(late),
            "median_ms": percentile(late, 0.5), "p99_ms": percentile(late, 0.99), "max_ms": max(late or [0]),
            "runs_per_node": sorted(per_node.values()),
            "node_cpu_pct": [round(100 * (y - x) / secs, 1) for x, y in zip(c0, c1)],
            "db_cpu_pct": round(100 * (pg1 - pg0) / secs, 1),
            "db_commits_per_s_per_node": round((s1[0] - s0[0]) / secs / a.nodes),
            "db_rows_read_per_s_per_node": round((s1[1] - s0[1]) / secs / a.nodes),
            "db_rows_written_per_s_per_node": round((s1[2] - s0[2]) / secs / a.nodes),
        }
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run([os.path.join(ROOT, "scripts/pg.sh"), "stop", pgdir])


def redis_info(port):
    out = subprocess.run(["redis-cli", "-p", str(port), "INFO", "stats"], capture_output=True, text=True).stdout
    return int(re.search(r"total_commands_processed:(\d+)", out).group(1))


def bench_bullmq(a, tmp):
    port = a.redis_port
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", tmp], stdout=subprocess.DEVNULL)
    workers = []
    try:
        for _ in range(100):
            if subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        node = ["node", os.path.join(HERE, "bullmq.js")]
        subprocess.run(node + ["setup", str(port), str(a.jobs), str(a.every)], check=True)
        # Workers start at once and run through a warm-up of one period, as
        # chime's nodes do before their window.
        start, end = wait_window(a.seconds)
        start, end = start + a.every * 1000, end + a.every * 1000
        outs = [os.path.join(tmp, "bullmq-%d.json" % i) for i in range(a.nodes)]
        workers = [subprocess.Popen(node + ["worker", str(port), o, str(start), str(end)]) for o in outs]
        sleep_until(start)
        w0 = [cpu_seconds(w.pid) for w in workers]
        r0, k0 = cpu_seconds(redis.pid), redis_info(port)
        sleep_until(end)
        w1 = [cpu_seconds(w.pid) for w in workers]
        r1, k1 = cpu_seconds(redis.pid), redis_info(port)
        for w in workers:
            w.wait(60)
        late = []
        for o in outs:
            with open(o) as f:
                late += json.load(f)
        secs = (end - start) / 1000.0
        return {
            "runs": len(late), "expected": a.jobs * a.seconds // a.every, "not_ok": 0,
            "median_ms": percentile(late, 0.5), "p99_ms": percentile(late, 0.99), "max_ms": max(late or [0]),
            "node_cpu_pct": [round(100 * (y - x) / secs, 1) for x, y in zip(w0, w1)],
            "db_cpu_pct": round(100 * (r1 - r0) / secs, 1),
            "db_commands_per_s_per_node": round((k1 - k0) / secs / a.nodes),
        }
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
        redis.terminate()
        redis.wait(10)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=10000)
    p.add_argument("--every", type=int, default=10, help="seconds between runs of each job")
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--seconds", type=int, default=60, help="measuring window")
    p.add_argument("--runners", type=int, default=2, help="chime --job-runners")
    p.add_argument("--redis-port", type=int, default=16399)
    p.add_argument("--only", choices=["chime", "bullmq"])
    p.add_argument("--bin", default=os.environ.get("CHIME_BIN") or os.path.join(ROOT, "build/chime"),
                   help="the chime binary to run (default $CHIME_BIN, else build/chime), for A/B runs")
    a = p.parse_args()
    a.bin = os.path.abspath(a.bin)
    results = {"jobs": a.jobs, "every_s": a.every, "nodes": a.nodes, "window_s": a.seconds, "runners": a.runners,
               "machine": "%d cores, %s" % (os.cpu_count(), os.uname().release), "date": time.strftime("%F")}
    with tempfile.TemporaryDirectory(prefix="chime-bench-jobs-") as tmp:
        os.chmod(tmp, 0o755)
        if a.only in (None, "chime"):
            results["chime"] = bench_chime(a, tmp)
            print("chime:", json.dumps(results["chime"]), flush=True)
        if a.only in (None, "bullmq"):
            results["bullmq"] = bench_bullmq(a, tmp)
            print("bullmq:", json.dumps(results["bullmq"]), flush=True)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
