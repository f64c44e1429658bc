"""Chat over HTTP on a real server: conversations (direct ones unique per
pair, also when created concurrently), groups and their member cap,
messages (idempotent resends, history pages, bounds), the per-user
sequence (gap-free, stable, 400 ahead, 410 too old), read marks, members
added and removed, unread counts, rate limits, and that nobody reaches
another user's conversation."""
import json
import signal
import threading
import time
import unittest

from chime import BACKEND, NodesTest, ServerTest, main
from test_jobs import sql, wait_for


def conv_path(conv, tail=""):
    return "/v1/conversations/%s%s" % (conv, tail)


class ChatTest(ServerTest):
    def users(self, n):
        return [self.server.new_user() for _ in range(n)]

    def direct(self, tok, other):
        r = self.server.post("/v1/conversations", {"type": "direct", "user": other}, token=tok)
        self.assertIn(r.status, (200, 201), r)
        return r.json["id"]

    def send(self, tok, conv, text, cid=None, status=201):
        r = self.server.post(conv_path(conv, "/messages"), {"client_msg_id": cid or text, "text": text}, token=tok)
        self.assertEqual(r.status, status, r)
        return r.json

    def sync(self, tok, since=0, limit=None):
        q = "/v1/sync?since=%d" % since + ("&limit=%d" % limit if limit else "")
        r = self.server.get(q, token=tok)
        self.assertEqual(r.status, 200, r)
        return r.json


class TestConversations(ChatTest):
    def test_direct_is_unique_per_pair(self):
        (a, ta), (b, tb) = self.users(2)
        r1 = self.server.post("/v1/conversations", {"type": "direct", "user": b["email"]}, token=ta)
        self.assertEqual(r1.status, 201, r1)
        r2 = self.server.post("/v1/conversations", {"type": "direct", "user": b["email"].upper()}, token=ta)
        self.assertEqual(r2.status, 200, r2)
        r3 = self.server.post("/v1/conversations", {"type": "direct", "user": a["id"]}, token=tb)
        self.assertEqual(r3.status, 200, r3)
        self.assertEqual(r1.json["id"], r2.json["id"])
        self.assertEqual(r1.json["id"], r3.json["id"])
        self.assertEqual(r1.json["type"], "direct")
        self.assertEqual(sorted(m["id"] for m in r1.json["members"]), sorted([a["id"], b["id"]]))

    def test_direct_concurrent_creation_makes_one(self):
        (a, ta), (b, tb) = self.users(2)
        ids, statuses = [], []
        def create(tok, other):
            r = self.server.post("/v1/conversations", {"type": "direct", "user": other}, token=tok)
            statuses.append(r.status)
            ids.append(r.json["id"])
        threads = [threading.Thread(target=create, args=(ta, b["id"]) if i % 2 else (tb, a["id"])) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(set(ids)), 1, ids)
        self.assertEqual(statuses.count(201), 1, statuses)
        self.assertEqual(len(self.server.get("/v1/conversations", token=ta).json["items"]), 1)

    def test_bad_input(self):
        (a, ta), = self.users(1)
        self.assertError(self.server.post("/v1/conversations", {"type": "direct", "user": a["id"]}, token=ta), 422,
                         "user")
        self.assertError(self.server.post("/v1/conversations", {"type": "direct", "user": "nobody@example.com"},
                                          token=ta), 422, "user")
        self.assertError(self.server.post("/v1/conversations", {"type": "room"}, token=ta), 400, "type")
        self.assertError(self.server.post("/v1/conversations", {"type": "group", "members": []}, token=ta), 400,
                         "title")
        self.assertError(self.server.post("/v1/conversations", {"type": "group", "title": "x", "members": ["zz"]},
                                          token=ta), 422, "members")
        self.assertError(self.server.post("/v1/conversations", {"type": "direct", "user": "x", "extra": 1},
                                          token=ta), 400, "extra")
        self.assertError(self.server.get("/v1/conversations"), 401)
        self.assertEqual(self.server.get("/v1/conversations", token=ta).json["items"], [])

    def test_group_creator_is_admin(self):
        (a, ta), (b, tb), (c, tc) = self.users(3)
        r = self.server.post("/v1/conversations", {"type": "group", "title": "Team", "members": [b["id"], c["email"]]},
                             token=ta)
        self.assertEqual(r.status, 201, r)
        roles = {m["id"]: m["role"] for m in r.json["members"]}
        self.assertEqual(roles, {a["id"]: "admin", b["id"]: "member", c["id"]: "member"})
        self.assertEqual(r.json["title"], "Team")
        got = self.server.get(conv_path(r.json["id"]), token=tc)
        self.assertEqual(got.status, 200, got)
        self.assertEqual(got.json["id"], r.json["id"])

    def test_group_client_id_makes_a_retry_the_same_group(self):
        (a, ta), (b, tb), (c, tc) = self.users(3)
        def group(tok, cid, members=(b["id"],)):
            return self.server.post("/v1/conversations", {"type": "group", "title": "Trip", "members": list(members),
                                                          "client_id": cid}, token=tok)
        r1 = group(ta, "trip-1")
        self.assertEqual(r1.status, 201, r1)
        r2 = group(ta, "trip-1", members=(b["id"], c["id"]))  # a retry: the original, as it is
        self.assertEqual(r2.status, 200, r2)
        self.assertEqual(r2.json["id"], r1.json["id"])
        self.assertEqual(sorted(m["id"] for m in r2.json["members"]), sorted([a["id"], b["id"]]))
        self.assertEqual(group(ta, "trip-2").status, 201)  # another id: another group
        r3 = group(tb, "trip-1", members=(a["id"],))  # another creator's id space
        self.assertEqual(r3.status, 201, r3)
        self.assertNotEqual(r3.json["id"], r1.json["id"])
        no_id = self.server.post("/v1/conversations", {"type": "group", "title": "Trip", "members": [b["id"]]},
                                 token=ta)
        self.assertEqual(no_id.status, 201, no_id)  # without one, every create is a new group
        self.assertEqual(len(self.server.get("/v1/conversations", token=ta).json["items"]), 4)
        # The creator left: the id is spent.
        self.assertEqual(self.server.delete(conv_path(r1.json["id"], "/members/" + a["id"]), token=ta).status, 204)
        self.assertError(group(ta, "trip-1"), 409, "client_id")
        self.assertError(group(ta, "x" * 129), 400, "client_id")
        self.assertError(group(ta, "bad\u0001id"), 400, "client_id")
        self.assertError(group(ta, 7), 400, "client_id")

    def test_strangers_get_404(self):
        (a, ta), (b, tb), (c, tc) = self.users(3)
        conv = self.direct(ta, b["id"])
        self.send(ta, conv, "secret")
        for r in (self.server.get(conv_path(conv), token=tc),
                  self.server.get(conv_path(conv, "/messages"), token=tc),
                  self.server.post(conv_path(conv, "/messages"), {"client_msg_id": "x", "text": "hi"}, token=tc),
                  self.server.post(conv_path(conv, "/read"), {"up_to": 1}, token=tc),
                  self.server.post(conv_path(conv, "/members"), {"users": [c["id"]]}, token=tc),
                  self.server.delete(conv_path(conv, "/members/" + a["id"]), token=tc),
                  self.server.get(conv_path("zzzz"), token=ta),
                  self.server.get("/v1/users/%s/presence" % a["id"], token=tc)):
            self.assertError(r, 404)
        self.assertEqual(self.sync(tc)["changes"], [])


class TestGroupCap(ChatTest):
    server_args = ("--group-max-members", "4")

    def test_cap_names_members(self):
        people = self.users(5)
        (a, ta) = people[0]
        others = [u["id"] for u, _ in people[1:]]
        self.assertError(self.server.post("/v1/conversations", {"type": "group", "title": "g", "members": others},
                                          token=ta), 422, "members")
        r = self.server.post("/v1/conversations", {"type": "group", "title": "g", "members": others[:3] + [a["id"]]},
                             token=ta)
        self.assertEqual(r.status, 201, r)  # the creator named again counts once
        self.assertError(self.server.post(conv_path(r.json["id"], "/members"), {"users": [others[3]]}, token=ta),
                         422, "users")


class TestGroupCapDefault(ChatTest):
    """The default cap, 500, with the settings a user gets."""

    def test_default_cap_is_500(self):
        (a, ta), = self.users(1)
        ids = [self.server.signup()["id"] for _ in range(500)]
        self.assertError(self.server.post("/v1/conversations", {"type": "group", "title": "big", "members": ids},
                                          token=ta), 422, "members")
        r = self.server.post("/v1/conversations", {"type": "group", "title": "big", "members": ids[:499]}, token=ta)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(len(r.json["members"]), 500)


class TestMessages(ChatTest):
    def test_send_resend_and_history(self):
        (a, ta), (b, tb) = self.users(2)
        conv = self.direct(ta, b["id"])
        m1 = self.send(ta, conv, "one", "c-1")
        self.assertEqual((m1["seq"], m1["sender"], m1["text"], m1["conversation_id"]), (1, a["id"], "one", conv))
        again = self.send(ta, conv, "one (retry)", "c-1", status=200)
        self.assertEqual(again, m1)  # the original, not the retry's text
        for i in range(2, 8):
            self.send(tb if i % 2 else ta, conv, "m%d" % i)
        page = self.server.get(conv_path(conv, "/messages?limit=3"), token=tb).json
        self.assertEqual([m["seq"] for m in page["messages"]], [5, 6, 7])
        self.assertTrue(page["has_more"])
        page = self.server.get(conv_path(conv, "/messages?limit=3&before_seq=5"), token=tb).json
        self.assertEqual([m["seq"] for m in page["messages"]], [2, 3, 4])
        page = self.server.get(conv_path(conv, "/messages?after_seq=5"), token=tb).json
        self.assertEqual([m["seq"] for m in page["messages"]], [6, 7])
        self.assertFalse(page["has_more"])
        self.assertEqual(len(self.server.get(conv_path(conv, "/messages?limit=200"), token=ta).json["messages"]), 7)

    def test_concurrent_resends_make_one_message(self):
        """The same client_msg_id sent at once from several threads (so in
        one writer batch, or several): one 201, the rest 200 with that
        message; one message, one change each, the numbers unmoved by the
        repeats."""
        (a, ta), (b, tb) = self.users(2)
        conv = self.direct(ta, b["id"])
        self.send(ta, conv, "before")
        results, go = [], threading.Barrier(8)

        def post(i):
            go.wait()
            r = self.server.post(conv_path(conv, "/messages"), {"client_msg_id": "same", "text": "t%d" % i}, token=ta)
            results.append((r.status, r.json))
        threads = [threading.Thread(target=post, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sorted(s for s, _ in results), [200] * 7 + [201], results)
        first = next(j for s, j in results if s == 201)
        self.assertEqual(first["seq"], 2)
        for s, j in results:
            self.assertEqual((j["id"], j["seq"], j["text"]), (first["id"], 2, first["text"]))
        self.send(ta, conv, "after")
        msgs = self.server.get(conv_path(conv, "/messages"), token=tb).json["messages"]
        self.assertEqual([(m["seq"], m["text"]) for m in msgs], [(1, "before"), (2, first["text"]), (3, "after")])
        changes = self.sync(tb)["changes"]
        self.assertEqual([c["message"]["seq"] for c in changes if c["kind"] == "message"], [1, 2, 3])
        self.assertEqual(self.server.get(conv_path(conv), token=tb).json["unread"], 3)

    def test_ids_are_made_in_order(self):
        """A message's id comes from the node's id generator (as posts'
        do): unique, larger for a later message, its milliseconds those of
        the send. (Random ids wrote a page of messages.id's index at a
        random place for every message.)"""
        (a, ta), (b, tb) = self.users(2)
        conv = self.direct(ta, b["id"])
        ids, sent = [], []
        for i in range(20):
            before = time.time()
            m = self.send(ta if i % 2 else tb, conv, "in order %d" % i)
            ids.append(int(m["id"], 16))
            sent.append((before, time.time()))
        self.assertEqual(ids, sorted(set(ids)))
        for i, (lo, hi) in zip(ids, sent):  # 41 bits of milliseconds since 2020 above 22
            made = ((i >> 22) + 1577836800000) / 1000.0
            self.assertTrue(lo - 0.05 <= made <= hi + 0.05, (made, lo, hi))

    def test_text_bounds(self):
        (a, ta), (b, tb) = self.users(2)
        conv = self.direct(ta, b["id"])
        path = conv_path(conv, "/messages")
        self.assertError(self.server.post(path, {"client_msg_id": "x", "text": ""}, token=ta), 400, "text")
        self.assertError(self.server.post(path, {"client_msg_id": "x", "text": "a" * 8001}, token=ta), 400, "text")
        self.assertError(self.server.post(path, {"client_msg_id": "x", "text": "a\u0000b"}, token=ta), 400, "text")
        self.assertError(self.server.post(path, {"client_msg_id": "x", "text": "crlf\r\nline"}, token=ta), 400, "text")
        self.assertError(self.server.post(path, {"client_msg_id": "x\ny", "text": "hi"}, token=ta), 400, "client_msg_id")
        self.assertError(self.server.post(path, {"text": "hi"}, token=ta), 400, "client_msg_id")
        self.assertError(self.server.post(path, {"client_msg_id": "x", "text": 5}, token=ta), 400, "text")
        self.assertError(self.server.request("POST", path, raw=b"\xff\xfe", token=ta,
                                             headers={"Content-Type": "application/json"}), 400)
        ok = self.send(ta, conv, "é" * 4000, "utf8")  # 8000 bytes of UTF-8
        self.assertEqual(ok["text"], "é" * 4000)
        self.assertEqual(self.send(ta, conv, "two\n\tlines", "lines")["text"], "two\n\tlines")
        self.assertEqual(self.server.get(conv_path(conv, "/messages"), token=tb).json["messages"][0]["seq"], 1)


class TestSync(ChatTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.admin, cls.admin_token = cls.server.new_user()  # the first user administers

    def test_one_gap_free_sequence_across_conversations(self):
        (a, ta), (b, tb), (c, tc) = self.users(3)
        ab = self.direct(ta, b["id"])
        g = self.server.post("/v1/conversations", {"type": "group", "title": "g", "members": [a["id"], c["id"]]},
                             token=tb).json["id"]
        for i in range(5):
            self.send(ta, ab, "ab%d" % i)
            self.send(tc, g, "g%d" % i)
        s = self.sync(tb)
        seqs = [ch["seq"] for ch in s["changes"]]
        self.assertEqual(seqs, list(range(1, len(seqs) + 1)))
        self.assertEqual(s["seq"], seqs[-1])
        self.assertEqual(len([ch for ch in s["changes"] if ch["kind"] == "message"]), 10)
        self.assertEqual(len([ch for ch in s["changes"] if ch["kind"] == "conversation"]), 2)
        # Paged: the same changes, no gap and no repeat, and stable.
        got, since = [], 0
        while True:
            page = self.sync(tb, since, limit=3)
            got += page["changes"]
            since = page["seq"]
            if not page["has_more"]:
                break
        self.assertEqual(got, s["changes"])
        self.assertEqual(self.sync(tb, 4), self.sync(tb, 4))
        self.assertError(self.server.get("/v1/sync?since=%d" % (s["seq"] + 1), token=tb), 400, "since")
        self.assertError(self.server.get("/v1/sync?since=-1", token=tb), 400, "since")
        self.assertError(self.server.get("/v1/sync?limit=0", token=tb), 400, "limit")
        self.assertEqual(self.sync(tb, s["seq"])["changes"], [])

    def test_own_messages_and_read_marks_reach_other_devices(self):
        (a, ta), (b, tb) = self.users(2)
        ta2 = self.server.signin(a["email"])  # a second device of a
        conv = self.direct(ta, b["id"])
        self.send(tb, conv, "hello")
        self.send(ta, conv, "hi back")
        mark = self.server.post(conv_path(conv, "/read"), {"up_to": 1}, token=ta)
        self.assertEqual(mark.status, 200, mark)
        changes = self.sync(ta2)["changes"]
        self.assertEqual([c["kind"] for c in changes], ["conversation", "message", "message"])
        # Reading up to 1 is behind the sender's own mark (2): nothing moves.
        self.assertEqual(mark.json, {"read_up_to": 2, "unread": 0})
        self.send(tb, conv, "more")
        self.server.post(conv_path(conv, "/read"), {"up_to": 3}, token=ta)
        last = self.sync(ta2)["changes"][-1]
        self.assertEqual((last["kind"], last["up_to"], last["conversation_id"]), ("read", 3, conv))

    def test_send_answers_the_senders_own_change_number(self):
        (a, ta), (b, tb), (c, tc) = self.users(3)
        ab = self.direct(ta, b["id"])
        g = self.server.post("/v1/conversations", {"type": "group", "title": "g", "members": [a["id"], c["id"]]},
                             token=tb).json["id"]
        sent = []
        for i in range(3):  # a's sequence and the conversations' numbers drift apart
            sent.append((ta, self.send(ta, ab, "ab%d" % i)))
            sent.append((tb, self.send(tb, ab, "ba%d" % i)))
            sent.append((tc, self.send(tc, g, "g%d" % i)))
            sent.append((ta, self.send(ta, g, "ga%d" % i)))
        self.assertTrue(any(m["user_seq"] != m["seq"] for _, m in sent))
        for tok, m in sent:
            ch = self.sync(tok, m["user_seq"] - 1, limit=1)["changes"][0]
            self.assertEqual((ch["seq"], ch["kind"], ch["message"]["id"]), (m["user_seq"], "message", m["id"]), m)
        # A retry answers the original, its user_seq included.
        tok, first = sent[0]
        self.assertEqual(self.send(tok, ab, "ab0 (retry)", "ab0", status=200), first)

    def test_410_after_retention(self):
        (a, ta), (b, tb) = self.users(2)
        conv = self.direct(ta, b["id"])
        for i in range(3):
            self.send(ta, conv, "old%d" % i)
        # The first two changes of b age past the retention (30 days),
        # wherever they are (on SQLite new changes wait in chat_recent
        # until the writer settles them in chat_changes).
        for table in ("chat_changes", "chat_recent"):
            sql(self.server.db, "UPDATE %s SET created_ms = created_ms - 3456000000 "
                "WHERE user_id = %d AND seq <= 2" % (table, int(b["id"], 16)))
        r = self.server.post("/v1/admin/jobs/chat.cleanup/run", token=self.admin_token)
        self.assertEqual(r.status, 202, r)
        wait_for(lambda: self.server.get("/v1/sync?since=0", token=tb).status == 410, timeout=20)
        self.assertError(self.server.get("/v1/sync?since=0", token=tb), 410, "since", "sync_too_old")
        self.assertError(self.server.get("/v1/sync?since=1", token=tb), 410)
        rest = self.sync(tb, 2)["changes"]
        self.assertEqual([c["seq"] for c in rest], [3, 4])


class TestRetryFarBack(ChatTest):
    server_args = ("--chat-rate", "100000")

    def test_retry_after_a_thousand_changes_has_no_user_seq(self):
        (a, ta), (b, tb) = self.users(2)
        conv = self.direct(ta, b["id"])
        first = self.send(ta, conv, "first", "f")
        for i in range(999):  # a's sequence moves 999 further: still in reach
            self.send(tb, conv, "b%d" % i)
        self.assertEqual(self.send(ta, conv, "first", "f", status=200), first)
        self.send(tb, conv, "one more")
        again = self.send(ta, conv, "first", "f", status=200)
        self.assertIsNone(again.pop("user_seq"))
        first.pop("user_seq")
        self.assertEqual(again, first)


@unittest.skipUnless(BACKEND == "sqlite", "PostgreSQL's writers put each change in its place at once")
class TestSettle(NodesTest):
    """On SQLite new changes wait in chat_recent, and the chat writer moves
    them to chat_changes once 8,192 wait and no write has come for 50 ms
    (chat_settle.c); pulls give the same answers wherever the changes
    are, across a SIGKILL and a restart. Default settle settings."""
    node_args = ("--chat-rate", "100000")
    MEMBERS = 100

    def counts(self):
        return [sql(self.db, "SELECT count(*) FROM %s" % t)[0][0] for t in ("chat_recent", "chat_changes")]

    def pulls(self, server, tokens):
        """Each member's changes, in pages of 500: their numbers 1..seq in
        order, and the pages' text."""
        out = []
        for tok in tokens:
            since, pages, seqs = 0, [], []
            while True:
                r = server.get("/v1/sync?since=%d&limit=500" % since, token=tok)
                self.assertEqual(r.status, 200, r)
                pages.append(r.body)
                seqs += [c["seq"] for c in r.json["changes"]]
                since = r.json["seq"]
                if not r.json["has_more"]:
                    break
            self.assertEqual(seqs, list(range(1, len(seqs) + 1)))
            out.append(pages)
        return out

    def send_many(self, server, tok, conv, n, tag):
        for i in range(n):
            r = server.post(conv_path(conv, "/messages"), {"client_msg_id": "%s%d" % (tag, i), "text": "x"}, token=tok)
            self.assertEqual(r.status, 201, r)

    def test_changes_settle_when_the_writer_is_idle(self):
        a = self.start()
        users = [a.new_user() for _ in range(3)]
        ids = [u["id"] for u, _ in users[1:]] + [a.signup()["id"] for _ in range(self.MEMBERS - 3)]
        r = a.post("/v1/conversations", {"type": "group", "title": "many", "members": ids}, token=users[0][1])
        self.assertEqual(r.status, 201, r)
        conv, tokens = r.json["id"], [t for _, t in users]
        # 41 changes a member: 4,100 in all, fewer than 8,192: they wait.
        self.send_many(a, tokens[0], conv, 40, "a")
        self.assertEqual(self.counts(), [41 * self.MEMBERS, 0])
        before = self.pulls(a, tokens)
        a.stop(signal.SIGKILL)
        b = self.start()
        self.assertEqual(self.pulls(b, tokens), before)
        time.sleep(0.2)
        self.assertEqual(self.counts(), [41 * self.MEMBERS, 0])
        # 45 more a member: past 8,192, and the writer settles them all
        # once idle; the answers do not change.
        self.send_many(b, tokens[1], conv, 45, "b")
        mid = self.pulls(b, tokens)
        self.assertEqual([len(p) for p in mid], [1] * 3)
        wait_for(lambda: self.counts() == [0, 86 * self.MEMBERS], timeout=20)
        self.assertEqual(self.pulls(b, tokens), mid)
        self.assertEqual(b.stop(), 0)


class TestMembers(ChatTest):
    def test_add_remove_leave(self):
        (a, ta), (b, tb), (c, tc), (d, td) = self.users(4)
        g = self.server.post("/v1/conversations", {"type": "group", "title": "g", "members": [b["id"], c["id"]]},
                             token=ta).json["id"]
        self.send(ta, g, "before d")
        self.assertError(self.server.post(conv_path(g, "/members"), {"users": [d["id"]]}, token=tb), 403)
        r = self.server.post(conv_path(g, "/members"), {"users": [d["email"]]}, token=ta)
        self.assertEqual(r.status, 200, r)
        self.assertIn(d["id"], [m["id"] for m in r.json["members"]])
        self.send(ta, g, "after d")
        # d sees what came after it joined.
        self.assertEqual([m["text"] for m in self.server.get(conv_path(g, "/messages"), token=td).json["messages"]],
                         ["after d"])
        # A member may remove only itself; the admin anyone.
        self.assertError(self.server.delete(conv_path(g, "/members/" + c["id"]), token=tb), 403)
        self.assertError(self.server.delete(conv_path(g, "/members/nobody@example.org"), token=ta), 404)
        for garbage in ("%zz", "y" * 400 + "@example.org"):
            self.assertError(self.server.delete(conv_path(g, "/members/" + garbage), token=ta), 404)
        # {user} may be an email, as the members added may be.
        self.assertEqual(self.server.delete(conv_path(g, "/members/" + c["email"].upper()), token=ta).status, 204)
        self.assertEqual(self.server.delete(conv_path(g, "/members/" + b["id"]), token=tb).status, 204)
        kinds = [ch["kind"] for ch in self.sync(tc)["changes"]]
        self.assertEqual(kinds[-1], "member_removed")
        c_seq = self.sync(tc)["seq"]
        self.send(ta, g, "after c left")
        # c keeps its history and gets nothing new.
        self.assertEqual(self.sync(tc, c_seq)["changes"], [])
        hist = self.server.get(conv_path(g, "/messages"), token=tc)
        self.assertEqual(hist.status, 200, hist)
        self.assertEqual([m["text"] for m in hist.json["messages"]], ["before d", "after d"])
        self.assertError(self.server.post(conv_path(g, "/messages"), {"client_msg_id": "z", "text": "x"}, token=tc), 404)
        left = [x for x in self.server.get("/v1/conversations", token=tc).json["items"] if x["id"] == g][0]
        self.assertTrue(left.get("left"))
        self.assertError(self.server.delete(conv_path(g, "/members/" + c["id"]), token=ta), 404)
        direct = self.direct(ta, b["id"])
        self.assertError(self.server.post(conv_path(direct, "/members"), {"users": [d["id"]]}, token=ta), 422)


class TestUnread(ChatTest):
    def test_unread_is_an_offset(self):
        (a, ta), (b, tb), (c, tc) = self.users(3)
        ab, ac = self.direct(ta, b["id"]), self.direct(ta, c["id"])
        for i in range(3):
            self.send(tb, ab, "b%d" % i)
        time.sleep(0.01)  # activity is ordered by the millisecond: a tie goes by id
        self.send(tc, ac, "c0")
        self.assertEqual(self.server.get("/v1/unread", token=ta).json, {"total": 4, "conversations": 2})
        convs = {x["id"]: x for x in self.server.get("/v1/conversations", token=ta).json["items"]}
        self.assertEqual((convs[ab]["unread"], convs[ab]["last_seq"], convs[ab]["read_up_to"]), (3, 3, 0))
        self.assertEqual(self.server.get("/v1/conversations", token=ta).json["items"][0]["id"], ac)  # most recent
        r = self.server.post(conv_path(ab, "/read"), {"up_to": 2}, token=ta)
        self.assertEqual(r.json, {"read_up_to": 2, "unread": 1})
        back = self.server.post(conv_path(ab, "/read"), {"up_to": 1}, token=ta)  # never backwards
        self.assertEqual(back.json, {"read_up_to": 2, "unread": 1})
        past = self.server.post(conv_path(ab, "/read"), {"up_to": 99}, token=ta)  # never past the last
        self.assertEqual(past.json, {"read_up_to": 3, "unread": 0})
        self.assertEqual(self.server.get("/v1/unread", token=ta).json, {"total": 1, "conversations": 1})
        self.assertError(self.server.post(conv_path(ab, "/read"), {"up_to": "x"}, token=ta), 400, "up_to")


class TestRate(ChatTest):
    server_args = ("--chat-rate", "2")

    def test_429_with_retry_after(self):
        (a, ta), (b, tb) = self.users(2)
        conv = self.direct(ta, b["id"])
        statuses = [self.server.post(conv_path(conv, "/messages"), {"client_msg_id": "r%d" % i, "text": "x"},
                                     token=ta) for i in range(8)]
        limited = [r for r in statuses if r.status == 429]
        self.assertTrue(limited, [r.status for r in statuses])
        self.assertEqual(limited[0].header("Retry-After"), "1")
        self.assertError(limited[0], 429)
        time.sleep(1.1)
        self.send(ta, conv, "later")

    def test_new_conversations_and_members_spend_it_too(self):
        """Each reaches every member's devices, as a message does: a
        script making groups of everyone in a loop is held to the rate."""
        (c, tc), (d, td), (e, te) = self.users(3)
        made = [self.server.post("/v1/conversations", {"type": "group", "title": "g%d" % i, "members": [d["id"]]},
                                 token=tc) for i in range(8)]
        limited = [r for r in made if r.status == 429]
        self.assertTrue(limited, [r.status for r in made])
        self.assertEqual(limited[0].header("Retry-After"), "1")
        self.assertError(limited[0], 429, code="too_many_requests")
        # Only the 201s made a group, on both sides.
        ok = [r.json["id"] for r in made if r.status == 201]
        self.assertEqual(len(self.server.get("/v1/conversations", token=td).json["items"]), len(ok))
        # Bad input is still 400, before the budget.
        self.assertError(self.server.post("/v1/conversations", {"type": "nope"}, token=tc), 400, "type")
        time.sleep(2.1)
        added = [self.server.post(conv_path(ok[0], "/members"), {"users": [e["id"]]}, token=tc) for _ in range(8)]
        self.assertIn(429, [r.status for r in added])
        self.assertEqual(added[0].status, 200, added[0])


class TestStartup(unittest.TestCase):
    def test_requests_before_the_chat_started(self):
        """The server listens before the chat's writer runs: a message sent
        in between gets 503 (try again), never a crash; then 201."""
        from chime import Server
        s = Server().start()
        try:
            (a, ta), (b, tb) = s.new_user(), s.new_user()
            conv = s.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
        finally:
            self.assertEqual(s.stop(), 0)
        statuses = []
        for attempt in range(3):
            s.start(serving=False)
            try:
                for i in range(200):
                    r = s.post(conv_path(conv, "/messages"), {"client_msg_id": "m%d-%d" % (attempt, i), "text": "hi"},
                               token=ta)
                    statuses.append(r.status)
                    time.sleep(0.06)  # under the default 20 messages a second: refusals count too
                    if r.status == 503:
                        self.assertEqual(r.json["error"]["code"], "starting", r)
                    else:
                        self.assertEqual(r.status, 201, r)
                        break
            finally:
                self.assertEqual(s.stop(), 0, s.log()[-3000:])
        self.assertEqual(statuses.count(201), 3, statuses)
        print("statuses:", statuses)


if __name__ == "__main__":
    main()
