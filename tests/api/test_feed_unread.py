"""The unread count a node remembers (src/feed/feed_memo.c) never outlives
what it was computed from: after each kind of change -- a pushed post, a
pulled (celebrity) post, a read mark, a delete, an unfollow, a follow's
back-fill -- the very next unread_count agrees with a recount of the
timeline, however often it was asked before. On PostgreSQL the same holds
when the change is made through another node or process (the check is
against the shared database, not a hint). Default settings except where a test needs
a celebrity threshold of 2."""
import signal
import unittest

from chime import BACKEND, Server, fresh_db, main
from test_jobs import sql, wait_for


class Node:
    """A server and the calls the checks need."""

    def __init__(self, server):
        self.s = server

    def unread(self, tok):
        r = self.s.get("/v1/timeline/unread_count", token=tok)
        assert r.status == 200, r
        return r.json["count"]

    def ids(self, tok):
        r = self.s.get("/v1/timeline?limit=200", token=tok)
        assert r.status == 200, r
        return [int(p["id"]) for p in r.json["items"]]

    def marker(self, tok):
        return int(self.s.get("/v1/markers", token=tok).json["home"]["last_read_id"])

    def post(self, tok, text):
        r = self.s.post("/v1/posts", {"text": text}, token=tok)
        assert r.status == 201, r
        return r.json["id"]


class Base(unittest.TestCase):
    args = []

    def setUp(self):
        self.db = fresh_db()
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.proc:
                s.stop(signal.SIGKILL)

    def node(self):
        s = Server(db=self.db, args=list(self.args)).start()
        self.servers.append(s)
        return Node(s)

    def agree(self, reader, tok, want=None, asker=None):
        """The recount from the reader's timeline (ids above its mark), and
        the count asked three times (the first fills the memory); want:
        what the recount must be."""
        mark = reader.marker(tok)
        recount = len([i for i in reader.ids(tok) if i > mark])
        if want is not None:
            self.assertEqual(recount, want)
        for _ in range(3):
            self.assertEqual((asker or reader).unread(tok), recount)
        return recount


class TestEveryChange(Base):
    args = ["--feed-push-max-followers", "2"]

    def test_counts_follow_each_change(self):
        n = self.node()
        (a, ta), (b, tb), (r, tr) = n.s.new_user(), n.s.new_user(), n.s.new_user()
        for u in (a, b):
            self.assertEqual(n.s.request("PUT", "/v1/me/following/" + u["id"], token=tr).status, 200)
        self.agree(n, tr, 0)
        # pushed posts, fanned out in the background; b's is the newest, so
        # the changes below leave the top of the timeline where it is
        ids = [n.post(ta, "p%d" % i) for i in range(4)]
        self.assertTrue(wait_for(lambda: len(n.ids(tr)) == 4, timeout=5))
        self.agree(n, tr, 4)
        n.post(tb, "b's")
        self.assertTrue(wait_for(lambda: len(n.ids(tr)) == 5, timeout=5))
        self.agree(n, tr, 5)
        # the read mark
        n.s.post("/v1/markers", {"home": {"last_read_id": ids[0]}}, token=tr)
        self.agree(n, tr, 4)
        # a delete under the top
        self.assertEqual(n.s.delete("/v1/posts/" + ids[2], token=ta).status, 204)
        self.agree(n, tr, 3)
        # unfollow (a's entries leave from under b's), then follow again
        # (the back-fill puts them back under it)
        self.assertEqual(n.s.delete("/v1/me/following/" + a["id"], token=tr).status, 204)
        self.agree(n, tr, 1)
        self.assertEqual(n.s.request("PUT", "/v1/me/following/" + a["id"], token=tr).status, 200)
        self.agree(n, tr, 3)
        # a celebrity (over 2 followers here): pulled, never pushed
        (c, tc) = n.s.new_user()
        for t in (tr, n.s.new_user()[1], n.s.new_user()[1]):
            self.assertEqual(n.s.request("PUT", "/v1/me/following/" + c["id"], token=t).status, 200)
        n.post(tc, "first, makes it pulled")
        n.post(tc, "second")
        self.assertTrue(wait_for(lambda: n.unread(tr) == 5, timeout=5))
        self.agree(n, tr, 5)


class TestBackfillWindow(Base):
    """While an account that left pull mode is being back-filled, its
    recent posts are both pulled (merged at read time) and, for the
    followers already reached, pushed: each counts once. The window is
    held open by a back-fill row due far in the future."""
    args = ["--feed-push-max-followers", "2"]

    def test_a_post_pulled_and_pushed_counts_once(self):
        n = self.node()
        (c, tc) = n.s.new_user()
        fans = [n.s.new_user() for _ in range(3)]
        for _, t in fans:
            self.assertEqual(n.s.request("PUT", "/v1/me/following/" + c["id"], token=t).status, 200)
            n.ids(t)
        pid = int(n.post(tc, "pulled"))
        tf = fans[0][1]
        self.assertTrue(wait_for(lambda: n.ids(tf) == [pid], timeout=5))
        self.assertTrue(wait_for(lambda: not sql(self.db, "SELECT 1 FROM feed_outbox"), timeout=5))
        fan, star = int(fans[0][0]["id"], 16), int(c["id"], 16)
        sql(self.db, "INSERT INTO feed_outbox (id, kind, post_id, author_id, grp, next_attempt_ms, created_ms) "
                     "VALUES (1, 'backfill', %d, %d, 0, 9000000000000000, 0)" % (pid, star))
        sql(self.db, "INSERT INTO timelines (user_id, post_id, author_id) VALUES (%d, %d, %d)" % (fan, pid, star))
        self.assertEqual(n.ids(tf), [pid])
        self.agree(n, tf, 1)


class TestAnotherNode(Base):
    """Two servers on one database: PostgreSQL nodes, or two processes on
    one SQLite file (the check there starts from SQLite's data_version,
    which sees the other process's commits)."""
    args = ["--lease-heartbeat", "0.5", "--lease-ttl", "2"]

    def test_changes_through_another_node_are_seen_at_once(self):
        na, nb = self.node(), self.node()
        (a, ta), (b, tb), (r, tr) = na.s.new_user(), na.s.new_user(), na.s.new_user()
        for u in (a, b):
            self.assertEqual(na.s.request("PUT", "/v1/me/following/" + u["id"], token=tr).status, 200)
        ids = [na.post(ta, "p%d" % i) for i in range(3)]
        self.assertTrue(wait_for(lambda: len(na.ids(tr)) == 3, timeout=10))
        na.post(tb, "b's")
        self.assertTrue(wait_for(lambda: len(na.ids(tr)) == 4, timeout=10))
        self.agree(na, tr, 4, asker=nb)  # b remembers 4
        na.s.post("/v1/markers", {"home": {"last_read_id": ids[0]}}, token=tr)
        self.agree(na, tr, 3, asker=nb)
        self.assertEqual(na.s.delete("/v1/posts/" + ids[1], token=ta).status, 204)
        self.agree(na, tr, 2, asker=nb)
        self.assertEqual(na.s.delete("/v1/me/following/" + a["id"], token=tr).status, 204)
        self.agree(na, tr, 1, asker=nb)
        self.assertEqual(na.s.request("PUT", "/v1/me/following/" + a["id"], token=tr).status, 200)
        self.agree(na, tr, 2, asker=nb)
        pid = na.post(ta, "new")
        self.assertTrue(wait_for(lambda: int(pid) in na.ids(tr), timeout=10))
        self.agree(na, tr, 3, asker=nb)


if __name__ == "__main__":
    main()
