"""Chat across nodes. On PostgreSQL: two nodes share the database; a
message sent through node A reaches a WebSocket on node B within a second,
through PostgreSQL's LISTEN/NOTIFY, and through Redis pub/sub when --redis
is given (a real redis-server, killed and restarted mid-test: pushes stop,
nothing is lost, pushes resume). Node A is SIGKILLed: its clients reconnect
to B and pull everything; the cluster-wide online count drops A's users
within the lease TTL. On SQLite (one node): the same SIGKILL and
reconnect on one node."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from chime import BACKEND, TMP, Server, fresh_db, main
from test_chat_ws import Device, frames
from test_jobs import wait_for

FAST = ["--lease-heartbeat", "0.5", "--lease-ttl", "2", "--chat-rate", "1000"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Redis:
    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="redis-", dir=TMP)
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                      "--save", "", "--appendonly", "no", "--dir", self.dir],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_for(self.ping, timeout=10), "redis-server did not start"
        return self

    def ping(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def url(self):
        return "redis://127.0.0.1:%d" % self.port


class ClusterBase(unittest.TestCase):
    extra = []

    def setUp(self):
        self.db = fresh_db()
        self.nodes = []

    def tearDown(self):
        for n in self.nodes:
            if n.proc:
                n.stop(signal.SIGKILL)

    def node(self):
        s = Server(db=self.db, args=FAST + self.extra).start()
        self.nodes.append(s)
        return s

    def group(self, server, n):
        people = [server.new_user() for _ in range(n)]
        g = server.post("/v1/conversations", {"type": "group", "title": "x",
                                              "members": [u["id"] for u, _ in people[1:]]}, token=people[0][1])
        assert g.status == 201, g
        return people, g.json["id"]

    def send(self, server, tok, conv, text):
        r = server.post("/v1/conversations/%s/messages" % conv, {"client_msg_id": text, "text": text}, token=tok)
        self.assertEqual(r.status, 201, r)
        return r.json["seq"]

    def push_latency(self, sender, receiver, tok_send, tok_recv, conv, text):
        """Send through one node; the time until the other's device hears.
        The frame carries the numbers the sender's writer signalled over the
        bus: the receiver's unread total is the one its node computes."""
        ws = receiver.ws(tok_recv)
        seq0 = json.loads(ws.recv())["seq"]
        t0 = time.time()
        self.send(sender, tok_send, conv, text)
        got = frames(ws, lambda f: f.get("type") == "sync" and f["seq"] > seq0, timeout=5)
        lat = time.time() - t0
        ws.close()
        if not got or got[-1]["seq"] <= seq0:
            return None
        self.assertEqual(got[-1]["unread"], receiver.get("/v1/unread", token=tok_recv).json["total"])
        return lat


@unittest.skipUnless(BACKEND == "pg", "two nodes share PostgreSQL; the SQLite variant is TestOneNode")
class TestTwoNodes(ClusterBase):
    def test_push_crosses_nodes_and_survives_a_kill(self):
        a, b = self.node(), self.node()
        people, conv = self.group(a, 10)
        tok0 = people[0][1]
        lat = self.push_latency(a, b, tok0, people[1][1], conv, "hello across")
        self.assertIsNotNone(lat, "no push reached node B")
        self.assertLess(lat, 1.0)
        # Devices on A, and more messages; A dies; the devices move to B.
        devices = [Device(a, t) for _, t in people]
        socks = [a.ws(d.token) for d in devices]
        for s in socks:
            s.recv()
        for i in range(20):
            self.send(a if i % 2 else b, tok0, conv, "m%d" % i)
        online = wait_for(lambda: b.get("/v1/admin/stats", token=tok0).json["online_users"] >= 10, timeout=5)
        self.assertTrue(online, b.get("/v1/admin/stats", token=tok0).json)
        a.stop(signal.SIGKILL)
        for s in socks:
            s.close()
        # A's users stop counting within the lease TTL (2 s) and a beat.
        self.assertTrue(wait_for(lambda: b.get("/v1/admin/stats", token=tok0).json["online_users"] == 0, timeout=6))
        for d in devices:
            d.server = b
            ws = b.ws(d.token)
            hello = json.loads(ws.recv())
            ws.close()
            d.pull()
            self.assertEqual(d.since, hello["seq"])
            self.assertEqual([m[2] for m in d.messages], ["hello across"] + ["m%d" % i for i in range(20)])


@unittest.skipUnless(BACKEND == "pg", "two nodes share PostgreSQL")
class TestRedisBus(ClusterBase):
    def setUp(self):
        super().setUp()
        self.redis = Redis().start()
        self.extra = ["--redis", self.redis.url()]

    def tearDown(self):
        super().tearDown()
        self.redis.stop()
        shutil.rmtree(self.redis.dir, ignore_errors=True)

    def test_push_through_redis_and_its_outage(self):
        a, b = self.node(), self.node()
        self.assertIn("Redis pub/sub", a.log())
        people, conv = self.group(a, 3)
        tok0, tok1 = people[0][1], people[1][1]
        lat = self.push_latency(a, b, tok0, tok1, conv, "via redis")
        self.assertIsNotNone(lat)
        self.assertLess(lat, 1.0)
        self.redis.stop()
        # No push crosses now, but nothing is lost: B's device pulls it.
        self.assertIsNone(self.push_latency(a, b, tok0, tok1, conv, "during the outage"))
        d = Device(b, tok1)
        d.pull()
        self.assertEqual([m[2] for m in d.messages], ["via redis", "during the outage"])
        self.redis.start()
        # The bus reconnects (a second apart) and pushes flow again.
        self.assertTrue(wait_for(lambda: self.push_latency(a, b, tok0, tok1, conv, "back %f" % time.time()),
                                 timeout=15, step=0.2))


class TestOneNode(ClusterBase):
    """SQLite: one node; a SIGKILL and a restart lose nothing."""

    def test_kill_and_reconnect(self):
        a = self.node()
        people, conv = self.group(a, 5)
        devices = [Device(a, t) for _, t in people]
        for i in range(10):
            self.send(a, people[i % 5][1], conv, "m%d" % i)
        a.stop(signal.SIGKILL)
        a.start()
        for d in devices:
            d.pull()
            self.assertEqual([m[2] for m in d.messages], ["m%d" % i for i in range(10)])


if __name__ == "__main__":
    main()
