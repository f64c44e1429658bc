"""The WebSocket gateway with real clients (python3-websocket): the hello
frame, push-then-pull (a device that hears "news up to seq N" pulls and
gets every message exactly once, in order), coalesced frames, two devices
of one user and a group of 50 through reconnects and a SIGKILL of the
server between send and pull, tickets, refusals (401 before the upgrade,
big, binary and unknown frames), the per-user connection cap, presence
(also for a client killed without a close, with shortened pings and with
the defaults) and the cluster-wide counts."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

import websocket

from chime import BACKEND, Server, ServerTest, main
from test_jobs import sql, wait_for


def frames(ws, until=None, timeout=5.0):
    """Frames until one satisfies until (or the timeout), as dicts."""
    got, deadline = [], time.time() + timeout
    while time.time() < deadline:
        ws.settimeout(max(0.01, deadline - time.time()))
        try:
            f = json.loads(ws.recv())
        except websocket.WebSocketTimeoutException:
            break
        got.append(f)
        if until and until(f):
            break
    return got


def close_code(ws, timeout=5.0):
    """The code of the close frame the server sends (None: none came)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        ws.settimeout(max(0.01, deadline - time.time()))
        try:
            op, data = ws.recv_data(control_frame=True)
        except websocket.WebSocketTimeoutException:
            return None
        if op == websocket.ABNF.OPCODE_CLOSE:
            return int.from_bytes(data[:2], "big")
    return None


class Device:
    """One device of a user: keeps its cursor and what it pulled."""

    def __init__(self, server, token):
        self.server, self.token, self.since, self.messages = server, token, 0, []

    def pull(self):
        while True:
            r = self.server.get("/v1/sync?since=%d&limit=1000" % self.since, token=self.token)
            assert r.status == 200, r
            for ch in r.json["changes"]:
                if ch["kind"] == "message":
                    self.messages.append((ch["conversation_id"], ch["message"]["seq"], ch["message"]["text"]))
            self.since = r.json["seq"]
            if not r.json["has_more"]:
                return


class TestGateway(ServerTest):
    server_args = ("--chat-rate", "1000")  # the burst test sends 100 at once

    def test_hello_push_then_pull(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        conv = self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
        ws = self.server.ws(tb)
        hello = json.loads(ws.recv())
        self.assertRegex(hello.pop("connection"), "^[0-9a-f]{16}$")
        self.assertEqual(hello, {"type": "hello", "user_id": b["id"], "seq": 1, "unread": 0})
        sent = self.server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": "1", "text": "hi"},
                                token=ta)
        self.assertEqual(sent.status, 201, sent)
        f = frames(ws, lambda f: f.get("seq") == 2)
        self.assertEqual(f[-1], {"type": "sync", "seq": 2, "unread": 1})
        d = Device(self.server, tb)
        d.pull()
        self.assertEqual(d.messages, [(conv, 1, "hi")])
        ws.send(json.dumps({"type": "ping"}))
        self.assertEqual(frames(ws, lambda f: f["type"] == "pong")[-1], {"type": "pong"})
        ws.close()

    def test_sender_needs_no_pull_for_its_own_message(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        conv = self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
        ws = self.server.ws(ta)
        known = json.loads(ws.recv())["seq"]
        for i in range(3):
            sent = self.server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": str(i), "text": "hi"},
                                    token=ta)
            self.assertEqual(sent.status, 201, sent)
            # The frame says the number the 201 gave; the device had the one
            # before it, so it is up to date without a pull.
            self.assertEqual(sent.json["user_seq"], known + 1)
            f = frames(ws, lambda f: f.get("seq") == known + 1)
            self.assertEqual(f[-1], {"type": "sync", "seq": known + 1, "unread": 0})
            known += 1
        ws.close()

    def test_named_connection_gets_no_frame_for_its_own_message(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        conv = self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
        mine, other = self.server.ws(ta), self.server.ws(ta)  # two devices of a
        hello = json.loads(mine.recv())
        other.recv()
        conn, known = hello["connection"], hello["seq"]
        self.assertNotEqual(json.loads(self.server.ws(ta).recv())["connection"], conn)
        for i in range(3):
            sent = self.server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": str(i), "text": "hi"},
                                    token=ta, headers={"Chime-Connection": conn})
            self.assertEqual((sent.status, sent.json["user_seq"]), (201, known + 1), sent)
            known += 1
            # The other device hears of it; the sender's own connection does not.
            self.assertEqual(frames(other, lambda f: f.get("seq") == known)[-1],
                             {"type": "sync", "seq": known, "unread": 0})
        self.assertEqual(frames(mine, timeout=0.5), [])
        # A change that is not its own still gives a frame.
        self.server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": "b", "text": "yo"}, token=tb)
        self.assertEqual(frames(mine, lambda f: f.get("seq") == known + 1)[-1],
                         {"type": "sync", "seq": known + 1, "unread": 1})
        mine.close()
        other.close()

    def test_devices_that_open_during_a_stream_end_current(self):
        """A loop is woken only for news a connection there does not know
        (ws_hub_signal), so a connection that opens while the news comes
        must find it anyway: devices of the receiver and of the sender
        open one after another while the sender's one device sends from
        its named connection; each ends at the final number, by its hello
        or a frame, and the named connection still hears nothing of its
        own messages."""
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        conv = self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
        mine = self.server.ws(ta)
        hello = json.loads(mine.recv())
        n = 60
        done = threading.Event()

        def send():
            for i in range(n):
                r = self.server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": str(i), "text": "x"},
                                     token=ta, headers={"Chime-Connection": hello["connection"]})
                self.assertEqual(r.status, 201, r)
                time.sleep(0.005)  # a stream longer than the opening of the devices below
            done.set()
        sender = threading.Thread(target=send)
        sender.start()
        opened = []  # at most 8 a user: with mine, under the cap of 10 (the oldest, mine, would be closed)
        while (not done.is_set() and len(opened) < 16) or len(opened) < 4:
            for tok in (ta, tb):
                ws = self.server.ws(tok)
                opened.append((tok, ws, json.loads(ws.recv())["seq"]))
            time.sleep(0.02)
        sender.join(30)
        final = {ta: hello["seq"] + n, tb: 1 + n}  # b: the conversation, then the messages
        for tok, ws, seq in opened:
            if seq < final[tok]:
                got = frames(ws, lambda f: f.get("seq") == final[tok], timeout=3)
                seq = got[-1]["seq"] if got else seq
            self.assertEqual(seq, final[tok], "a device that opened mid-stream was left behind")
            ws.close()
        self.assertEqual(frames(mine, timeout=0.5), [])
        mine.close()

    def test_connection_of_another_user_changes_nothing(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        conv = self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
        wb = self.server.ws(tb)
        hello = json.loads(wb.recv())
        # a names b's connection: b's device still hears of a's message.
        sent = self.server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": "1", "text": "hi"},
                                token=ta, headers={"Chime-Connection": hello["connection"]})
        self.assertEqual(sent.status, 201, sent)
        self.assertEqual(frames(wb, lambda f: f.get("seq") == hello["seq"] + 1)[-1],
                         {"type": "sync", "seq": hello["seq"] + 1, "unread": 1})
        # A connection that is gone, or never was, changes nothing either.
        for conn in ("0123456789abcdef", hello["connection"]):
            wb.close() if conn != hello["connection"] else None
            sent = self.server.post("/v1/conversations/%s/messages" % conv,
                                    {"client_msg_id": "x" + conn, "text": "hi"}, token=ta,
                                    headers={"Chime-Connection": conn})
            self.assertEqual(sent.status, 201, sent)
        wb.close()

    def test_bad_connection_header_is_400_and_sends_nothing(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        conv = self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
        for bad in ("xyz", "0123456789ABCDEG", "0000000000000000", "01234567", "0123456789abcdef0"):
            r = self.server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": "1", "text": "hi"},
                                 token=ta, headers={"Chime-Connection": bad})
            self.assertEqual((r.status, r.json["error"]["field"]), (400, "Chime-Connection"), (bad, r))
        self.assertEqual(self.server.get("/v1/conversations/%s/messages" % conv, token=ta).json["messages"], [])

    def test_burst_is_coalesced_and_ends_current(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        conv = self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
        ws = self.server.ws(tb)
        ws.recv()
        import threading
        def burst(k):
            for i in range(25):
                self.server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": "%d-%d" % (k, i),
                                                                            "text": "x"}, token=ta)
        ts = [threading.Thread(target=burst, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        got = frames(ws, lambda f: f.get("seq") == 101, timeout=10)
        self.assertEqual(got[-1]["seq"], 101)  # 1 conversation + 100 messages
        self.assertEqual(got[-1]["unread"], 100)
        self.assertLessEqual(len(got), 100)
        seqs = [f["seq"] for f in got]
        self.assertEqual(seqs, sorted(seqs))  # never a stale frame after a newer one
        ws.close()

    def test_frames_carry_the_unread_total(self):
        """The unread a frame tells (kept by the writes, schema 41) is the
        total GET /v1/unread sums, after every write that moves it: sends
        in a group and a direct conversation, the user's own sends and
        reads, leaving with messages unread, messages while gone, being
        added back; and a new connection's hello says the same."""
        (a, ta), (b, tb), (c, tc) = self.server.new_user(), self.server.new_user(), self.server.new_user()
        group = self.server.post("/v1/conversations", {"type": "group", "title": "g", "members": [b["id"], c["id"]]},
                                 token=ta).json["id"]
        direct = self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
        ws = self.server.ws(tb)
        ws.recv()
        device = Device(self.server, tb)
        n = [0]

        def send(conv, token):
            n[0] += 1
            r = self.server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": str(n[0]), "text": "x"},
                                 token=token)
            self.assertEqual(r.status, 201, r)

        def read(conv, up_to):
            self.assertEqual(self.server.post("/v1/conversations/%s/read" % conv, {"up_to": up_to}, token=tb).status,
                             200)

        def member(method, user):
            path = "/v1/conversations/%s/members" % group
            r = (self.server.post(path, {"users": [user]}, token=ta) if method == "add"
                 else self.server.delete(path + "/" + user, token=tb))
            self.assertIn(r.status, (200, 204), r)

        steps = [lambda: send(group, ta), lambda: send(group, tc), lambda: send(direct, ta),
                 lambda: read(group, 1), lambda: send(group, tb), lambda: send(direct, ta),
                 lambda: read(direct, 1000), lambda: send(group, ta), lambda: member("remove", b["id"]),
                 lambda: (send(group, ta), send(direct, ta)),  # the group's: no change for b
                 lambda: member("add", b["id"]), lambda: send(group, tc)]
        for i, step in enumerate(steps):
            step()
            device.pull()  # the user's number now
            total = self.server.get("/v1/unread", token=tb).json["total"]
            got = frames(ws, lambda f: f.get("seq") == device.since)
            self.assertEqual(got[-1], {"type": "sync", "seq": device.since, "unread": total}, "step %d" % i)
        self.assertGreater(total, 0)
        hello = json.loads(self.server.ws(tb).recv())
        self.assertEqual((hello["seq"], hello["unread"]), (device.since, total))
        ws.close()

    def test_refusals(self):
        (a, ta), = (self.server.new_user(),)
        with self.assertRaises(websocket.WebSocketBadStatusException) as e:
            self.server.ws(None)
        self.assertEqual(e.exception.status_code, 401)
        with self.assertRaises(websocket.WebSocketBadStatusException) as e:
            self.server.ws("not-a-token")
        self.assertEqual(e.exception.status_code, 401)
        # Not an upgrade: a JSON 400.
        self.assertError(self.server.get("/v1/ws", token=ta), 400)
        for payload, opcode, code in (("x" * 70000, websocket.ABNF.OPCODE_TEXT, 1009),
                                      (b"\x00\x01", websocket.ABNF.OPCODE_BINARY, 1008),
                                      (json.dumps({"type": "subscribe"}), websocket.ABNF.OPCODE_TEXT, 1008),
                                      ("not json", websocket.ABNF.OPCODE_TEXT, 1008)):
            ws = self.server.ws(ta)
            ws.recv()
            ws.send(payload, opcode)
            code_got = None
            deadline = time.time() + 5
            while time.time() < deadline:
                try:
                    op, data = ws.recv_data(control_frame=True)
                except (websocket.WebSocketConnectionClosedException, ConnectionError):
                    break
                if op == websocket.ABNF.OPCODE_CLOSE:
                    code_got = int.from_bytes(data[:2], "big")
                    break
            self.assertEqual(code_got, code, payload[:20])
            ws.close()

    def test_tickets_are_single_use_and_not_logged(self):
        (a, ta), = (self.server.new_user(),)
        t = self.server.post("/v1/ws/tickets", token=ta)
        self.assertEqual(t.status, 201, t)
        ws = self.server.ws(ticket=t.json["ticket"])
        self.assertEqual(json.loads(ws.recv())["user_id"], a["id"])
        ws.close()
        with self.assertRaises(websocket.WebSocketBadStatusException) as e:
            self.server.ws(ticket=t.json["ticket"])
        self.assertEqual(e.exception.status_code, 401)
        old = self.server.post("/v1/ws/tickets", token=ta).json["ticket"]
        sql(self.server.db, "UPDATE ws_tickets SET expires_ms = expires_ms - 31000")
        with self.assertRaises(websocket.WebSocketBadStatusException):
            self.server.ws(ticket=old)
        self.assertNotIn(t.json["ticket"], self.server.log())
        self.assertNotIn(old, self.server.log())
        self.assertError(self.server.post("/v1/ws/tickets"), 401)

    def test_cap_closes_the_oldest(self):
        """The eleventh connection closes the first, in every one of 30
        rounds. Connections land on both loops; h2o writes the 101 before
        the handler returns, so a connection listed after its 101 could be
        younger than the client's next one, which then went instead (once
        in a few hundred rounds on a loaded machine)."""
        for _ in range(30):
            (a, ta), = (self.server.new_user(),)
            socks = [self.server.ws(ta) for _ in range(10)]
            for s in socks:
                s.recv()
            newest = self.server.ws(ta)
            newest.recv()
            self.assertEqual(close_code(socks[0]), 4001)
            for s in socks[1:]:
                self.assertIsNone(close_code(s, timeout=0.01))
                s.close()
            newest.close()

    def test_cap_holds_while_closed_devices_linger(self):
        """Devices that connect faster than the evicted ones go (one that
        never answers the close frame keeps its socket for 2 s): each
        connection past the cap closes the oldest one still counted, and
        the newest ten stay. The registry once overflowed here."""
        (a, ta), = (self.server.new_user(),)
        socks = []
        for _ in range(15):  # nothing read from the old ones: no close answered
            socks.append(self.server.ws(ta))
            socks[-1].recv()
        for s in socks[:5]:
            self.assertEqual(close_code(s), 4001)
        for s in socks[5:]:
            s.send(json.dumps({"type": "ping"}))
            self.assertEqual(frames(s, lambda f: f["type"] == "pong")[-1], {"type": "pong"})
            s.close()

    def test_presence_and_counts(self):
        (a, ta), (b, tb), (c, tc) = self.server.new_user(), self.server.new_user(), self.server.new_user()
        self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta)
        p = lambda: self.server.get("/v1/users/%s/presence" % b["id"], token=ta).json
        self.assertEqual(p(), {"online": False, "last_seen": None})
        self.assertError(self.server.get("/v1/users/%s/presence" % b["id"], token=tc), 404)
        devices = [self.server.ws(tb) for _ in range(3)]
        for d in devices:
            d.recv()
        self.assertTrue(wait_for(lambda: p()["online"], timeout=5))
        for d in devices[:2]:
            d.close()
        time.sleep(0.5)
        self.assertTrue(p()["online"])  # one device left
        devices[2].close()
        self.assertTrue(wait_for(lambda: not p()["online"], timeout=5))
        self.assertIsNotNone(p()["last_seen"])


class TestUnreadRepair(ServerTest):
    """A kept unread total that went wrong (here set by hand; in life a node
    of an older build writing after the migration) is set back to the sum
    by the chat.cleanup job, with a warning in the log."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.admin, cls.admin_token = cls.server.new_user()  # a fresh database: the first user is the admin

    def run_job(self, name):
        r = self.server.post("/v1/admin/jobs/%s/run" % name, token=self.admin_token)
        self.assertEqual(r.status, 202, r)

        def ran():
            j = [j for j in self.server.get("/v1/admin/jobs", token=self.admin_token).json["items"]
                 if j["name"] == name][0]
            lr = j["last_run"]
            return lr if lr and lr["started"] >= r.json["requested"] and lr["finished"] else None
        lr = wait_for(ran, timeout=10)
        self.assertEqual((lr or {}).get("outcome"), "ok", lr)

    def test_a_wrong_total_is_set_back(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        conv = self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
        for i in range(2):
            self.server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": str(i), "text": "x"}, token=ta)
        sql(self.server.db, "UPDATE chat_seqs SET unread = 99 WHERE user_id = %d" % int(b["id"], 16))
        ws = self.server.ws(tb)
        self.assertEqual(json.loads(ws.recv())["unread"], 99)  # wrong, and shown
        ws.close()
        self.run_job("chat.cleanup")
        kept = sql(self.server.db, "SELECT unread FROM chat_seqs WHERE user_id = %d" % int(b["id"], 16))
        self.assertEqual(int(kept[0][0]), 2)
        ws = self.server.ws(tb)
        hello = json.loads(ws.recv())
        self.assertEqual(hello["unread"], 2)
        self.server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": "2", "text": "x"}, token=ta)
        self.assertEqual(frames(ws, lambda f: f.get("seq") == hello["seq"] + 1)[-1]["unread"], 3)
        ws.close()
        self.assertIn("kept unread total of 1 user(s)", self.server.log())
        self.assertIn("user %d, 99 kept, 2 by the sum" % int(b["id"], 16), self.server.log())
        # A right total is left alone: nothing more to set, no new warning.
        self.run_job("chat.cleanup")
        self.assertEqual(self.server.log().count("kept unread total of"), 1)


class TestReminderPush(ServerTest):
    """A push reminder that fires reaches the user's open WebSockets as a
    "reminder" frame carrying the inbox item, on time; a user online
    nowhere gets it in the inbox only."""
    server_args = ("--reminder-window", "1000")

    def test_reminder_frame_on_time(self):
        from test_reminders import iso, ms_of, soon
        (a, ta), = (self.server.new_user(),)
        devices = [self.server.ws(ta), self.server.ws(ta)]
        for d in devices:
            d.recv()
        start = soon(3)
        r = self.server.post("/v1/events", {"summary": "Stand <up> \"now\"", "start": {"date_time": iso(start)},
                                            "end": {"date_time": iso(start + 60)},
                                            "reminders": [{"method": "push", "minutes_before": 0}]}, token=ta)
        self.assertEqual(r.status, 201, r)
        for d in devices:
            got = frames(d, lambda f: f.get("type") == "reminder", timeout=start - time.time() + 5)
            self.assertTrue(got and got[-1]["type"] == "reminder", got)
            f = got[-1]
            self.assertLess(time.time() * 1000 - ms_of(f["due"]), 1500)
            self.assertEqual((f["summary"], f["event_id"], f["method"], f["read"]),
                             ("Stand <up> \"now\"", r.json["id"], "push", False))
            d.close()
        # The frame comes once the inbox lists the row: one read finds it
        # (on PostgreSQL too, where a row is listed only once no older
        # transaction is open; see TestReminderFrameListable).
        inbox = self.server.get("/v1/notifications", token=ta).json["items"]
        self.assertEqual([i["delivery_id"] for i in inbox], [f["delivery_id"]])
        self.assertEqual({k: v for k, v in f.items() if k != "type"}, inbox[0])


@unittest.skipUnless(BACKEND == "pg", "SQLite has one writer: a row is listable when its commit ends")
class TestReminderFrameListable(ServerTest):
    """On PostgreSQL the inbox lists a row only once every older
    transaction has ended (its cursor never passes a row being written).
    The reminder frame waits for that, so a client that re-reads its inbox
    on the frame finds the row; but not for more than 2 s, since the frame
    carries its item and a transaction left open must not stall pushes;
    and a clean stop sends what still waits. The transactions held open
    here hold back every inbox of their cluster, so the class has a
    PostgreSQL of its own (the other test files share one)."""
    server_args = ("--reminder-window", "1500")

    @classmethod
    def setUpClass(cls):
        from chime import ROOT, TMP
        import tempfile
        cls.pgdir = tempfile.mkdtemp(prefix="pg-", dir=TMP)
        cls.url = subprocess.run([os.path.join(ROOT, "scripts/pg.sh"), "start", cls.pgdir], check=True,
                                 stdout=subprocess.PIPE, text=True).stdout.strip()
        cls.server = Server(db=cls.url, args=cls.server_args).start()

    @classmethod
    def tearDownClass(cls):
        from chime import ROOT
        try:
            super().tearDownClass()
        finally:
            subprocess.run([os.path.join(ROOT, "scripts/pg.sh"), "stop", cls.pgdir], check=False)

    @staticmethod
    def end(p):
        if p.poll() is None:
            p.kill()
            p.wait()
        for f in (p.stdin, p.stdout):
            if not f.closed:
                f.close()

    def hold_xid(self):
        """A psql session inside a transaction that holds an xid."""
        p = subprocess.Popen(["psql", self.server.db, "-qAt", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        self.addCleanup(self.end, p)
        p.stdin.write("BEGIN;\nSELECT pg_current_xact_id() IS NOT NULL;\n")
        p.stdin.flush()
        self.assertEqual(p.stdout.readline().strip(), "t")
        return p

    def commit(self, p):
        p.stdin.write("COMMIT;\n")
        p.stdin.close()
        self.assertEqual(p.wait(timeout=10), 0)

    def reminder(self, token):
        """A push reminder due at a whole second 2-3 s from now; its time."""
        from test_reminders import iso, soon
        start = soon(2)
        r = self.server.post("/v1/events", {"summary": "s", "start": {"date_time": iso(start)},
                                            "end": {"date_time": iso(start + 60)},
                                            "reminders": [{"method": "push", "minutes_before": 0}]}, token=token)
        self.assertEqual(r.status, 201, r)
        return start

    def until(self, t):
        time.sleep(max(0, t - time.time()))

    def online_with_a_reminder(self):
        """A user with a WebSocket open (hello read) and a push reminder
        due 2-3 s from now: its token, the socket, the due time."""
        (a, ta), = (self.server.new_user(),)
        ws = self.server.ws(ta)
        self.addCleanup(ws.close)
        ws.recv()
        return ta, ws, self.reminder(ta)

    def test_frame_waits_for_an_older_transaction(self):
        ta, ws, start = self.online_with_a_reminder()
        self.until(start - 0.3)
        slow = self.hold_xid()  # older than the delivering transaction
        self.until(start + 0.8)
        self.assertEqual(self.server.get("/v1/notifications", token=ta).json["items"], [])
        early = frames(ws, lambda f: f.get("type") == "reminder", timeout=0.1)
        self.assertEqual([f for f in early if f.get("type") == "reminder"], [])
        ended = time.time()
        self.commit(slow)
        got = frames(ws, lambda f: f.get("type") == "reminder", timeout=5)
        self.assertTrue(got and got[-1]["type"] == "reminder", got)
        self.assertLess(time.time() - ended, 0.5)
        inbox = self.server.get("/v1/notifications", token=ta).json["items"]
        self.assertEqual([i["delivery_id"] for i in inbox], [got[-1]["delivery_id"]])

    def test_an_open_transaction_holds_a_frame_2_s_at_most(self):
        from test_reminders import ms_of
        ta, ws, start = self.online_with_a_reminder()
        self.until(start - 0.3)
        slow = self.hold_xid()
        got = frames(ws, lambda f: f.get("type") == "reminder", timeout=start - time.time() + 5)
        self.assertTrue(got and got[-1]["type"] == "reminder", got)
        late = time.time() * 1000 - ms_of(got[-1]["due"])
        self.assertGreater(late, 1900)
        self.assertLess(late, 3500)
        self.assertEqual(self.server.get("/v1/notifications", token=ta).json["items"], [])
        self.commit(slow)
        self.assertEqual(len(self.server.get("/v1/notifications", token=ta).json["items"]), 1)

    def test_a_clean_stop_sends_the_frames_it_holds(self):
        ta, ws, start = self.online_with_a_reminder()  # claimed 1.5 s ahead; a clean stop delivers it then
        self.until(start - 0.7)
        slow = self.hold_xid()
        self.assertEqual(self.server.stop(), 0)
        try:
            got = frames(ws, lambda f: f.get("type") == "reminder", timeout=2)
        except websocket.WebSocketConnectionClosedException:
            got = []  # closed with no frame
        self.commit(slow)
        type(self).server = Server(db=self.url, args=self.server_args).start()
        self.assertTrue(got and got[-1]["type"] == "reminder", got)
        items = self.server.get("/v1/notifications", token=ta).json["items"]
        self.assertEqual([i["delivery_id"] for i in items], [got[-1]["delivery_id"]])


class TestVanished(ServerTest):
    server_args = ("--ws-ping", "0.5")

    def test_vanished_client_stops_counting(self):
        """A client that stops answering (frozen, network gone) is closed
        within two ping intervals (0.5 s here); a killed one at once."""
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta)
        # A client process that connects and then freezes (SIGSTOP: no
        # reads, no pongs, no FIN), then one that is SIGKILLed.
        code = ("import websocket,sys,time\nw=websocket.create_connection(sys.argv[1],header=['Authorization: Bearer '"
                "+sys.argv[2]])\nw.recv()\nprint('up',flush=True)\ntime.sleep(600)\n")
        url = "ws://127.0.0.1:%d/v1/ws" % self.server.port
        p = lambda: self.server.get("/v1/users/%s/presence" % b["id"], token=ta).json["online"]
        for how in (signal.SIGSTOP, signal.SIGKILL):
            proc = subprocess.Popen([sys.executable, "-c", code, url, tb], stdout=subprocess.PIPE)
            self.addCleanup(proc.stdout.close)
            self.assertEqual(proc.stdout.readline().strip(), b"up")
            self.assertTrue(wait_for(p, timeout=5))
            t0 = time.time()
            os.kill(proc.pid, how)
            self.assertTrue(wait_for(lambda: not p(), timeout=10), how)
            self.assertLess(time.time() - t0, 2.0)  # two 0.5 s intervals, and the presence write
            proc.kill()
            proc.wait()


class TestManyDevices(ServerTest):
    """--ws-max-per-user goes up to 1000: every one of a user's
    connections hears of a change, however many share an event loop
    (the push once stopped at the first 64 of a loop)."""
    server_args = ("--ws-max-per-user", "200")

    def test_every_connection_gets_the_frame(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        conv = self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
        socks = [self.server.ws(tb) for _ in range(150)]  # over 64 on one loop, whichever way they fall
        for s in socks:
            s.recv()
        sent = self.server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": "1", "text": "hi"},
                                token=ta)
        self.assertEqual(sent.status, 201, sent)
        time.sleep(2)  # then each reads what has come (a device left out waits no longer)
        missed = sum(1 for s in socks if not [f for f in frames(s, lambda f: f.get("seq") == 2, timeout=0.1)
                                              if f.get("seq") == 2])
        self.assertEqual(missed, 0)
        for s in socks:
            s.close()


class TestGatewayDefaults(ServerTest):
    """The same promise with the settings a user gets: 25 s pings, so a
    frozen client stops counting within two intervals (37.5-50 s)."""

    def test_frozen_client_with_default_pings(self):
        (a, ta), (b, tb) = self.server.new_user(), self.server.new_user()
        self.server.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta)
        ws = self.server.ws(tb)  # never read again: no pongs
        ws.recv()
        p = lambda: self.server.get("/v1/users/%s/presence" % b["id"], token=ta).json["online"]
        self.assertTrue(wait_for(p, timeout=5))
        t0 = time.time()
        self.assertTrue(wait_for(lambda: not p(), timeout=60, step=0.5))
        self.assertGreater(time.time() - t0, 30)
        self.assertLess(time.time() - t0, 52)
        stats = self.server.get("/v1/admin/stats", token=ta)  # a is the first user: the admin
        self.assertEqual(stats.status, 200, stats)
        self.assertEqual(stats.json["online_users"], 0)
        ws.close()


class TestEveryMessageOnce(unittest.TestCase):
    """Two devices of one user and a group of 50: every message exactly
    once, in order, across reconnects and a SIGKILL of the server between
    the sends and the pulls."""

    def test_group_of_50(self):
        server = Server().start()
        try:
            self.run_group(server)
        finally:
            if server.proc:
                server.stop(signal.SIGKILL)

    def run_group(self, server):
        people = [server.new_user() for _ in range(50)]
        (a, ta) = people[0]
        g = server.post("/v1/conversations", {"type": "group", "title": "50",
                                              "members": [u["id"] for u, _ in people[1:]]}, token=ta)
        self.assertEqual(g.status, 201, g)
        conv = g.json["id"]
        devices = [Device(server, t) for _, t in people]
        devices.append(Device(server, server.signin(people[1][0]["email"])))  # a second device of member 1
        socks = [server.ws(d.token) for d in devices]
        for s in socks:
            s.recv()
        sent = []
        for i in range(30):
            who = people[i % 7]
            r = server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": "m%d" % i, "text": "t%d" % i},
                            token=who[1])
            self.assertEqual(r.status, 201, r)
            sent.append((conv, r.json["seq"], "t%d" % i))
        # Every online device hears of the last one.
        for s in socks:
            got = frames(s, lambda f: f.get("type") == "sync" and f["seq"] >= 31, timeout=10)
            self.assertTrue(got and got[-1]["seq"] >= 31, got[-3:])
        # Half of the devices pull now; then the server dies.
        for d in devices[::2]:
            d.pull()
        for s in socks:
            s.close()
        more = []
        for i in range(30, 40):
            r = server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": "m%d" % i, "text": "t%d" % i},
                            token=ta)
            self.assertEqual(r.status, 201, r)
            more.append((conv, r.json["seq"], "t%d" % i))
        server.stop(signal.SIGKILL)
        server.start()
        # Reconnect, hear the current seq, pull what is missing.
        for d in devices:
            ws = server.ws(d.token)
            hello = json.loads(ws.recv())
            ws.close()
            d.pull()
            self.assertEqual(d.since, hello["seq"])
        for d in devices:
            self.assertEqual(d.messages, sent + more)  # exactly once, in order
        # A resend of an acknowledged message after the crash: the original.
        again = server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": "m39", "text": "dup"}, token=ta)
        self.assertEqual(again.status, 200, again)
        self.assertEqual(again.json["seq"], more[-1][1])


if __name__ == "__main__":
    main()
