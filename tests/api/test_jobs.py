"""The scheduler's admin endpoints on one server: who may see them, their
shapes, an immediate run of the real cleanup job (which must delete expired
sessions and stale sign-in failures, and nothing else), and a clean
shutdown that releases every lease."""
import json
import os
import sqlite3
import subprocess
import time
import uuid

from chime import BACKEND, Server, ServerTest, main

FAST = ["--lease-heartbeat", "0.5", "--lease-ttl", "2", "--access-log", "off"]
RFC3339 = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"


def sql(db_url, query):
    """Rows of a query run straight on the server's database, as tuples of
    text (PostgreSQL) or native values (SQLite) -- compare via str/int."""
    if db_url.startswith("sqlite:"):
        con = sqlite3.connect(db_url[len("sqlite:"):], timeout=10)
        try:
            rows = con.execute(query).fetchall()
            con.commit()
            return rows
        finally:
            con.close()
    out = subprocess.run(["psql", db_url, "-qAt", "-F", "\t", "-c", query], check=True,
                         capture_output=True, text=True).stdout
    return [tuple(line.split("\t")) for line in out.splitlines() if line]


def wait_for(fn, timeout=10, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(step)
    return None


class TestAdminEndpoints(ServerTest):
    server_args = FAST

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # A fresh database: the first user is the admin.
        cls.admin, cls.admin_token = cls.server.new_user()
        cls.user, cls.user_token = cls.server.new_user()

    def get(self, path, token=None):
        return self.server.get(path, token=token or self.admin_token)

    def test_need_sign_in_and_admin(self):
        for method, path in [("GET", "/v1/admin/nodes"), ("GET", "/v1/admin/leases"),
                             ("GET", "/v1/admin/jobs"), ("POST", "/v1/admin/jobs/cleanup/run")]:
            self.assertError(self.server.request(method, path), 401, field="authorization")
            self.assertError(self.server.request(method, path, token=self.user_token), 403, code="forbidden")
        self.assertEqual(self.get("/v1/admin/jobs").status, 200)

    def test_nodes(self):
        r = self.get("/v1/admin/nodes")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.json["items"]), 1, r)
        n = r.json["items"][0]
        self.assertEqual(set(n), {"id", "address", "started", "last_heartbeat"})
        self.assertEqual(n["address"], "127.0.0.1:%d" % self.server.port)
        self.assertRegex(n["started"], RFC3339)
        self.assertGreaterEqual(n["last_heartbeat"], n["started"])

    def test_leases_and_jobs(self):
        node = self.get("/v1/admin/nodes").json["items"][0]["id"]
        leases = wait_for(lambda: [l for l in self.get("/v1/admin/leases").json["items"]
                                   if l["name"] == "job:cleanup" and l["owner"]])
        self.assertTrue(leases, self.get("/v1/admin/leases"))
        l = leases[0]
        self.assertEqual(set(l), {"name", "owner", "epoch", "expires"})
        self.assertEqual(l["owner"], node)
        self.assertGreaterEqual(l["epoch"], 1)
        self.assertRegex(l["expires"], RFC3339)
        # every renewal bumps the epoch
        later = wait_for(lambda: [x for x in self.get("/v1/admin/leases").json["items"]
                                  if x["name"] == "job:cleanup" and x["epoch"] > l["epoch"]], timeout=5)
        self.assertTrue(later)

        jobs = {j["name"]: j for j in self.get("/v1/admin/jobs").json["items"]}
        self.assertIn("cleanup", jobs)
        self.assertNotIn("tick", jobs)  # only with --test-tick-job
        c = jobs["cleanup"]
        for k in ("name", "schedule", "time_zone", "next_run", "last_run", "owner"):
            self.assertIn(k, c)
        self.assertEqual(c["schedule"], "0 */10 * * * *")
        self.assertEqual(c["time_zone"], "UTC")
        self.assertEqual(c["owner"], node)
        self.assertRegex(c["next_run"], RFC3339)
        self.assertTrue(c["next_run"][14:16] in ("00", "10", "20", "30", "40", "50"), c)

    def test_run_now_cleanup(self):
        db = self.server.db
        # An expired session, a live one, a stale failure row, a fresh one
        # and a locked one.
        now = int(time.time() * 1000)
        uid = int(self.user["id"], 16)
        dead, live = "dead" + uuid.uuid4().hex, "live" + uuid.uuid4().hex
        sql(db, "INSERT INTO sessions (token_hash, user_id, created_ms, expires_ms) VALUES "
                "('%s', %d, %d, %d), ('%s', %d, %d, %d)" % (dead, uid, now - 10000, now - 5000,
                                                            live, uid, now, now + 3600000))
        sql(db, "INSERT INTO auth_failures (key, failures, window_start_ms, locked_until_ms) VALUES "
                "('stale', 2, %d, 0), ('fresh', 2, %d, 0), ('locked', 9, %d, %d)"
                % (now - 2 * 900000, now - 1000, now - 2 * 900000, now + 600000))
        r = self.server.post("/v1/admin/jobs/cleanup/run", token=self.admin_token)
        self.assertEqual(r.status, 202, r)
        self.assertEqual(r.json["name"], "cleanup")
        self.assertRegex(r.json["requested"], RFC3339)

        def ran():
            j = [j for j in self.get("/v1/admin/jobs").json["items"] if j["name"] == "cleanup"][0]
            lr = j["last_run"]
            return lr if lr and lr["started"] >= r.json["requested"] else None
        lr = wait_for(ran, timeout=10)
        self.assertTrue(lr, self.get("/v1/admin/jobs"))
        self.assertEqual(lr["outcome"], "ok", lr)
        self.assertIsNone(lr["error"])
        self.assertEqual(set(lr), {"started", "finished", "node", "epoch", "outcome", "error"})
        keys = {str(k[0]) for k in sql(db, "SELECT token_hash FROM sessions WHERE token_hash IN ('%s', '%s')"
                                       % (dead, live))}
        self.assertEqual(keys, {live})
        keys = {str(k[0]) for k in sql(db, "SELECT key FROM auth_failures WHERE key IN ('stale','fresh','locked')")}
        self.assertEqual(keys, {"fresh", "locked"})
        # the schedule itself did not move
        self.assertEqual(self.server.get("/v1/me", token=self.admin_token).status, 200)

    def test_run_unknown_job(self):
        r = self.server.post("/v1/admin/jobs/nosuch/run", token=self.admin_token)
        self.assertError(r, 404, field="name")
        r = self.server.post("/v1/admin/jobs/%s/run" % ("x" * 300), token=self.admin_token)
        self.assertError(r, 404, field="name")


class TestAdminEmail(ServerTest):
    """--admin-email makes that user an admin too."""
    email = "boss-%s@example.com" % uuid.uuid4().hex[:8]
    server_args = FAST + ["--admin-email", email]

    def test_named_admin(self):
        first, first_token = self.server.new_user()
        boss, boss_token = self.server.new_user(email=self.email.upper())
        other, other_token = self.server.new_user()
        self.assertEqual(self.server.get("/v1/admin/jobs", token=first_token).status, 200)
        self.assertEqual(self.server.get("/v1/admin/jobs", token=boss_token).status, 200)
        self.assertError(self.server.get("/v1/admin/jobs", token=other_token), 403)


class TestShutdownReleases(ServerTest):
    server_args = FAST

    def test_clean_stop_releases_leases(self):
        s = Server(db=self.server.db, args=FAST).start()
        try:
            wait_for(lambda: sql(self.server.db, "SELECT count(*) FROM nodes")[0][0] in (2, "2"))
        finally:
            self.assertEqual(s.stop(), 0)
        self.assertIn("released", s.log())
        # the stopped node's row is gone and it owns nothing
        owners = sql(self.server.db, "SELECT owner FROM leases WHERE owner IS NOT NULL")
        nodes = [str(n[0]) for n in sql(self.server.db, "SELECT id FROM nodes")]
        self.assertEqual(len(nodes), 1)
        for (o,) in owners:
            self.assertEqual(str(o), nodes[0])


if __name__ == "__main__":
    main()
