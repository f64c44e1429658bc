"""Server mechanics over real HTTP: health, metrics, routing errors, body
limits, keep-alive, request ids, configuration layers, clean shutdown."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time

from chime import BACKEND, BIN, TMP, Server, ServerTest, fresh_db, main
import unittest


class TestServer(ServerTest):
    def test_healthz(self):
        r = self.server.get("/healthz")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"status": "ok"})
        self.assertEqual(r.header("content-type"), "application/json")
        self.assertTrue(r.header("x-request-id"))

    def test_request_ids_differ(self):
        ids = {self.server.get("/healthz").header("x-request-id") for _ in range(5)}
        self.assertEqual(len(ids), 5)

    def test_unknown_path_is_json_404(self):
        self.assertError(self.server.get("/nope"), 404, code="not_found")
        self.assertError(self.server.get("/v1/me/extra/segments/here"), 404)

    def test_wrong_method_is_405_with_allow(self):
        r = self.server.request("PUT", "/healthz")
        self.assertError(r, 405, code="method_not_allowed")
        self.assertIn("GET", r.header("allow"))
        r = self.server.request("BREW", "/healthz")
        self.assertEqual(r.status, 405, r)

    def test_head_has_no_body(self):
        r = self.server.request("HEAD", "/healthz")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, "")

    def test_body_over_limit_is_json_413(self):
        # Announce a 10 MB body, send the first 64 KB, and read the answer:
        # the server must refuse from the length alone, with our JSON error.
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        sock.sendall(b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 10485760\r\n\r\n" + b"a" * 65536)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        sock.close()
        head, _, body = data.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 413"), data[:200])
        self.assertIn(b"application/json", head)
        err = json.loads(body)["error"]
        self.assertEqual(err["code"], "body_too_large")
        self.assertEqual(err["field"], "body")
        self.assertEqual(self.server.get("/healthz").status, 200)

    def test_keep_alive_serves_many_requests_on_one_connection(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        for _ in range(50):
            conn.request("GET", "/healthz")
            r = conn.getresponse()
            self.assertEqual(r.status, 200)
            r.read()
        conn.close()

    def test_metrics(self):
        self.server.get("/healthz")
        self.server.get("/does-not-exist")
        r = self.server.get("/metrics")
        self.assertEqual(r.status, 200)
        self.assertTrue(r.header("content-type").startswith("text/plain"))
        body = r.body
        self.assertRegex(body, r'chime_http_requests_total\{route="/healthz",status="200"\} [1-9]')
        self.assertRegex(body, r'chime_http_requests_total\{route="unmatched",status="404"\} [1-9]')
        self.assertRegex(body, r'chime_http_request_duration_seconds_bucket\{route="/healthz",le="\+Inf"\} [1-9]')
        self.assertRegex(body, r"# TYPE chime_users_registered gauge\nchime_users_registered \d+")
        before = int(re.search(r"chime_users_registered (\d+)", body).group(1))
        self.server.signup()
        after = int(re.search(r"chime_users_registered (\d+)", self.server.get("/metrics").body).group(1))
        self.assertEqual(after, before + 1)

    def test_access_log_has_request_id(self):
        r = self.server.get("/healthz?probe=accesslog")
        rid = r.header("x-request-id")
        deadline = time.time() + 5
        while time.time() < deadline and ("id=" + rid) not in self.server.log():
            time.sleep(0.05)
        line = [l for l in self.server.log().splitlines() if ("id=" + rid) in l]
        self.assertEqual(len(line), 1)
        self.assertIn("GET /healthz?probe=accesslog 200", line[0])


class TestAccessLog(ServerTest):
    """The access log (on by default, to stderr) is buffered per event loop
    and flushed by size, every second and at exit (issue 24.7): a write
    per request cost a fifth of the throughput. Every line is kept."""

    def keep_alive_requests(self, server, n):
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        ids = []
        for i in range(n):
            conn.request("GET", "/healthz?n=%d" % i)
            r = conn.getresponse()
            r.read()
            ids.append(r.getheader("x-request-id"))
        conn.close()
        return ids

    def lines_for(self, server, ids):
        log = server.log()
        return [rid for rid in ids if log.count("id=%s " % rid) == 1]

    def test_not_a_write_per_request(self):
        def writes():
            with open("/proc/%d/io" % self.server.proc.pid) as f:
                return int(re.search(r"syscw: (\d+)", f.read()).group(1))
        n = 2000
        self.keep_alive_requests(self.server, 50)
        before = writes()
        ids = self.keep_alive_requests(self.server, n)
        after = writes()
        # One write per response on the socket; the log adds a few more, not n.
        self.assertLess(after - before, n * 1.25, (before, after))
        deadline = time.time() + 3
        while time.time() < deadline and len(self.lines_for(self.server, ids)) < n:
            time.sleep(0.1)
        self.assertEqual(len(self.lines_for(self.server, ids)), n)

    def test_flushed_within_a_second(self):
        rid = self.server.get("/healthz?probe=flush").header("x-request-id")
        t0 = time.time()
        while time.time() - t0 < 3 and ("id=" + rid) not in self.server.log():
            time.sleep(0.02)
        self.assertIn("id=" + rid, self.server.log())
        self.assertLess(time.time() - t0, 1.5)

    def test_every_line_written_at_exit(self):
        s = Server().start()
        try:
            ids = self.keep_alive_requests(s, 300)
        finally:
            self.assertEqual(s.stop(), 0)
        self.assertEqual(len(self.lines_for(s, ids)), 300)

    def test_file_log(self):
        path = os.path.join(TMP, "access-%d.log" % os.getpid())
        s = Server(args=["--access-log", path]).start()
        try:
            ids = self.keep_alive_requests(s, 100)
        finally:
            self.assertEqual(s.stop(), 0)
        with open(path) as f:
            text = f.read()
        os.unlink(path)
        self.assertEqual(sum(1 for rid in ids if text.count("id=%s " % rid) == 1), 100)
        self.assertTrue(all(line.endswith("ms") for line in text.splitlines()), text[-500:])


class TestConfig(ServerTest):
    def test_help_lists_every_option(self):
        out = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0)
        for opt in ("--listen", "--db", "--config", "--max-body", "--threads", "--access-log"):
            self.assertIn(opt, out.stdout)
        out = subprocess.run([BIN, "--help"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0)
        self.assertIn("serve", out.stdout)

    def test_bad_option_names_it(self):
        out = subprocess.run([BIN, "serve", "--max-body", "lots"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("max-body", out.stderr)
        out = subprocess.run([BIN, "serve", "--no-such-flag", "1"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("--no-such-flag", out.stderr)

    def body_limit(self, server):
        """The effective body limit, found by probing around the candidates."""
        for size in (1500, 3000, 6000):
            r = server.request("POST", "/v1/users", raw=b" " * size, headers={"Content-Type": "application/json"})
            if r.status == 413:
                return size
        return None

    def test_layers_flag_over_env_over_file(self):
        conf = os.path.join(tempfile.mkdtemp(dir=TMP), "chime.conf")
        with open(conf, "w") as f:
            f.write("# test config\nmax-body = 1k\n")
        s = Server(args=["--config", conf]).start()
        try:
            self.assertEqual(self.body_limit(s), 1500)
        finally:
            self.assertEqual(s.stop(), 0)
        s = Server(args=["--config", conf], env={"CHIME_MAX_BODY": "2k"}).start()
        try:
            self.assertEqual(self.body_limit(s), 3000)
        finally:
            self.assertEqual(s.stop(), 0)
        s = Server(args=["--config", conf, "--max-body", "4k"], env={"CHIME_MAX_BODY": "2k"}).start()
        try:
            self.assertEqual(self.body_limit(s), 6000)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_bad_config_file_line_is_named(self):
        conf = os.path.join(tempfile.mkdtemp(dir=TMP), "bad.conf")
        with open(conf, "w") as f:
            f.write("listen = 127.0.0.1:0\nbogus = 1\n")
        out = subprocess.run([BIN, "serve", "--config", conf], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("bad.conf:2", out.stderr)
        self.assertIn("bogus", out.stderr)

    def test_migrate_verb(self):
        db = fresh_db()
        out = subprocess.run([BIN, "migrate", "--db", db], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"schema version [1-9]")
        again = subprocess.run([BIN, "migrate", "--db", db], capture_output=True, text=True)
        self.assertEqual(again.stdout, out.stdout)

    def test_unreachable_database_fails_fast(self):
        db = "postgresql://nobody@/nodb?host=/nonexistent-dir" if os.environ.get("CHIME_TEST_BACKEND") == "pg" \
            else "sqlite:/nonexistent-dir/x/y.db"
        out = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--db", db],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 1)
        self.assertIn("cannot open database", out.stderr)

    def test_second_chime_on_same_port_fails(self):
        # Our own listeners use SO_REUSEPORT; a second process must still
        # not be able to share the port.
        port = self.server.port
        out = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:%d" % port, "--db", fresh_db()],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("Address already in use", out.stderr)

    def test_port_in_use_fails(self):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        try:
            out = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:%d" % port, "--db", fresh_db()],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 1)
            self.assertIn("listen", out.stderr)
        finally:
            sock.close()


class TestShutdown(ServerTest):
    def test_sigterm_finishes_in_flight_request(self):
        # A deliberately slow password hash keeps a sign-up in flight.
        s = Server(args=["--password-ops", "4", "--password-mem", "131072"]).start()
        result = {}

        def signup():
            result["r"] = s.post("/v1/users", {"email": "slow@example.com", "name": "Slow",
                                               "password": "long enough pw"})

        t = threading.Thread(target=signup)
        t.start()
        time.sleep(0.05)
        s.proc.send_signal(signal.SIGTERM)
        t.join(30)
        self.assertEqual(s.stop(), 0)
        self.assertEqual(result["r"].status, 201, result["r"])
        self.assertIn("stopped cleanly", s.log())
        # The account exists: the request finished before the database closed.
        s2 = Server(db=s.db).start()
        try:
            self.assertTrue(s2.signin("slow@example.com", "long enough pw"))
        finally:
            self.assertEqual(s2.stop(), 0)

    def test_a_slow_reader_does_not_hold_up_the_stop(self):
        """A client that stops reading halfway through a large answer gets
        200 ms after SIGTERM to take the rest (server.c's loop_main), then
        the server stops anyway."""
        s = Server(args=["--chat-rate", "100000"]).start()
        try:
            (a, ta), (b, tb) = s.new_user(), s.new_user()
            conv = s.post("/v1/conversations", {"type": "direct", "user": b["id"]}, token=ta).json["id"]
            text = "x" * 8000
            codes = []

            def send(first):
                for i in range(first, 600, 4):
                    codes.append(s.post("/v1/conversations/%s/messages" % conv,
                                        {"client_msg_id": "m%d" % i, "text": text}, token=ta).status)

            senders = [threading.Thread(target=send, args=(i,)) for i in range(4)]
            for t in senders:
                t.start()
            for t in senders:
                t.join(60)
            self.assertEqual(codes, [201] * 600)
            # About 5 MB of answer into a 4 KB receive buffer, not read.
            slow = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            slow.connect(("127.0.0.1", s.port))
            slow.sendall(("GET /v1/sync?since=0&limit=1000 HTTP/1.1\r\nHost: x\r\n"
                          "Authorization: Bearer %s\r\n\r\n" % tb).encode())
            time.sleep(1)
            t0 = time.monotonic()
            code = s.stop(timeout=20)
            took = time.monotonic() - t0
            self.assertEqual(code, 0)
            self.assertIn("stopped cleanly", s.log())
            # 200 ms for the reader, then the usual stop; without the bound
            # it waits as long as the reader does (here: for ever).
            self.assertLess(took, 10, "the stop waited %.1f s for a slow reader" % took)
            # It really was slow: the answer never came whole.
            slow.settimeout(10)
            got = b""
            try:
                while True:
                    chunk = slow.recv(1 << 20)
                    if not chunk:
                        break
                    got += chunk
            except (ConnectionResetError, socket.timeout):
                pass
            slow.close()
            head, _, body = got.partition(b"\r\n\r\n")
            length = int(re.search(rb"content-length: *([0-9]+)", head, re.I).group(1))
            self.assertGreater(length, 4000000)
            self.assertLess(len(body), length)
        finally:
            s.stop()

    def test_sigint_stops_too(self):
        s = Server().start()
        self.assertEqual(s.get("/healthz").status, 200)
        self.assertEqual(s.stop(signal.SIGINT), 0)


@unittest.skipUnless(BACKEND == "pg", "SQLite's statements are in-process: no database server to spare")
class TestIdleNodeIsQuiet(ServerTest):
    """A node with nothing to do asks its database little: the reminder
    scanner looks at all its lease groups in one statement a pass and
    opens no transaction when nothing is due, and the feed's fan-out looks
    at its groups in one statement a look (before: about 330 transactions
    and 970 statements a second, idle)."""

    def test_idle_transactions(self):
        def commits():
            out = subprocess.run(["psql", self.server.db, "-qAt", "-c", "SELECT xact_commit FROM pg_stat_database "
                                  "WHERE datname = current_database()"], check=True, stdout=subprocess.PIPE,
                                 text=True).stdout
            return int(out.strip())
        time.sleep(2)  # start-up's own work done
        c0, t0 = commits(), time.time()
        time.sleep(8)  # PostgreSQL counts a busy connection's commits about once a second
        rate = (commits() - c0) / (time.time() - t0)
        self.assertLess(rate, 100, "%.0f transactions a second while idle" % rate)


@unittest.skipUnless(BACKEND == "pg", "SQLite's looks are a seek a shard by construction")
class TestIdleScannerSeeks(ServerTest):
    """The idle reminder scanner's look at its groups is a seek a shard
    whatever the planner makes of the table: with 100,000 reminders none
    due it never reads the whole table (helper-20 found a first version
    doing so 4-5 times a second between about 20k and 300k rows)."""

    def sql(self, text):
        return subprocess.run(["psql", self.server.db, "-qAt", "-c", text], check=True, stdout=subprocess.PIPE,
                              text=True).stdout.strip()

    def test_no_full_scans_with_many_reminders(self):
        u, tok = self.server.new_user()
        r = self.server.post("/v1/events", {"summary": "x", "start": {"date_time": "2030-01-01T10:00:00Z"},
                                            "end": {"date_time": "2030-01-01T11:00:00Z"},
                                            "reminders": [{"method": "push", "minutes_before": 0}]}, token=tok)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(self.server.stop(), 0)
        # Ten short transactions, not one long one: an open transaction
        # holds back the whole cluster's snapshot xmin, which the reminder
        # frames of the tests running beside this one wait for.
        for k in range(10):
            self.sql("INSERT INTO reminders (id, event_id, user_id, method, minutes_before, shard, single, floor_ms, "
                     "next_fire_ms, occurrence_ms, start_ms) SELECT 1000000000 + i, r.event_id, r.user_id, r.method, "
                     "100000 + i, i %% 1024, 1, 0, 1893492000000 + i, 1893492000000, 1893492000000 FROM "
                     "generate_series(%d, %d) i, (SELECT * FROM reminders LIMIT 1) r"
                     % (k * 10000 + 1, k * 10000 + 10000))
        self.sql("VACUUM ANALYZE reminders")
        type(self).server = Server(db=self.server.db).start()
        time.sleep(2)
        scans = lambda: int(self.sql("SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'reminders'"))
        s0 = scans()
        time.sleep(6)  # 30 looks; statistics reach the view within about a second
        self.assertLessEqual(scans() - s0, 1)


class TestOutOfDescriptors(ServerTest):
    def test_accept_pauses_instead_of_spinning(self):
        """Out of file descriptors, a waiting connection cannot be accepted
        while the listener stays readable: the loop must not spin on it,
        and once descriptors are free again the server answers."""
        import resource
        pid = self.server.proc.pid
        soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (160, hard))
        socks = []
        try:
            for _ in range(220):  # past the limit; the kernel's backlog holds the rest
                s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
                socks.append(s)
            time.sleep(0.5)
            cpu0 = self.cpu_seconds(pid)
            time.sleep(2)
            spent = self.cpu_seconds(pid) - cpu0
            self.assertLess(spent, 0.6, "the server spun %.2f s of CPU in 2 s while out of descriptors" % spent)
            self.assertIn("cannot accept connections", self.server.log())
        finally:
            for s in socks:
                s.close()
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if self.server.get("/healthz", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        self.assertEqual(self.server.get("/healthz").status, 200)

    @staticmethod
    def cpu_seconds(pid):
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
