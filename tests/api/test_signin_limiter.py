"""The sign-in limiter hurts the attacker, not the owner (issue 25, item 3):
failures past an allowance grow a delay per account and per client
address (1 s, 2 s, 4 s ... up to --signin-window) instead of a hard lock;
a correct password from a client that signed in before -- its device
cookie, or a live session of the account -- is not held back by failures
from elsewhere. The attacker signs in from 127.0.0.2, the owner from
127.0.0.1 (both loopback)."""
import http.client
import json
import time
import uuid

from chime import ServerTest, main
from test_jobs import sql

PW = "correct horse battery"


def request(server, body, source="127.0.0.1", headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30, source_address=(source, 0))
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    try:
        conn.request("POST", "/v1/sessions", body=json.dumps(body).encode(), headers=h)
        r = conn.getresponse()
        data = r.read().decode()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), json.loads(data) if data else None
    finally:
        conn.close()


def device_cookie(headers):
    c = headers.get("set-cookie", "")
    assert c.startswith("chime_device="), headers
    return c.split(";")[0]


class LimiterTest(ServerTest):
    def owner(self):
        email = "o-%s@example.com" % uuid.uuid4().hex[:8]
        self.server.signup(email=email, password=PW)
        status, headers, body = request(self.server, {"email": email, "password": PW})
        self.assertEqual(status, 201, body)
        return email, device_cookie(headers), body["token"]

    def attack(self, email, n, source="127.0.0.2"):
        """n wrong passwords, waiting out each delay; the last answer."""
        last = None
        for _ in range(n):
            status, headers, body = request(self.server, {"email": email, "password": "wrong guess"}, source)
            if status == 429:
                time.sleep(int(headers["retry-after"]) + 0.05)
                status, headers, body = request(self.server, {"email": email, "password": "wrong guess"}, source)
            self.assertEqual(status, 401, body)
            last = headers
        return last


class TestGrowingDelay(LimiterTest):
    server_args = ("--signin-limit", "2", "--signin-ip-limit", "100", "--signin-window", "60")

    def test_delay_doubles_per_failure(self):
        email, _, _ = self.owner()
        self.attack(email, 2)  # the allowance
        delays = []
        for _ in range(3):
            status, headers, body = request(self.server, {"email": email, "password": PW}, "127.0.0.2")
            self.assertEqual(status, 429, body)
            delays.append(int(headers["retry-after"]))
            time.sleep(delays[-1] + 0.05)
            self.attack(email, 1)
        self.assertEqual(delays, [1, 2, 4])

    def test_owner_with_device_cookie_is_not_held_back(self):
        email, cookie, _ = self.owner()
        self.attack(email, 4)
        status, _, _ = request(self.server, {"email": email, "password": PW}, "127.0.0.2")
        self.assertEqual(status, 429)
        # The owner on a device that signed in before: no wait.
        status, headers, body = request(self.server, {"email": email, "password": PW}, headers={"Cookie": cookie})
        self.assertEqual(status, 201, body)
        # Without it, the owner waits like anyone.
        status, _, _ = request(self.server, {"email": email, "password": PW})
        self.assertEqual(status, 429)

    def test_live_session_of_the_account_counts_as_the_device(self):
        email, _, token = self.owner()
        self.attack(email, 4)
        status, _, body = request(self.server, {"email": email, "password": PW},
                                  headers={"Authorization": "Bearer " + token})
        self.assertEqual(status, 201, body)

    def test_another_accounts_cookie_does_not_help(self):
        email, _, _ = self.owner()
        _, other_cookie, other_token = self.owner()
        self.attack(email, 4)
        for h in ({"Cookie": other_cookie}, {"Authorization": "Bearer " + other_token},
                  {"Cookie": "chime_device=forged"}):
            status, _, _ = request(self.server, {"email": email, "password": PW}, "127.0.0.2", headers=h)
            self.assertEqual(status, 429, h)

    def test_wrong_passwords_on_a_known_device_slow_that_device_only(self):
        email, cookie, _ = self.owner()
        for _ in range(3):
            status, _, _ = request(self.server, {"email": email, "password": "typo"}, headers={"Cookie": cookie})
            self.assertIn(status, (401, 429))
        status, headers, _ = request(self.server, {"email": email, "password": PW}, headers={"Cookie": cookie})
        self.assertEqual(status, 429)
        # Others are not held back by the device's typos.
        status, _, body = request(self.server, {"email": email, "password": PW}, "127.0.0.2")
        self.assertEqual(status, 201, body)


class TestAddressDelay(LimiterTest):
    server_args = ("--signin-limit", "100", "--signin-ip-limit", "3", "--signin-window", "60")

    def test_one_address_does_not_hold_back_another(self):
        email, _, _ = self.owner()
        for i in range(3):
            status, _, _ = request(self.server, {"email": "nobody%d@example.com" % i, "password": "x"}, "127.0.0.2")
            self.assertEqual(status, 401)
        status, headers, _ = request(self.server, {"email": email, "password": PW}, "127.0.0.2")
        self.assertEqual(status, 429)
        self.assertEqual(headers["retry-after"], "1")
        status, _, body = request(self.server, {"email": email, "password": PW}, "127.0.0.1")
        self.assertEqual(status, 201, body)


class TestDeviceBound(LimiterTest):
    def test_a_user_keeps_the_fifty_devices_used_last(self):
        """A client that drops its cookie gets a new device at every
        sign-in; the account keeps only the 50 most recently used, so the
        table cannot grow without bound, and a device in use stays known."""
        email, kept, _ = self.owner()
        _, headers, _ = request(self.server, {"email": email, "password": PW})
        dropped = device_cookie(headers)  # signed in once, never again
        for i in range(55):
            status, headers, body = request(self.server, {"email": email, "password": PW})
            self.assertEqual(status, 201, body)
            device_cookie(headers)  # a new device each time
            if i % 10 == 0:  # the owner's device, in use all along
                status, headers, _ = request(self.server, {"email": email, "password": PW},
                                             headers={"Cookie": kept})
                self.assertEqual((status, "set-cookie" in headers), (201, False))
        uid = self.server.post("/v1/sessions", {"email": email, "password": PW}).json["user"]["id"]
        rows = sql(self.server.db, "SELECT count(*) FROM known_devices WHERE user_id = %d" % int(uid, 16))
        self.assertEqual(int(rows[0][0]), 50)
        status, headers, _ = request(self.server, {"email": email, "password": PW}, headers={"Cookie": kept})
        self.assertEqual((status, "set-cookie" in headers), (201, False))
        status, headers, _ = request(self.server, {"email": email, "password": PW}, headers={"Cookie": dropped})
        self.assertEqual((status, "set-cookie" in headers), (201, True))  # forgotten: a stranger again


class TestDefaults(LimiterTest):
    """The promise with the settings a user gets (5 per account, 50 per
    address, 900 s): five wrong passwords cost the attacker a short and
    growing wait, never the owner's device anything."""

    def test_default_settings(self):
        email, cookie, _ = self.owner()
        for _ in range(5):
            status, _, _ = request(self.server, {"email": email, "password": "wrong guess"}, "127.0.0.2")
            self.assertEqual(status, 401)
        status, headers, _ = request(self.server, {"email": email, "password": PW}, "127.0.0.2")
        self.assertEqual(status, 429)
        self.assertEqual(headers["retry-after"], "1")
        status, _, body = request(self.server, {"email": email, "password": PW}, headers={"Cookie": cookie})
        self.assertEqual(status, 201, body)


if __name__ == "__main__":
    main()
