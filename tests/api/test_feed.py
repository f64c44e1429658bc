"""The follow feed on a real server: follows and profiles, posts (ids
time-ordered, idempotent with client_post_id, bounds, deletes that leave
every timeline), home timelines built by push (active followers) and pull
(accounts over the threshold, returning users rebuilt before their first
page, reads past the trimmed end), pages that neither skip nor repeat while
posts arrive, unread counts that agree with a recount, read marks, the
WebSocket "feed" frame, and a SIGKILL in the middle of a fan-out to 20,000
followers that loses and doubles nothing."""
import json
import signal
import threading
import time
import unittest

from chime import BACKEND, Server, ServerTest, fresh_db, main
from test_chat_ws import frames
from test_jobs import sql, wait_for


class FeedTest(ServerTest):
    def post(self, tok, text, cid=None, status=201):
        body = {"text": text}
        if cid:
            body["client_post_id"] = cid
        r = self.server.post("/v1/posts", body, token=tok)
        self.assertEqual(r.status, status, r)
        return r.json

    def follow(self, tok, uid):
        r = self.server.request("PUT", "/v1/me/following/" + uid, token=tok)
        self.assertEqual(r.status, 200, r)
        return r.json

    def timeline(self, tok, **q):
        path = "/v1/timeline?" + "&".join("%s=%s" % kv for kv in q.items())
        r = self.server.get(path, token=tok)
        self.assertEqual(r.status, 200, r)
        return r.json

    def all_pages(self, tok, limit=3):
        out, max_id = [], None
        while True:
            page = self.timeline(tok, limit=limit, **({"max_id": max_id} if max_id else {}))
            out += [p["id"] for p in page["items"]]
            max_id = page["next_max_id"]
            if not max_id:
                return out

    def texts(self, tok, **q):
        return [p["text"] for p in self.timeline(tok, **q)["items"]]

    def unread(self, tok):
        r = self.server.get("/v1/timeline/unread_count", token=tok)
        self.assertEqual(r.status, 200, r)
        return r.json["count"]

    def settle(self, tok, want):
        """Waits until the timeline's texts are want (the fan-out is async)."""
        return wait_for(lambda: self.texts(tok, limit=50) == want, timeout=5) or self.texts(tok, limit=50)


class TestFollows(FeedTest):
    def test_follow_unfollow_and_counts(self):
        (a, ta), (b, tb), (c, tc) = [self.server.new_user() for _ in range(3)]
        self.follow(tb, a["id"])
        prof = self.follow(tb, a["id"])  # idempotent
        self.assertEqual((prof["followers"], prof["followed"]), (1, True))
        self.follow(tc, a["id"])
        self.follow(tc, b["id"])
        self.assertEqual(self.server.get("/v1/users/" + a["id"], token=tc).json["followers"], 2)
        self.assertEqual(self.server.get("/v1/users/" + c["id"], token=tc).json["following"], 2)
        page = self.server.get("/v1/users/%s/followers?limit=1" % a["id"], token=ta).json
        self.assertEqual(len(page["items"]), 1)
        rest = self.server.get("/v1/users/%s/followers?limit=1&cursor=%s" % (a["id"], page["next_cursor"]),
                               token=ta).json
        self.assertEqual(sorted(x["id"] for x in page["items"] + rest["items"]), sorted([b["id"], c["id"]]))
        self.assertIsNone(rest["next_cursor"])
        self.assertEqual([x["id"] for x in self.server.get("/v1/users/%s/following" % c["id"], token=ta)
                          .json["items"]], sorted([a["id"], b["id"]]))
        self.assertEqual(self.server.delete("/v1/me/following/" + a["id"], token=tb).status, 204)
        self.assertEqual(self.server.delete("/v1/me/following/" + a["id"], token=tb).status, 204)
        self.assertEqual(self.server.get("/v1/users/" + a["id"], token=tc).json["followers"], 1)
        self.assertError(self.server.request("PUT", "/v1/me/following/" + a["id"], token=ta), 422, "user")
        self.assertError(self.server.request("PUT", "/v1/me/following/0123456789abcdef", token=ta), 404)
        self.assertError(self.server.get("/v1/users/zz", token=ta), 404)
        # {user} may be an email, in any case, its @ as it is or escaped.
        prof = self.server.request("PUT", "/v1/me/following/" + a["email"].upper(), token=tb)
        self.assertEqual((prof.status, prof.json["id"], prof.json["followed"]), (200, a["id"], True), prof)
        self.assertEqual(self.server.delete("/v1/me/following/" + a["email"].replace("@", "%40"), token=tb).status, 204)
        self.assertFalse(self.server.get("/v1/users/" + a["id"], token=tb).json["followed"])
        self.assertError(self.server.request("PUT", "/v1/me/following/nobody@example.org", token=tb), 404)
        for garbage in ("%zz", "a%00b@example.org", "x" * 400 + "@example.org", "@", "%40"):
            self.assertError(self.server.request("PUT", "/v1/me/following/" + garbage, token=tb), 404)
        self.assertError(self.server.request("PUT", "/v1/me/following/" + a["email"], token=ta), 422, "user")
        self.assertError(self.server.get("/v1/users/%s/followers?cursor=x" % a["id"], token=ta), 400, "cursor")


class TestPosts(FeedTest):
    def test_ids_idempotence_bounds_delete(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        p1 = self.post(ta, "one", "c-1")
        again = self.post(ta, "one again", "c-1", status=200)
        self.assertEqual(again, p1)
        ids = [int(self.post(ta, "p%d" % i)["id"]) for i in range(20)]
        self.assertEqual(ids, sorted(ids))  # time-ordered
        self.assertEqual(len(set(ids)), 20)
        self.assertTrue(all(i > int(p1["id"]) for i in ids))
        self.assertEqual(self.server.get("/v1/posts/" + p1["id"], token=tb).json, p1)
        self.assertEqual(p1["author"]["id"], a["id"])
        for bad in ({"text": ""}, {"text": "x" * 2001}, {"text": "a\u0000b"}, {"text": 1}, {}, {"text": "x", "z": 1},
                    {"text": "x", "client_post_id": ""}):
            self.assertError(self.server.post("/v1/posts", bad, token=ta), 400)
        for bad, field in (({"text": "bell\x07"}, "text"), ({"text": "crlf\r\n"}, "text"),
                           ({"text": "x", "client_post_id": "a\tb"}, "client_post_id")):
            self.assertError(self.server.post("/v1/posts", bad, token=ta), 400, field)
        self.assertEqual(self.post(tb, "two\n\tlines")["text"], "two\n\tlines")  # b's, not counted below
        wide = self.post(ta, "é" * 1000)  # 2000 bytes of UTF-8
        self.assertEqual(wide["text"], "é" * 1000)
        ids.append(int(wide["id"]))
        self.assertError(self.server.delete("/v1/posts/" + p1["id"], token=tb), 404)
        self.assertEqual(self.server.delete("/v1/posts/" + p1["id"], token=ta).status, 204)
        self.assertError(self.server.get("/v1/posts/" + p1["id"], token=ta), 404)
        self.assertError(self.server.get("/v1/posts/abc", token=ta), 404)
        self.assertError(self.server.get("/v1/posts/0", token=ta), 404)
        first = self.server.get("/v1/users/%s/posts?limit=5" % a["id"], token=tb).json
        page = first["items"]
        self.assertEqual([int(p["id"]) for p in page], sorted(ids, reverse=True)[:5])
        self.assertEqual(first["next_max_id"], page[-1]["id"])
        older = self.server.get("/v1/users/%s/posts?limit=5&max_id=%s" % (a["id"], first["next_max_id"]), token=tb)
        self.assertEqual([int(p["id"]) for p in older.json["items"]], sorted(ids, reverse=True)[5:10])
        # Paged by next_max_id to the end: every post once, the last page says so.
        seen, max_id = [], None
        while True:
            q = "?limit=4" + ("&max_id=" + max_id if max_id else "")
            got = self.server.get("/v1/users/%s/posts%s" % (a["id"], q), token=tb).json
            seen += [int(p["id"]) for p in got["items"]]
            max_id = got["next_max_id"]
            if max_id is None:
                break
        self.assertEqual(seen, sorted(ids, reverse=True))
        self.assertEqual(self.server.get("/v1/users/" + a["id"], token=tb).json["posts"], 21)  # 22 made, 1 deleted


class TestTimeline(FeedTest):
    def test_push_to_active_followers(self):
        (a, ta), (b, tb), (c, tc) = [self.server.new_user() for _ in range(3)]
        self.follow(tb, a["id"])
        self.follow(tb, c["id"])
        self.texts(tb)  # b reads: active from now on
        self.post(tb, "mine")
        t0 = time.time()
        self.post(ta, "from a")
        self.assertEqual(self.settle(tb, ["from a", "mine"]), True)
        self.assertLess(time.time() - t0, 1.5)
        self.post(tc, "from c")
        self.assertTrue(self.settle(tb, ["from c", "from a", "mine"]))
        # Unfollowing removes them; deleting removes it everywhere.
        self.server.delete("/v1/me/following/" + c["id"], token=tb)
        self.assertEqual(self.texts(tb), ["from a", "mine"])
        mine = self.timeline(tb)["items"][1]["id"]
        self.server.delete("/v1/posts/" + mine, token=tb)
        self.assertEqual(self.texts(tb), ["from a"])
        # Following back-fills their recent posts.
        self.follow(tb, c["id"])
        self.assertEqual(self.texts(tb), ["from c", "from a"])

    def test_returning_user_is_rebuilt_before_the_first_page(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        self.follow(tb, a["id"])
        self.texts(tb)
        # b has been away for 40 days: nothing is pushed to it.
        sql(self.server.db, "UPDATE feed_users SET active_ms = active_ms - 3456000000 WHERE user_id = %d"
            % int(b["id"], 16))
        for i in range(3):
            self.post(ta, "while away %d" % i)
        time.sleep(1)
        self.assertEqual(int(sql(self.server.db, "SELECT count(*) FROM timelines WHERE user_id = %d AND author_id = %d"
                                 % (int(b["id"], 16), int(a["id"], 16)))[0][0]), 0)
        # It comes back: the first page is already full.
        self.server.signin(b["email"])
        self.assertEqual(self.texts(tb), ["while away 2", "while away 1", "while away 0"])
        self.post(ta, "now")
        self.assertTrue(self.settle(tb, ["now", "while away 2", "while away 1", "while away 0"]))

    def test_unread_agrees_with_a_recount_and_markers_only_move_forward(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        self.follow(tb, a["id"])
        self.texts(tb)
        posts = [self.post(ta, "u%d" % i) for i in range(6)]
        self.assertTrue(self.settle(tb, ["u%d" % i for i in range(5, -1, -1)]))
        self.assertEqual(self.unread(tb), 6)
        mark = self.server.post("/v1/markers", {"home": {"last_read_id": posts[3]["id"]}}, token=tb)
        self.assertEqual(mark.status, 200, mark)
        self.assertEqual(mark.json["home"]["last_read_id"], posts[3]["id"])
        recount = len([p for p in self.timeline(tb, limit=50)["items"] if int(p["id"]) > int(posts[3]["id"])])
        self.assertEqual(self.unread(tb), recount)
        self.assertEqual(recount, 2)
        back = self.server.post("/v1/markers", {"home": {"last_read_id": posts[0]["id"]}}, token=tb)
        self.assertEqual(back.json["home"]["last_read_id"], posts[3]["id"])
        self.assertEqual(self.server.get("/v1/markers", token=tb).json["home"]["last_read_id"], posts[3]["id"])
        for bad in ({}, {"home": 1}, {"home": {"last_read_id": "x"}}, {"home": {"x": 1}}, {"other": {}}):
            self.assertError(self.server.post("/v1/markers", bad, token=tb), 400)

    def test_pages_neither_skip_nor_repeat_while_posts_arrive(self):
        authors = [self.server.new_user() for _ in range(3)]
        (r, tr) = self.server.new_user()
        for u, _ in authors:
            self.follow(tr, u["id"])
        self.texts(tr)
        for i in range(15):
            self.post(authors[i % 3][1], "before %d" % i)
        self.assertTrue(wait_for(lambda: len(self.timeline(tr, limit=50)["items"]) == 15, timeout=5))
        stop = threading.Event()
        def writer():
            i = 0
            while not stop.is_set():
                self.post(authors[i % 3][1], "during %d" % i)
                i += 1
        t = threading.Thread(target=writer)
        t.start()
        try:
            seen, max_id = [], None
            first = self.timeline(tr, limit=4)
            seen += [p["id"] for p in first["items"]]
            max_id = first["next_max_id"]
            while max_id:
                page = self.timeline(tr, limit=4, max_id=max_id)
                seen += [p["id"] for p in page["items"]]
                max_id = page["next_max_id"]
                time.sleep(0.05)
            newest = int(seen[0])
            # Then everything newer than the first page, with since_id.
            newer = self.timeline(tr, limit=200, since_id=seen[0])["items"]
        finally:
            stop.set()
            t.join()
        self.assertEqual(len(seen), len(set(seen)))
        self.assertEqual([int(x) for x in seen], sorted((int(x) for x in seen), reverse=True))
        everything = sorted({int(p["id"]) for p in self.timeline(tr, limit=200)["items"]}, reverse=True)
        self.assertEqual([i for i in everything if i <= newest], [int(x) for x in seen])
        self.assertTrue(all(int(p["id"]) > newest for p in newer))

    def test_feed_frame_on_the_websocket(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        self.follow(tb, a["id"])
        self.texts(tb)
        ws = self.server.ws(tb)
        ws.recv()
        self.post(ta, "ring")
        got = frames(ws, lambda f: f.get("type") == "feed", timeout=5)
        self.assertEqual(got[-1], {"type": "feed", "unread": 1})
        ws.close()


class TestPull(FeedTest):
    """Accounts over the threshold (2 followers here) are pulled."""
    server_args = ("--feed-push-max-followers", "2", "--feed-timeline-max", "10")

    def test_celebrity_pulled_and_back(self):
        (star, ts) = self.server.new_user()
        fans = [self.server.new_user() for _ in range(3)]
        for _, t in fans:
            self.follow(t, star["id"])
            self.texts(t)
        p = self.post(ts, "big news")
        time.sleep(0.5)
        fan = int(fans[0][0]["id"], 16)
        self.assertEqual(int(sql(self.server.db, "SELECT count(*) FROM timelines WHERE user_id = %d" % fan)[0][0]), 0)
        for _, t in fans:
            self.assertEqual(self.texts(t), ["big news"])  # merged at read time
            self.assertEqual(self.unread(t), 1)
        # Under the threshold again: its pulled posts are pushed.
        self.server.delete("/v1/me/following/" + star["id"], token=fans[2][1])
        self.post(ts, "smaller now")
        for _, t in fans[:2]:
            self.assertTrue(self.settle(t, ["smaller now", "big news"]))
        self.assertTrue(wait_for(lambda: int(sql(self.server.db, "SELECT count(*) FROM timelines WHERE user_id = %d"
                                                 % fan)[0][0]) == 2, timeout=5))
        self.assertEqual(self.texts(fans[2][1]), [])

    def test_reading_past_the_trimmed_end_pulls(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        self.follow(tb, a["id"])
        self.texts(tb)
        ids = [self.post(ta, "t%d" % i)["id"] for i in range(25)]
        # Fanned out in the background: the page may be empty at first.
        self.assertTrue(wait_for(lambda: [p["id"] for p in self.timeline(tb, limit=1)["items"]] == ids[-1:], timeout=5))
        self.texts(tb)  # the front page trims to 10 entries
        self.assertLessEqual(int(sql(self.server.db, "SELECT count(*) FROM timelines WHERE user_id = %d"
                                     % int(b["id"], 16))[0][0]), 10)
        self.assertEqual(self.all_pages(tb, limit=4), list(reversed(ids)))

    def test_unread_counts_pushed_and_pulled_together(self):
        (star, ts), (a, ta) = self.server.new_user(), self.server.new_user()
        fans = [self.server.new_user() for _ in range(3)]
        for i, (_, t) in enumerate(fans):
            self.follow(t, star["id"])
            if i < 2:  # a stays under the threshold: pushed
                self.follow(t, a["id"])
            self.texts(t)
        self.post(ts, "pulled 1")
        pushed = [self.post(ta, "pushed %d" % i) for i in range(3)]
        self.post(ts, "pulled 2")
        (fan, tf) = fans[0]
        self.assertTrue(self.settle(tf, ["pulled 2", "pushed 2", "pushed 1", "pushed 0", "pulled 1"]))
        self.assertEqual(self.unread(tf), 5)
        self.server.post("/v1/markers", {"home": {"last_read_id": pushed[1]["id"]}}, token=tf)
        recount = len([p for p in self.timeline(tf, limit=50)["items"] if int(p["id"]) > int(pushed[1]["id"])])
        self.assertEqual(recount, 2)
        self.assertEqual(self.unread(tf), recount)

    def test_a_full_timeline_is_marked_once(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        self.follow(tb, a["id"])
        self.texts(tb)
        ids = [self.post(ta, "f%d" % i)["id"] for i in range(10)]  # exactly --feed-timeline-max
        # Fanned out in the background: the page may be empty at first.
        self.assertTrue(wait_for(lambda: [p["id"] for p in self.timeline(tb, limit=1)["items"]] == ids[-1:], timeout=5))
        bid = int(b["id"], 16)
        for _ in range(2):  # the first front page marks the edge, the second finds it marked
            self.texts(tb)
            self.assertEqual(int(sql(self.server.db, "SELECT trimmed_below FROM feed_users WHERE user_id = %d"
                                     % bid)[0][0]), int(ids[0]))
            self.assertEqual(int(sql(self.server.db, "SELECT count(*) FROM timelines WHERE user_id = %d"
                                     % bid)[0][0]), 10)
        self.assertEqual(self.all_pages(tb, limit=4), list(reversed(ids)))


class TestFanoutKill(unittest.TestCase):
    """SIGKILL during a fan-out of 20,000 followers: nothing lost, nothing
    doubled, after a restart."""

    def test_kill_mid_fanout(self):
        db = fresh_db()
        # (By default an account with 20,000 followers is pulled, not pushed.)
        server = Server(db=db, args=["--feed-push-max-followers", "50000"]).start()
        try:
            star, ts = server.new_user()
            sid = int(star["id"], 16)
            now = int(time.time() * 1000)
            # 20,000 followers, active, written straight into the database.
            sql(db, "WITH RECURSIVE g(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM g WHERE x < 19999) "
                "INSERT INTO users (id, email, email_lower, name, password_hash, is_admin, created_ms) "
                "SELECT 1000000 + x, 'f' || x || '@x', 'f' || x || '@x', 'F', 'x', 0, 0 FROM g")
            fans = "id >= 1000000 AND id < 1020000"
            sql(db, "INSERT INTO feed_users (user_id, active_ms, stale) SELECT id, %d, 0 FROM users WHERE %s"
                % (now, fans))
            sql(db, "INSERT INTO follows (follower_id, followee_id, created_ms) SELECT id, %d, 0 FROM users WHERE %s"
                % (sid, fans))
            sql(db, "INSERT INTO feed_users (user_id, followers) VALUES (%d, 20000) ON CONFLICT (user_id) DO UPDATE "
                "SET followers = 20000" % sid)
            r = server.post("/v1/posts", {"text": "to everyone"}, token=ts)
            self.assertEqual(r.status, 201, r)
            pid = int(r.json["id"])
            count = lambda: int(sql(db, "SELECT count(*) FROM timelines WHERE post_id = %d" % pid)[0][0])
            self.assertTrue(wait_for(lambda: count() >= 1000, timeout=20, step=0.01))
            server.stop(signal.SIGKILL)
            partial = count()
            self.assertLess(partial, 20001, "the kill came too late to test anything")
            server.start()
            self.assertTrue(wait_for(lambda: count() == 20001, timeout=60), count())  # 20,000 + the author's own
            self.assertTrue(wait_for(lambda: int(sql(db, "SELECT count(*) FROM feed_outbox")[0][0]) == 0, timeout=10))
            self.assertEqual(int(sql(db, "SELECT count(DISTINCT user_id) FROM timelines WHERE post_id = %d" % pid)[0][0]),
                             20001)
        finally:
            if server.proc:
                server.stop()


@unittest.skipUnless(BACKEND == "pg", "two nodes share PostgreSQL")
class TestTwoNodes(unittest.TestCase):
    def test_nodes_share_the_fanout(self):
        db = fresh_db()
        args = ["--lease-heartbeat", "0.5", "--lease-ttl", "2"]
        a, b = Server(db=db, args=args).start(), Server(db=db, args=args).start()
        try:
            self.assertTrue(wait_for(lambda: "holding 8 of 16 lease groups" in a.log() + b.log(), timeout=10))
            authors = [a.new_user() for _ in range(12)]
            reader, tr = b.new_user()
            for u, _ in authors:
                r = b.request("PUT", "/v1/me/following/" + u["id"], token=tr)
                self.assertEqual(r.status, 200, r)
            b.get("/v1/timeline", token=tr)
            for i, (u, t) in enumerate(authors):
                srv = a if i % 2 else b
                self.assertEqual(srv.post("/v1/posts", {"text": "n%d" % i}, token=t).status, 201)
            want = sorted("n%d" % i for i in range(12))
            got = wait_for(lambda: sorted(p["text"] for p in a.get("/v1/timeline?limit=50", token=tr).json["items"])
                           == want, timeout=10)
            self.assertTrue(got)
            self.assertIn("feed: holding", a.log())
            self.assertIn("feed: holding", b.log())
            pg_parts = sql(db, "SELECT count(*) FROM pg_inherits WHERE inhparent = 'posts'::regclass")
            self.assertGreaterEqual(int(pg_parts[0][0]), 4)  # three months ahead and the default
        finally:
            for s in (a, b):
                if s.proc:
                    s.stop(signal.SIGKILL)


if __name__ == "__main__":
    main()
