"""Test harness: starts a real `chime serve` (the sanitizer build) on a free
port against a fresh SQLite file or a fresh PostgreSQL database, and talks to
it over real HTTP. Backend from CHIME_TEST_BACKEND (sqlite | pg)."""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("CHIME_BIN", os.path.join(ROOT, "build/san/chime"))
BACKEND = os.environ.get("CHIME_TEST_BACKEND", "sqlite")
TMP = os.environ.get("CHIME_TEST_TMP", tempfile.gettempdir())


def fresh_db(backend=BACKEND):
    """A URL to an empty database of the given backend."""
    name = "t_" + uuid.uuid4().hex[:16]
    if backend == "sqlite":
        d = tempfile.mkdtemp(prefix="chime-", dir=TMP)
        return "sqlite:%s/%s.db" % (d, name)
    base = os.environ.get("CHIME_TEST_PG")
    if not base:
        raise RuntimeError("CHIME_TEST_PG is not set: run through tests/run.sh")
    subprocess.run(["psql", base, "-q", "-c", "CREATE DATABASE %s" % name], check=True)
    return re.sub(r"/postgres\?", "/%s?" % name, base)


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def __repr__(self):
        return "<%d %r>" % (self.status, self.body[:300])


class Server:
    def __init__(self, db=None, args=(), env=None):
        self.db = db or fresh_db()
        self.args = list(args)
        self.env = env
        self.proc = None
        self.port = None
        self.log_path = None

    def start(self, timeout=30, serving=True):
        """Returns once the server listens and, with serving, once it logs
        that everything has started."""
        fd, self.log_path = tempfile.mkstemp(prefix="chime-server-", suffix=".log", dir=TMP)
        env = dict(os.environ)
        env.update(self.env or {})
        cmd = [BIN, "serve", "--listen", "127.0.0.1:0", "--db", self.db,
               "--password-ops", "1", "--password-mem", "8192"] + self.args
        self.proc = subprocess.Popen(cmd, stdout=fd, stderr=fd, env=env)
        os.close(fd)
        deadline = time.time() + timeout
        while time.time() < deadline:
            # Listening comes first; "serving" once the jobs, the chat and
            # the reminder engine have started too (the node is registered).
            log = self.log()
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log)
            if m and (not serving or re.search(r"chime \S+ serving", log)):
                self.port = int(m.group(1))
                return self
            if self.proc.poll() is not None:
                raise RuntimeError("server exited %s:\n%s" % (self.proc.returncode, self.log()))
            time.sleep(0.002 if not serving else 0.02)
        raise RuntimeError("server did not start:\n" + self.log())

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Stops the server; returns its exit code. Fails on sanitizer reports."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("server did not stop within %ss:\n%s" % (timeout, self.log()[-3000:]))
        self.proc = None
        log = self.log()
        for bad in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
            if bad in log:
                raise AssertionError("sanitizer report in server log:\n" + log[-6000:])
        return code

    def request(self, method, path, body=None, token=None, headers=None, raw=None, timeout=30):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        if token:
            h["Authorization"] = "Bearer " + token
        try:
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            return Response(r.status, r.getheaders(), r.read().decode("utf-8", "replace"))
        finally:
            conn.close()

    def ws(self, token=None, ticket=None, timeout=10, **kw):
        """A real WebSocket client (python3-websocket) on /v1/ws."""
        import websocket
        url = "ws://127.0.0.1:%d/v1/ws" % self.port + ("?ticket=" + ticket if ticket else "")
        header = ["Authorization: Bearer " + token] if token else []
        return websocket.create_connection(url, header=header, timeout=timeout, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body=body, **kw)

    def patch(self, path, body=None, **kw):
        return self.request("PATCH", path, body=body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    # Conveniences for tests that need a signed-in user.
    def signup(self, email=None, name="Test User", password="correct horse battery"):
        email = email or "u%s@example.com" % uuid.uuid4().hex[:10]
        r = self.post("/v1/users", {"email": email, "name": name, "password": password})
        assert r.status == 201, r
        return r.json

    def signin(self, email, password="correct horse battery"):
        r = self.post("/v1/sessions", {"email": email, "password": password})
        assert r.status == 201, r
        return r.json["token"]

    def new_user(self, **kw):
        u = self.signup(**kw)
        return u, self.signin(u["email"], kw.get("password", "correct horse battery"))


class ServerTest(unittest.TestCase):
    """One server per test class, stopped cleanly (exit 0) at the end."""
    server_args = ()

    @classmethod
    def setUpClass(cls):
        cls.server = Server(args=cls.server_args).start()

    @classmethod
    def tearDownClass(cls):
        try:
            code = cls.server.stop()
        finally:
            if getattr(cls, "_failed", False):
                # The server's side of a failure, kept in the test's log (the
                # server's own file goes with the test's temporary directory).
                # Every line but the access log's, then the last 200 of all:
                # what a component said early in the class (a test that
                # failed first of several) is not pushed out by requests.
                lines = cls.server.log().splitlines()
                said = [l for l in lines if " peer=" not in l][-2000:]
                sys.stderr.write("---- the server log of %s without requests (%d lines) ----\n%s\n"
                                 "---- its last %d lines ----\n%s\n----\n"
                                 % (cls.__name__, len(said), "\n".join(said), min(200, len(lines)),
                                    "\n".join(lines[-200:])))
        assert code == 0, "server exit code %s\n%s" % (code, cls.server.log()[-3000:])

    def run(self, result=None):
        bad = (len(result.failures) + len(result.errors)) if result else 0
        out = super().run(result)
        if result and len(result.failures) + len(result.errors) > bad:
            type(self)._failed = True
        return out

    def assertError(self, r, status, field=None, code=None):
        self.assertEqual(r.status, status, r)
        self.assertIsInstance(r.json, dict, r)
        err = r.json.get("error")
        self.assertIsInstance(err, dict, r)
        self.assertTrue(err.get("code"), r)
        self.assertTrue(err.get("message"), r)
        if field is not None:
            self.assertEqual(err.get("field"), field, r)
        if code is not None:
            self.assertEqual(err.get("code"), code, r)


class NodesTest(unittest.TestCase):
    """Servers the test starts and kills itself, all on one fresh database
    (self.db) with node_args; those still running at the end are SIGKILLed."""
    node_args = ()

    def setUp(self):
        self.db = fresh_db()
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.proc is not None:
                s.stop(signal.SIGKILL)

    def start(self):
        s = Server(db=self.db, args=list(self.node_args)).start()
        self.servers.append(s)
        return s


def main():
    unittest.main(verbosity=2)
