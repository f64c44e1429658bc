"""A disk that fails a sync of the WAL (SQLite; the chat answers once its
writes are synced): the send it covered is 503, and so is every chat write
after it though the disk answers again, since what the disk lost leaves a
hole a power cut would take the later writes with; /healthz says
disk_failed so a supervisor restarts the node; after a restart the chat
takes writes again and a retried send finds what was committed.

The failing disk is tests/faults/failsync.c, preloaded: fdatasync and fsync
of the "-wal" file answer EIO while a flag file exists, as a failed
write-back does."""
import os
import unittest

from chime import BACKEND, ROOT, TMP, Server, ServerTest, fresh_db, main

SHIM = os.path.join(ROOT, "build/tests/libfailsync.so")


@unittest.skipUnless(BACKEND == "sqlite", "PostgreSQL syncs its own WAL: its commit fails, and nothing follows it")
class TestDiskFailure(ServerTest):
    def setUp(self):
        self.flag = os.path.join(TMP, "failsync-%d" % os.getpid())
        self.addCleanup(lambda: os.path.exists(self.flag) and os.remove(self.flag))

    def send(self, s, conv, tok, cid):
        return s.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": cid, "text": "hi " + cid}, token=tok)

    def test_a_failed_sync_stops_chat_writes_until_a_restart(self):
        db = fresh_db()
        env = {"LD_PRELOAD": SHIM, "CHIME_FAILSYNC": self.flag,
               # the sanitizers' runtime need not come first for this
               "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
        s = Server(db=db, env=env).start()
        try:
            (a, ta), (b, tb) = s.new_user(), s.new_user()
            conv = s.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
            self.assertEqual(self.send(s, conv, ta, "one").status, 201)
            self.assertEqual(s.get("/healthz").status, 200)
            open(self.flag, "w").close()
            r = self.send(s, conv, tb, "two")
            os.remove(self.flag)
            self.assertError(r, 503, code="unavailable")
            self.assertIn("until chime restarts", r.json["error"]["message"])
            # The disk answers again; the chat still takes nothing.
            r = self.send(s, conv, ta, "three")
            self.assertError(r, 503)
            self.assertIn("until chime restarts", r.json["error"]["message"])
            self.assertError(s.get("/healthz"), 503, code="disk_failed")
            self.assertIn("no chat write is taken until chime restarts", s.log())
            # Reads go on.
            self.assertEqual(s.get("/v1/unread", token=tb).status, 200)
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
        finally:
            self.assertEqual(s.stop(), 0)


if __name__ == "__main__":
    main()
