"""Look-alike e-mail addresses (issue 25, item 4): an address is unique in
NFC case-folded form, characters nobody can see are refused, and a new
address that looks like a registered one (Unicode TR39 skeleton) is
refused; attendees and free/busy go through the same rule. Migration of
existing rows: tests/unit/test-users-email.c."""
import uuid

from chime import ServerTest, main

PW = "correct horse battery"


class TestLookalikes(ServerTest):
    def setUp(self):
        self.domain = "%s.example.com" % uuid.uuid4().hex[:8]

    def addr(self, local):
        return "%s@%s" % (local, self.domain)

    def signup(self, email, status=201, code=None):
        r = self.server.post("/v1/users", {"email": email, "name": "N", "password": PW})
        if status == 201:
            self.assertEqual(r.status, 201, r)
        else:
            self.assertError(r, status, field="email", code=code)
        return r.json

    def test_case_and_unicode_forms_are_one_address(self):
        first = self.signup(self.addr("\u00e9cole"))                 # école, composed
        self.signup(self.addr("\u00c9COLE"), 409, "email_taken")     # ÉCOLE
        self.signup(self.addr("e\u0301cole"), 409, "email_taken")    # e + combining acute
        self.signup(self.addr("E\u0301COLE"), 409, "email_taken")
        # Sign-in finds the one account whatever the form.
        for form in ("\u00c9COLE", "e\u0301cole", "\u00e9CoLe"):
            r = self.server.post("/v1/sessions", {"email": self.addr(form), "password": PW})
            self.assertEqual(r.status, 201, r)
            self.assertEqual(r.json["user"]["id"], first["id"])

    def test_shown_in_nfc(self):
        u = self.signup(self.addr("Jos\u0065\u0301"))
        self.assertEqual(u["email"], self.addr("Jos\u00e9"))

    def test_lookalikes_are_refused(self):
        self.signup(self.addr("known"))
        self.signup(self.addr("kn\u043ewn"), 409, "email_confusable")    # Cyrillic o
        self.signup(self.addr("\uff4bnown"), 409, "email_confusable")    # fullwidth k
        self.signup(self.addr("\u212anown"), 409, None)                  # Kelvin sign: NFC makes it K
        self.signup(self.addr("KNOWN"), 409, "email_taken")
        # Another domain is another address; a different name is fine.
        self.signup("known@other-%s" % self.domain)
        self.signup(self.addr("unknown"))

    def test_invisible_and_control_characters_are_refused(self):
        for bad in ("known\u200b", "kn\u200down", "\ufeffknown", "known\u202e", "kno\u00adwn", "known\u3164",
                    "kn\u0007own", "kn\u0085own", "known\ue000", "kno wn"):
            with self.subTest(local=repr(bad)):
                self.signup(self.addr(bad), 400, "invalid_value")

    def test_attendees_and_freebusy_use_the_rule(self):
        ecole = self.signup(self.addr("\u00e9cole"))
        _, token = self.server.new_user()
        base = {"summary": "x", "start": {"date_time": "2026-11-03T14:00:00Z"},
                "end": {"date_time": "2026-11-03T15:00:00Z"}}
        r = self.server.post("/v1/events", dict(base, attendees=[{"email": self.addr("E\u0301COLE")}]), token=token)
        self.assertEqual(r.status, 201, r)
        self.assertEqual([(a["user_id"], a["email"]) for a in r.json["attendees"]], [(ecole["id"], ecole["email"])])
        r = self.server.post("/v1/events", dict(base, attendees=[{"email": self.addr("\u00e9cole\u200b")}]),
                             token=token)
        self.assertError(r, 400, field="attendees[0].email", code="invalid_value")
        r = self.server.post("/v1/events", dict(base, attendees=[{"email": self.addr("\u00e9c\u043ele")}]),
                             token=token)
        self.assertError(r, 400, field="attendees[0]", code="unknown_user")
        r = self.server.post("/v1/freebusy", {"users": [self.addr("\u00c9COLE")], "from": "2026-11-03T00:00:00Z",
                                              "to": "2026-11-04T00:00:00Z"}, token=token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["users"][self.addr("\u00c9COLE")]["busy"],
                         [{"start": "2026-11-03T14:00:00Z", "end": "2026-11-03T15:00:00Z"}])


if __name__ == "__main__":
    main()
