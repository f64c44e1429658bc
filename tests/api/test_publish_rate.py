"""What one account may publish: posts, comments and shares share a budget
of --post-rate a minute (default 60), as many in a burst. A spammer's
posts fan out to every follower's timeline; past the budget each gets 429
with Retry-After, stores nothing, and other users go on unhindered. Bad
input is still 400 and spends nothing."""
import threading
import time

from chime import Server, ServerTest, main


class TestDefaults(ServerTest):
    def test_sixty_at_once_then_429(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        self.assertError(self.server.post("/v1/posts", {"text": ""}, token=ta), 400, field="text")
        codes, refused = [], None
        # Four connections at once: the budget holds under concurrency too.
        lock = threading.Lock()

        def spam(k):
            nonlocal refused
            for i in range(25):
                r = self.server.post("/v1/posts", {"text": "spam %d-%d" % (k, i)}, token=ta)
                with lock:
                    codes.append(r.status)
                    if r.status == 429 and refused is None:
                        refused = r

        ts = [threading.Thread(target=spam, args=(k,)) for k in range(4)]
        t0 = time.monotonic()
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        took = time.monotonic() - t0
        ok = codes.count(201)
        # The burst of 60, and one more a second while the 100 ran.
        self.assertGreaterEqual(ok, 60, codes)
        self.assertLessEqual(ok, 61 + int(took), (took, codes))
        self.assertEqual(codes.count(201) + codes.count(429), 100, codes)
        self.assertError(refused, 429, code="too_many_requests")
        self.assertEqual(refused.header("Retry-After"), "1")
        # Only what was answered 201 was stored.
        mine = self.server.get("/v1/users/%s" % a["id"], token=ta).json
        self.assertEqual(mine["posts"], ok)
        # Someone else is not held back.
        self.assertEqual(self.server.post("/v1/posts", {"text": "hello"}, token=tb).status, 201)


class TestOneBudget(ServerTest):
    # One a minute: the second thing published within it is refused.
    server_args = ["--post-rate", "1"]

    def test_posts_comments_and_shares_share_it(self):
        (a, ta), (b, tb), (c, tc) = [self.server.new_user() for _ in range(3)]
        pid = self.server.post("/v1/posts", {"text": "first"}, token=ta).json["id"]
        self.assertEqual(self.server.post("/v1/posts/%s/comments" % pid, {"text": "nice"}, token=tb).status, 201)
        # b has spent its minute: a comment, a share and a post are 429.
        r = self.server.post("/v1/posts/%s/comments" % pid, {"text": "again"}, token=tb)
        self.assertError(r, 429)
        self.assertEqual(r.header("Retry-After"), "60")
        self.assertError(self.server.post("/v1/posts/%s/shares" % pid, token=tb), 429)
        self.assertError(self.server.post("/v1/posts", {"text": "mine"}, token=tb), 429)
        # Bad input is 400 before the budget: c's share still goes through.
        self.assertError(self.server.post("/v1/posts/%s/comments" % pid, {"text": ""}, token=tc), 400, field="text")
        self.assertEqual(self.server.post("/v1/posts/%s/shares" % pid, token=tc).status, 201)
        post = self.server.get("/v1/posts/" + pid, token=ta).json
        self.assertEqual((post["comments"], post["shares"]), (1, 1))
        # Likes and views are not publishing: never refused by it.
        for tok in (tb, tc):
            self.assertEqual(self.server.request("PUT", "/v1/posts/%s/like" % pid, token=tok).status, 200)
            self.assertEqual(self.server.post("/v1/posts/%s/views" % pid, token=tok).status, 204)


if __name__ == "__main__":
    main()
