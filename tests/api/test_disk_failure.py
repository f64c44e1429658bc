"""A disk that fails a sync of the WAL (SQLite). Whoever's sync sees it --
the chat's syncer, an API request's commit, the checkpointer -- the whole
node stops writing: what the disk lost leaves a hole a power cut would
take every later commit with. Every request that may write is 503
disk_failed, though the disk answers again; reads go on; /healthz says
disk_failed so a supervisor restarts the node; after a restart chime
writes again from what the disk holds, and a retried send finds what was
committed.

The failing disk is tests/faults/failsync.c, preloaded: fdatasync and fsync
of the "-wal" file answer EIO while a flag file exists, as a failed
write-back does."""
import os
import unittest

from chime import BACKEND, ROOT, TMP, Server, ServerTest, fresh_db, main

SHIM = os.path.join(ROOT, "build/tests/libfailsync.so")
MESSAGE = "chime takes no writes until it restarts"


def event(summary):
    return {"summary": summary, "start": {"date_time": "2027-03-01T09:00:00", "time_zone": "UTC"},
            "end": {"date_time": "2027-03-01T10:00:00", "time_zone": "UTC"}}


@unittest.skipUnless(BACKEND == "sqlite", "PostgreSQL syncs its own WAL: its commit fails, and nothing follows it")
class TestDiskFailure(ServerTest):
    def setUp(self):
        self.flag = os.path.join(TMP, "failsync-%d" % os.getpid())
        self.addCleanup(lambda: os.path.exists(self.flag) and os.remove(self.flag))

    def failing_server(self, db):
        env = {"LD_PRELOAD": SHIM, "CHIME_FAILSYNC": self.flag,
               # the sanitizers' runtime need not come first for this
               "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
        return Server(db=db, env=env).start()

    def send(self, s, conv, tok, cid):
        return s.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": cid, "text": "hi " + cid}, token=tok)

    def assertRefused(self, r):
        self.assertError(r, 503, code="disk_failed")
        self.assertIn(MESSAGE, r.json["error"]["message"])

    def test_a_failed_sync_of_the_chat_stops_every_write_until_a_restart(self):
        db = fresh_db()
        s = self.failing_server(db)
        try:
            (a, ta), (b, tb) = s.new_user(), s.new_user()
            conv = s.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
            self.assertEqual(self.send(s, conv, ta, "one").status, 201)
            self.assertEqual(s.get("/v1/calendars", token=ta).status, 200)  # the primary, made now
            self.assertEqual(s.get("/healthz").status, 200)
            open(self.flag, "w").close()
            r = self.send(s, conv, tb, "two")
            os.remove(self.flag)
            self.assertRefused(r)
            # The disk answers again; nothing is written, the chat's or anyone's.
            self.assertRefused(self.send(s, conv, ta, "three"))
            self.assertRefused(s.post("/v1/events", event("after"), token=ta))
            self.assertRefused(s.post("/v1/users", {"email": "late@example.com", "name": "Late",
                                                    "password": "correct horse battery"}))
            self.assertRefused(s.get("/healthz"))
            self.assertIn("no write is taken until chime restarts", s.log())
            # Counted as refused before any route, not as the first route's.
            metrics = s.get("/metrics").body
            self.assertIn('chime_http_requests_total{route="unmatched",status="503"} 3', metrics)
            # Reads go on.
            self.assertEqual(s.get("/v1/unread", token=tb).status, 200)
            self.assertEqual(s.get("/v1/calendars", token=ta).status, 200)
        finally:
            self.assertEqual(s.stop(), 0)
        s = Server(db=db).start()
        try:
            self.assertEqual(s.get("/healthz").status, 200)
            ta = s.signin(a["email"])
            tb = s.signin(b["email"])
            # "two" was committed (this disk lost nothing): its retry is the original.
            self.assertEqual(self.send(s, conv, tb, "two").status, 200)
            self.assertEqual(self.send(s, conv, ta, "three").status, 201)
            texts = [m["text"] for m in s.get("/v1/conversations/%s/messages" % conv, token=ta).json["messages"]]
            self.assertEqual(texts, ["hi one", "hi two", "hi three"])
            self.assertEqual(s.post("/v1/events", event("after"), token=ta).status, 201)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_a_failed_commit_of_an_api_request_stops_the_chat_too(self):
        db = fresh_db()
        s = self.failing_server(db)
        try:
            (a, ta), (b, tb) = s.new_user(), s.new_user()
            conv = s.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
            self.assertEqual(s.post("/v1/events", event("before"), token=ta).status, 201)
            open(self.flag, "w").close()
            r = s.post("/v1/events", event("lost"), token=ta)
            os.remove(self.flag)
            self.assertEqual(r.status, 503, r)  # its own commit's sync failed, or the guard was first
            self.assertRefused(self.send(s, conv, tb, "one"))
            self.assertRefused(s.post("/v1/events", event("after"), token=ta))
            self.assertRefused(s.get("/healthz"))
        finally:
            self.assertEqual(s.stop(), 0)
        s = Server(db=db).start()
        try:
            ta = s.signin(a["email"])
            tb = s.signin(b["email"])
            items = s.get("/v1/events?from=2027-03-01T00:00:00Z&to=2027-03-02T00:00:00Z", token=ta).json["items"]
            self.assertEqual([i["summary"] for i in items], ["before"])  # a failed commit is no commit
            self.assertEqual(self.send(s, conv, tb, "one").status, 201)
        finally:
            self.assertEqual(s.stop(), 0)


if __name__ == "__main__":
    main()
