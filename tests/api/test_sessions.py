"""The node's memory of checked bearer tokens (--session-cache): a token is
read from the database once, then trusted for at most the cache's time and
never past the session's expiry; a sign-out is refused at once on the node
that did it and, on PostgreSQL, on another node as soon as the bus hint
arrives (well within the default 60 s bound); --session-cache 0 reads the
database on every request."""
import signal
import time
import unittest

from chime import BACKEND, Server, fresh_db, main
from test_jobs import sql, wait_for


def session_rows(db):
    return int(sql(db, "SELECT count(*) FROM sessions")[0][0])


class Base(unittest.TestCase):
    args = []

    def setUp(self):
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.proc:
                self.assertEqual(s.stop(), 0)

    def start(self, db=None, args=None):
        s = Server(db=db or fresh_db(), args=list(args if args is not None else self.args)).start()
        self.servers.append(s)
        return s


class TestDefaults(Base):
    def test_signout_refused_at_once(self):
        s = self.start()
        u = s.signup()
        tok = s.signin(u["email"])
        for _ in range(3):  # checked, then remembered
            self.assertEqual(s.get("/v1/me", token=tok).status, 200)
        self.assertEqual(s.delete("/v1/sessions/current", token=tok).status, 204)
        for _ in range(3):  # on every loop
            r = s.get("/v1/me", token=tok)
            self.assertEqual(r.status, 401, r)
            self.assertEqual(r.json["error"]["field"], "authorization")

    def test_expiry_is_kept_even_when_remembered(self):
        s = self.start(args=["--session-ttl", "2"])
        u = s.signup()
        tok = s.signin(u["email"])
        self.assertEqual(s.get("/v1/me", token=tok).status, 200)
        time.sleep(2.2)
        r = s.get("/v1/me", token=tok)
        self.assertEqual(r.status, 401, r)
        self.assertEqual(r.json["error"]["code"], "token_expired")

    def test_a_guess_is_never_remembered(self):
        s = self.start()
        u = s.signup()
        tok = s.signin(u["email"])
        self.assertEqual(s.get("/v1/me", token=tok + "x").status, 401)
        self.assertEqual(s.get("/v1/me", token=tok).status, 200)


class TestBound(Base):
    def test_row_deleted_behind_the_server(self):
        """The bound itself: a session removed from the database directly
        (no sign-out) works for at most --session-cache more."""
        db = fresh_db()
        s = self.start(db, ["--session-cache", "1"])
        u = s.signup()
        tok = s.signin(u["email"])
        self.assertEqual(s.get("/v1/me", token=tok).status, 200)
        sql(db, "DELETE FROM sessions")
        t0 = time.time()
        refused = wait_for(lambda: s.get("/v1/me", token=tok).status == 401, timeout=5, step=0.05)
        self.assertTrue(refused)
        self.assertLess(time.time() - t0, 1.6)

    def test_zero_reads_every_time(self):
        db = fresh_db()
        s = self.start(db, ["--session-cache", "0"])
        u = s.signup()
        tok = s.signin(u["email"])
        self.assertEqual(s.get("/v1/me", token=tok).status, 200)
        sql(db, "DELETE FROM sessions")
        self.assertEqual(s.get("/v1/me", token=tok).status, 401)
        self.assertEqual(session_rows(db), 0)


@unittest.skipIf(BACKEND != "pg", "one node on SQLite")
class TestTwoNodes(Base):
    args = ["--lease-heartbeat", "0.5", "--lease-ttl", "2"]

    def test_signout_on_one_node_reaches_the_other(self):
        db = fresh_db()
        a, b = self.start(db), self.start(db)
        u = a.signup()
        tok = a.signin(u["email"])
        for _ in range(3):
            self.assertEqual(b.get("/v1/me", token=tok).status, 200)  # b remembers it (60 s by default)
        self.assertEqual(a.delete("/v1/sessions/current", token=tok).status, 204)
        t0 = time.time()
        refused = wait_for(lambda: b.get("/v1/me", token=tok).status == 401, timeout=10, step=0.02)
        self.assertTrue(refused, "node b still takes a token signed out on node a")
        self.assertLess(time.time() - t0, 2.0)


if __name__ == "__main__":
    main()
