"""Sign-up, sign-in, sign-out and /v1/me over real HTTP, with bad input on
every endpoint: each gets its 4xx JSON error and changes nothing."""
import re
import time
import uuid

from chime import ServerTest, main


def users_registered(server):
    return int(re.search(r"chime_users_registered (\d+)", server.get("/metrics").body).group(1))


class TestFlow(ServerTest):
    def test_signup_signin_me_signout(self):
        email = "Alice.%s@Example.com" % uuid.uuid4().hex[:8]
        r = self.server.post("/v1/users", {"email": email, "name": "Alice", "password": "s3cret pass"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(set(r.json), {"id", "email", "name", "created"})
        self.assertEqual(r.json["email"], email)
        self.assertRegex(r.json["id"], r"^[0-9a-f]{16}$")
        self.assertRegex(r.json["created"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertNotIn("password", r.body)

        r = self.server.post("/v1/sessions", {"email": email.upper(), "password": "s3cret pass"})
        self.assertEqual(r.status, 201, r)
        token = r.json["token"]
        self.assertGreaterEqual(len(token), 43)
        self.assertEqual(r.json["user"]["email"], email)

        me = self.server.get("/v1/me", token=token)
        self.assertEqual(me.status, 200, me)
        self.assertEqual(me.json["email"], email)

        self.assertEqual(self.server.delete("/v1/sessions/current", token=token).status, 204)
        self.assertError(self.server.get("/v1/me", token=token), 401, field="authorization")

    def test_two_sessions_are_independent(self):
        u = self.server.signup()
        t1, t2 = self.server.signin(u["email"]), self.server.signin(u["email"])
        self.assertNotEqual(t1, t2)
        self.assertEqual(self.server.delete("/v1/sessions/current", token=t1).status, 204)
        self.assertEqual(self.server.get("/v1/me", token=t2).status, 200)

    def test_duplicate_email_case_insensitive(self):
        u = self.server.signup()
        before = users_registered(self.server)
        r = self.server.post("/v1/users", {"email": u["email"].upper(), "name": "X", "password": "another pw"})
        self.assertError(r, 409, field="email", code="email_taken")
        self.assertEqual(users_registered(self.server), before)

    def test_ids_are_not_sequential(self):
        ids = [int(self.server.signup()["id"], 16) for _ in range(4)]
        gaps = {b - a for a, b in zip(ids, ids[1:])}
        self.assertNotIn(1, gaps)
        self.assertEqual(len(set(ids)), 4)

    def test_wrong_password(self):
        u = self.server.signup()
        r = self.server.post("/v1/sessions", {"email": u["email"], "password": "wrong password"})
        self.assertError(r, 401, code="invalid_credentials")
        r = self.server.post("/v1/sessions", {"email": "nobody-%s@example.com" % uuid.uuid4().hex, "password": "x"})
        self.assertError(r, 401, code="invalid_credentials")


class TestBadInput(ServerTest):
    def check_signup_rejected(self, status, field, **req):
        before = users_registered(self.server)
        r = self.server.request("POST", "/v1/users", **req)
        self.assertError(r, status, field=field)
        self.assertEqual(users_registered(self.server), before, "a rejected sign-up changed something")

    def test_signup_bad_bodies(self):
        ok = {"email": "ok-%s@example.com" % uuid.uuid4().hex[:6], "name": "N", "password": "password1"}
        cases = [
            (400, "body", {"raw": b"{not json", "headers": {"Content-Type": "application/json"}}),
            (400, "body", {"raw": b"", "headers": {"Content-Type": "application/json"}}),
            (400, "body", {"raw": b"[1,2]", "headers": {"Content-Type": "application/json"}}),
            (400, "body", {"raw": b'{"email":"a\xff@example.com","name":"n","password":"password1"}',
                           "headers": {"Content-Type": "application/json"}}),
            (400, "body", {"raw": b'{"email":"a@b.co","email":"c@d.co","name":"n","password":"password1"}',
                           "headers": {"Content-Type": "application/json"}}),
            (415, "content-type", {"raw": b'{"email":"a@b.co"}', "headers": {"Content-Type": "text/plain"}}),
            (415, "content-type", {"raw": b'{"email":"a@b.co"}'}),
            (400, "email", {"body": {k: v for k, v in ok.items() if k != "email"}}),
            (400, "email", {"body": dict(ok, email=42)}),
            (400, "email", {"body": dict(ok, email="")}),
            (400, "email", {"body": dict(ok, email="   ")}),
            (400, "email", {"body": dict(ok, email="no-at-sign")}),
            (400, "email", {"body": dict(ok, email="a@b")}),
            (400, "email", {"body": dict(ok, email="a b@example.com")}),
            (400, "email", {"body": dict(ok, email="x" * 300 + "@example.com")}),
            (400, "name", {"body": dict(ok, name=None)}),
            (400, "name", {"body": dict(ok, name=["list"])}),
            (400, "name", {"body": dict(ok, name="n" * 201)}),
            (400, "name", {"body": dict(ok, name="a\u0000b")}),
            (400, "password", {"body": dict(ok, password="short")}),
            (400, "password", {"body": dict(ok, password=12345678)}),
            (400, "password", {"body": dict(ok, password="p" * 1025)}),
            (400, "extra", {"body": dict(ok, extra=1)}),
            (400, "is_admin", {"body": dict(ok, is_admin=True)}),
        ]
        for status, field, req in cases:
            with self.subTest(field=field, req=str(req)[:80]):
                self.check_signup_rejected(status, field, **req)

    def test_signin_bad_bodies(self):
        cases = [
            (400, "body", {"raw": b"nope", "headers": {"Content-Type": "application/json"}}),
            (415, "content-type", {"raw": b"{}", "headers": {"Content-Type": "application/xml"}}),
            (400, "email", {"body": {"password": "x"}}),
            (400, "password", {"body": {"email": "a@b.co"}}),
            (400, "password", {"body": {"email": "a@b.co", "password": 5}}),
            (400, "remember", {"body": {"email": "a@b.co", "password": "x", "remember": True}}),
        ]
        for status, field, req in cases:
            with self.subTest(field=field):
                self.assertError(self.server.request("POST", "/v1/sessions", **req), status, field=field)

    def test_tokens(self):
        u, token = self.server.new_user()
        cases = [
            {},                                                  # missing
            {"headers": {"Authorization": "Bearer"}},            # empty
            {"headers": {"Authorization": "Basic " + token}},    # wrong scheme
            {"token": "chm_" + "A" * 43},                        # forged
            {"token": token[:-1] + ("B" if token[-1] != "B" else "C")},  # tampered
            {"token": "x" * 5000},                               # absurd
        ]
        for req in cases:
            with self.subTest(req=str(req)[:60]):
                r = self.server.get("/v1/me", **req)
                self.assertError(r, 401, field="authorization")
                self.assertEqual(r.header("www-authenticate"), "Bearer")
                self.assertError(self.server.delete("/v1/sessions/current", **req), 401)
        self.assertEqual(self.server.get("/v1/me", token=token).status, 200)


class TestExpiry(ServerTest):
    server_args = ("--session-ttl", "1")

    def test_expired_token(self):
        u, token = self.server.new_user()
        self.assertEqual(self.server.get("/v1/me", token=token).status, 200)
        time.sleep(1.3)
        self.assertError(self.server.get("/v1/me", token=token), 401, code="token_expired")
        self.assertError(self.server.get("/v1/me", token=token), 401, code="invalid_token")


class TestRateLimit(ServerTest):
    # The window must outlast 9 sign-ins, each an argon2id hash: under
    # the sanitizers on a busy two-core machine 2 s was too short once.
    WINDOW = 5
    server_args = ("--signin-limit", "3", "--signin-ip-limit", "8", "--signin-window", str(WINDOW))

    def test_account_locks_then_unlocks(self):
        u = self.server.signup()
        for _ in range(3):
            r = self.server.post("/v1/sessions", {"email": u["email"], "password": "bad guess"})
            self.assertError(r, 401)
        # Even the right password is refused while locked.
        r = self.server.post("/v1/sessions", {"email": u["email"], "password": "correct horse battery"})
        self.assertError(r, 429, code="too_many_attempts")
        self.assertGreaterEqual(int(r.header("retry-after")), 1)
        time.sleep(self.WINDOW + 0.2)
        self.assertTrue(self.server.signin(u["email"]))

    def test_client_address_locks_across_accounts(self):
        time.sleep(self.WINDOW + 0.2)  # a fresh window for this address
        emails = ["ip%d-%s@example.com" % (i, uuid.uuid4().hex[:6]) for i in range(8)]
        for e in emails:
            self.assertError(self.server.post("/v1/sessions", {"email": e, "password": "x"}), 401)
        r = self.server.post("/v1/sessions", {"email": "another@example.com", "password": "x"})
        self.assertError(r, 429)
        time.sleep(self.WINDOW + 0.2)


if __name__ == "__main__":
    main()
