"""Proof that a job runs on exactly one node: `chime serve` processes share
one database (three on PostgreSQL, one on SQLite) and run the per-second
"tick" job (--test-tick-job), which records (tick, node, epoch) through a
fenced write in the same transaction that records the run. Meanwhile the
test SIGKILLs the owner mid-run, SIGSTOPs the owner past its lease and
resumes it (its late write must be fenced off), and restarts nodes cleanly.
Then it checks the table: every second of the window ran exactly once or
was skipped visibly by the misfire policy, no tick ran twice, epochs only
grow in tick order (a stale owner never wrote after a newer one), and each
takeover came within one lease length (plus the polling slack noted)."""
import os
import platform
import re
import signal
import time
import unittest

from chime import BACKEND, Server, fresh_db
from test_jobs import sql, wait_for

NODES = 3 if BACKEND == "pg" else 1
TTL, HB, WORK_MS = 2.0, 0.5, 300
ARGS = ["--lease-heartbeat", str(HB), "--lease-ttl", str(TTL), "--test-tick-job", str(WORK_MS),
        "--access-log", "off", "--threads", "1"]
# The test polls every 50 ms over HTTP and the waiting node wakes 5 ms
# after the expiry it read; allow that much on top of the lease length.
SLACK = 0.4


def node_id(server):
    m = wait_for(lambda: re.search(r"jobs: node (\S+) scheduling", server.log()), timeout=10)
    return m.group(1)


def sleep_until_mid_run():
    """Ticks start on the second and work WORK_MS: land ~120 ms in."""
    frac = time.time() % 1.0
    time.sleep((1.12 - frac) % 1.0)


# The tick handler works by sleeping 10 ms at a time (jobs/builtin.c).
NANOSLEEP = {"x86_64": {"35", "230"}, "aarch64": {"101", "115"}}.get(platform.machine(), set())


def in_a_run(pid):
    """Whether a stopped process's job runner is inside the tick's work."""
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                comm = f.read().strip()
            with open("/proc/%d/task/%s/syscall" % (pid, tid)) as f:
                call = f.read().split(" ", 1)[0]
        except OSError:
            continue
        if comm == "job-runner" and call in NANOSLEEP:
            return True
    return not NANOSLEEP  # an architecture this test does not know: trust the timing


def stop_mid_run(pid, tries=10):
    """SIGSTOPs pid inside a run of the tick. Where the job runner's sleeps
    can be seen (/proc/PID/task/TID/syscall shows a blocked thread's call
    while it runs too), it waits until the runner is inside a run and stops
    it then: on a loaded machine runs started later than any moment aimed
    at (ten tries at 120 ms into the second all missed once in CI). If the
    stop lands between two of the run's sleeps, the process is resumed at
    once (long before its lease could lapse) and tried again."""
    for i in range(tries):
        if NANOSLEEP:
            deadline = time.time() + 3
            while not in_a_run(pid) and time.time() < deadline:
                time.sleep(0.005)
        else:
            sleep_until_mid_run()
        os.kill(pid, signal.SIGSTOP)
        time.sleep(0.02)  # the stop takes effect
        if in_a_run(pid):
            print("stopped inside a run at try %d" % (i + 1))
            return True
        os.kill(pid, signal.SIGCONT)
    return False


class TestCluster(unittest.TestCase):
    def setUp(self):
        self.db = fresh_db()
        self.servers = []
        self.paused = set()

    def tearDown(self):
        for s in self.servers:
            if s.proc is not None:
                if s.proc.pid in self.paused:
                    os.kill(s.proc.pid, signal.SIGCONT)
                s.stop(signal.SIGKILL)

    def start(self):
        s = Server(db=self.db, args=ARGS).start()
        s.node = node_id(s)
        self.servers.append(s)
        return s

    def live(self):
        return [s for s in self.servers if s.proc is not None and s.proc.pid not in self.paused]

    def tick_lease(self):
        for s in self.live():
            try:
                r = s.get("/v1/admin/leases", token=self.token, timeout=5)
            except OSError:  # one that is stopping
                continue
            if r.status == 200:
                for l in r.json["items"]:
                    if l["name"] == "job:tick":
                        return l
        return None

    def owner_server(self):
        l = wait_for(lambda: (self.tick_lease() or {}).get("owner"), timeout=10)
        self.assertTrue(l, "nobody took the tick lease")
        return [s for s in self.servers if s.proc is not None and s.node == l][0]

    def wait_takeover(self, old, t0):
        """Seconds from t0 until another live process owns it: another node,
        or the old node's own restart (the same id: it takes its lease back
        at once), at an epoch past the old owner's."""
        def taken():
            lease = self.tick_lease() or {}
            live = {s.node for s in self.live() if s is not old}
            return lease.get("owner") in live and lease.get("epoch", 0) > old.last_epoch
        owner = wait_for(taken, timeout=3 * TTL + 5, step=0.05)
        self.assertTrue(owner, "no takeover from %s" % old.node)
        return time.time() - t0

    def note_epoch(self, server):
        server.last_epoch = int(sql(self.db, "SELECT epoch FROM leases WHERE name = 'job:tick'")[0][0])

    def ticks(self):
        return [(int(t), str(n), int(e)) for t, n, e in
                sql(self.db, "SELECT tick, node, epoch FROM job_ticks ORDER BY tick, recorded_ms")]

    def test_exactly_once_through_kill_pause_restart(self):
        for _ in range(NODES):
            self.start()
        _, self.token = self.servers[0].new_user()  # first user: admin
        self.assertTrue(wait_for(lambda: len(self.ticks()) >= 3, timeout=15), "ticks do not flow")
        report = {}

        # 1. SIGKILL the owner in the middle of a run.
        victim = self.owner_server()
        sleep_until_mid_run()
        t0 = time.time()
        victim.stop(signal.SIGKILL)
        self.note_epoch(victim)
        if NODES == 1:
            # The restart is the takeover: counted from when the successor
            # serves (a sanitizer build's start is slow under load), what
            # must not be waited out is the dead process's lease.
            self.start()
            t0 = time.time()
        report["kill"] = self.wait_takeover(victim, t0)
        self.assertLessEqual(report["kill"], TTL + SLACK, report)
        if NODES > 1:
            self.start()  # restart the killed node

        # 2. SIGSTOP the owner mid-run for longer than its lease; resume.
        stopped = self.owner_server()
        before = len(self.ticks())
        self.paused.add(stopped.proc.pid)
        self.assertTrue(stop_mid_run(stopped.proc.pid), "never caught the owner inside a run")
        t0 = time.time()
        if NODES > 1:
            self.note_epoch(stopped)
            report["pause"] = self.wait_takeover(stopped, t0)
            self.assertLessEqual(report["pause"], TTL + SLACK, report)
        time.sleep(max(0, t0 + TTL + 1.5 - time.time()))
        os.kill(stopped.proc.pid, signal.SIGCONT)
        self.paused.discard(stopped.proc.pid)
        # On waking, its lease is gone (expired or taken): the work it was
        # doing stops and its write is refused.
        self.assertTrue(wait_for(lambda: "lease lost" in stopped.log() or "fenced off" in stopped.log(),
                                 timeout=5), stopped.log()[-3000:])
        self.assertTrue(wait_for(lambda: "run interrupted" in stopped.log(), timeout=5), stopped.log()[-3000:])
        self.assertTrue(wait_for(lambda: len(self.ticks()) > before + 2, timeout=10))
        print("paused node:", *[l for l in stopped.log().splitlines()
                                if re.search("lease lost|fenced|interrupted|renewal", l)], sep="\n  ")

        # 3. Clean restart of the owner: it hands the lease over at once.
        leaving = self.owner_server()
        self.note_epoch(leaving)
        if NODES == 1:
            self.assertEqual(leaving.stop(), 0)
            t0 = time.time()  # from the moment a successor exists (the stop took its own time)
            self.start()
            report["clean"] = self.wait_takeover(leaving, t0)
        else:
            # Another node takes it while the leaving one is still exiting
            # (a sanitizer build's exit checks for leaks, slowly under load).
            leaving.proc.send_signal(signal.SIGTERM)
            t0 = time.time()
            report["clean"] = self.wait_takeover(leaving, t0)
            self.assertEqual(leaving.stop(), 0)
        self.assertIn("released", leaving.log())
        self.assertLess(report["clean"], TTL, report)  # no waiting for expiry
        if NODES > 1:
            self.start()
        time.sleep(3)

        for s in list(self.live()):
            self.assertEqual(s.stop(), 0, s.log()[-3000:])
        self.check_ticks()
        if NODES > 1:  # one node comes back under its own id (cluster/identity.h)
            self.assertGreaterEqual(len({n for _, n, _ in self.ticks()}), 2)
        print("takeover seconds:", report)

    def test_database_fences_a_writer_that_thinks_it_holds_the_lease(self):
        """The lease moves on behind a node's back (as if another node took
        it over while this one's clock ran slow): the node still believes it
        holds the lease -- heartbeats are 1.5 s apart -- so only the
        database can refuse its next write. It must, and once the phantom's
        lease expires the node takes the job back and catches up."""
        args = [a for a in ARGS]
        args[args.index("--lease-heartbeat") + 1] = "1.5"
        args[args.index("--lease-ttl") + 1] = "4"
        args[args.index("--test-tick-job") + 1] = "50"
        s = Server(db=self.db, args=args).start()
        s.node = node_id(s)
        self.servers.append(s)
        self.assertTrue(wait_for(lambda: len(self.ticks()) >= 2, timeout=15), "ticks do not flow")

        def epoch():
            rows = sql(self.db, "SELECT epoch FROM leases WHERE name = 'job:tick'")
            return int(rows[0][0]) if rows else None
        # Right after a renewal: the next one is 1.5 s away, a tick sooner.
        e0 = epoch()
        self.assertTrue(wait_for(lambda: epoch() != e0, timeout=5, step=0.01))
        sql(self.db, "UPDATE leases SET owner = 'phantom', epoch = epoch + 100, expires_ms = expires_ms - 1000"
                     " WHERE name = 'job:tick'")
        t0 = time.time()
        phantom = epoch()
        self.assertTrue(wait_for(lambda: "fenced off: the lease moved on" in s.log(), timeout=3), s.log()[-3000:])
        # ...refused by the database, not by the node's own bookkeeping:
        # the node learnt of the loss from that refusal, before any renewal.
        log = s.log()
        lost = log.find("lease lost")
        self.assertTrue(lost < 0 or log.find("fenced off") < lost, log[-3000:])
        # The node got it back after the phantom's lease ran out, and caught up.
        self.assertTrue(wait_for(lambda: (epoch() or 0) > phantom, timeout=10), s.log()[-3000:])
        self.assertTrue(wait_for(lambda: self.ticks()[-1][0] >= int(t0) + 2, timeout=10))
        self.assertEqual(s.stop(), 0, s.log()[-3000:])
        rows = self.ticks()
        self.assertFalse([r for r in rows if phantom - 100 < r[2] <= phantom], "a write got past the fence")
        self.check_ticks(at_least=4)

    def check_ticks(self, at_least=10):
        rows = self.ticks()
        self.assertGreaterEqual(len(rows), at_least)
        seen = {}
        for t, n, e in rows:
            seen.setdefault(t, []).append((n, e))
        dups = {t: v for t, v in seen.items() if len(v) > 1}
        self.assertEqual(dups, {}, "ticks run more than once")
        # Skipped fire times are recorded by the misfire policy, visibly.
        skipped = set()
        for sched, err in sql(self.db, "SELECT scheduled_ms, error FROM job_runs"
                                       " WHERE job = 'tick' AND outcome = 'skipped'"):
            n = int(re.search(r"(\d+) fire time", str(err)).group(1))
            skipped.update(range(int(sched) // 1000, int(sched) // 1000 + n))
        first, last = rows[0][0], rows[-1][0]
        missing = [t for t in range(first, last + 1) if t not in seen and t not in skipped]
        self.assertEqual(missing, [], "ticks neither run nor skipped")
        # One owner per epoch, and epochs never go back in tick order: a
        # stale owner never got a write in after its successor's.
        owners = {}
        for t, n, e in rows:
            owners.setdefault(e, set()).add(n)
        self.assertEqual({e: o for e, o in owners.items() if len(o) > 1}, {})
        epochs = [e for _, _, e in rows]
        self.assertEqual(epochs, sorted(epochs))
        # The history agrees: every recorded tick has an "ok" run.
        ok = {int(s) // 1000 for (s,) in sql(self.db, "SELECT scheduled_ms FROM job_runs"
                                                      " WHERE job = 'tick' AND outcome = 'ok'")}
        recent = [t for t in seen if t > last - 150]  # history keeps the last 200
        self.assertEqual([t for t in recent if t not in ok], [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
