"""Ids a client sees (issue 25, item 6): an instance id from a listing
(`{event}_{start}`) answers GET /v1/events/{id} for anyone who may see the
event, and inbox notification ids and cursors are opaque (16 hex digits,
no order, no count), not a global counter; the decimal ones of before
still work."""
import time
import urllib.parse

from chime import ServerTest, main
from test_jobs import sql, wait_for
from test_reminders import FAST, iso, soon

NY = "America/New_York"


def timed(local, zone=NY):
    return {"date_time": local, "time_zone": zone}


class TestInstanceIds(ServerTest):
    def setUp(self):
        self.user, self.token = self.server.new_user()
        self.bob, self.bob_token = self.server.new_user()

    def listing(self, token, frm="2026-11-01T00:00:00Z", to="2026-12-01T00:00:00Z"):
        q = urllib.parse.urlencode({"from": frm, "to": to})
        r = self.server.get("/v1/events?" + q, token=token)
        self.assertEqual(r.status, 200, r)
        return r.json["items"]

    def test_instance_ids_from_a_listing_answer_get(self):
        ev = self.server.post("/v1/events", {"summary": "Weekly", "start": timed("2026-11-02T09:00:00"),
                                             "end": timed("2026-11-02T09:30:00"),
                                             "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=4"],
                                             "attendees": [{"email": self.bob["email"]}]}, token=self.token).json
        # Move and retitle the third instance.
        path = "/v1/events/%s/instances/20261116T140000Z" % ev["id"]
        r = self.server.patch(path, {"summary": "Moved", "start": timed("2026-11-16T11:00:00"),
                                     "end": timed("2026-11-16T11:30:00")}, token=self.token)
        self.assertEqual(r.status, 200, r)
        for token in (self.token, self.bob_token):
            items = self.listing(token)
            self.assertEqual(len(items), 4)
            for it in items:
                with self.subTest(id=it["id"]):
                    got = self.server.get("/v1/events/" + it["id"], token=token)
                    self.assertEqual(got.status, 200, got)
                    for k in ("id", "summary", "start", "end", "original_start", "recurring_event_id", "status"):
                        self.assertEqual(got.json[k], it[k], k)
        self.assertEqual(self.server.get("/v1/events/%s_20261116T140000Z" % ev["id"], token=self.token)
                         .json["summary"], "Moved")
        stranger, stoken = self.server.new_user()
        self.assertError(self.server.get("/v1/events/%s_20261109T140000Z" % ev["id"], token=stoken), 404)

    def test_unknown_deleted_and_malformed_instances_are_404(self):
        ev = self.server.post("/v1/events", {"summary": "Daily", "start": timed("2026-11-02T09:00:00"),
                                             "end": timed("2026-11-02T09:30:00"),
                                             "recurrence": ["RRULE:FREQ=DAILY;COUNT=5"]}, token=self.token).json
        r = self.server.delete("/v1/events/%s/instances/20261103T140000Z" % ev["id"], token=self.token)
        self.assertEqual(r.status, 204, r)
        single = self.server.post("/v1/events", {"summary": "Once", "start": timed("2026-11-02T09:00:00"),
                                                 "end": timed("2026-11-02T09:30:00")}, token=self.token).json
        for bad in ("%s_20261103T140000Z" % ev["id"],      # deleted (EXDATE)
                    "%s_20261102T150000Z" % ev["id"],      # not an instance time
                    "%s_20261102" % ev["id"],              # a date for a timed series
                    "%s_2026110" % ev["id"], "%s_" % ev["id"], "%s_x_y" % ev["id"],
                    "%s_20261102T140000Z" % single["id"],  # not a series
                    "ffffffffffffffff_20261102T140000Z"):
            with self.subTest(id=bad):
                self.assertError(self.server.get("/v1/events/" + bad, token=self.token), 404)
        self.assertEqual(self.server.get("/v1/events/%s_20261104T140000Z" % ev["id"], token=self.token).status, 200)

    def test_all_day_instance(self):
        ev = self.server.post("/v1/events", {"summary": "Holiday", "start": {"date": "2026-12-24"},
                                             "end": {"date": "2026-12-25"}, "recurrence": ["RRULE:FREQ=YEARLY"]},
                              token=self.token).json
        r = self.server.get("/v1/events/%s_20271224" % ev["id"], token=self.token)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["start"], {"date": "2027-12-24"})
        self.assertEqual(r.json["recurring_event_id"], ev["id"])


class TestInboxIds(ServerTest):
    server_args = FAST

    def fired(self, token, n):
        """n events with a push reminder due now, until the inbox has n."""
        start = soon()
        for i in range(n):
            r = self.server.post("/v1/events", {"summary": "n%d" % i, "start": {"date_time": iso(start)},
                                                "end": {"date_time": iso(start + 60)},
                                                "reminders": [{"method": "push", "minutes_before": 0}]}, token=token)
            self.assertEqual(r.status, 201, r)
        self.assertTrue(wait_for(lambda: len(self.server.get("/v1/notifications", token=token).json["items"]) == n
                                 or None, timeout=15))

    def test_ids_are_opaque_and_work(self):
        user, token = self.server.new_user()
        other, other_token = self.server.new_user()
        self.fired(token, 3)
        page = self.server.get("/v1/notifications", token=token).json
        ids = [n["id"] for n in page["items"]]
        for i in ids:
            self.assertRegex(i, r"^[0-9a-f]{16}$")
        nums = sorted(int(i, 16) for i in ids)
        self.assertGreater(min(b - a for a, b in zip(nums, nums[1:])), 1000, ids)
        # Another user cannot mark them; the owner can, by the opaque id.
        self.assertError(self.server.post("/v1/notifications/%s/read" % ids[0], token=other_token), 404)
        self.assertEqual(self.server.post("/v1/notifications/%s/read" % ids[0], token=token).status, 204)
        after = self.server.get("/v1/notifications", token=token).json["items"]
        self.assertEqual([n["read"] for n in after], [True, False, False])
        self.assertEqual([n["id"] for n in after], ids, "ids are stable across reads")
        self.assertError(self.server.post("/v1/notifications/%s/read" % ("0" * 16), token=token), 404)
        # A client of before holds decimal seqs: they keep working, for
        # their owner only.
        seq = str(sql(self.server.db, "SELECT max(seq) FROM notifications WHERE user_id = %d" % int(user["id"], 16))[0][0])
        self.assertError(self.server.post("/v1/notifications/%s/read" % seq, token=other_token), 404)
        self.assertEqual(self.server.post("/v1/notifications/%s/read" % seq, token=token).status, 204)
        self.assertTrue(self.server.get("/v1/notifications", token=token).json["items"][2]["read"])

    def test_cursors_are_opaque_and_work(self):
        user, token = self.server.new_user()
        other, other_token = self.server.new_user()
        self.fired(token, 4)
        empty = self.server.get("/v1/notifications", token=other_token).json
        self.assertEqual(empty["items"], [])
        cursors, after = [empty["next"]], ""
        for _ in range(4):
            page = self.server.get("/v1/notifications?limit=1" + ("&after=" + after if after else ""),
                                   token=token).json
            self.assertEqual(len(page["items"]), 1)
            after = page["next"]
            cursors.append(after)
        self.assertEqual(self.server.get("/v1/notifications?after=" + after, token=token).json,
                         {"items": [], "next": after})
        part = r"[0-9a-f]{16}"
        for c in cursors:
            self.assertRegex(c, r"^(%s-)?%s$" % (part, part))
        shown = [int(c.split("-")[-1], 16) for c in cursors[1:]]
        self.assertGreater(min(abs(b - a) for a, b in zip(shown, shown[1:])), 1000, cursors)
        # The cursors of before -- the seq itself in decimal, after the xid
        # on PostgreSQL -- still page.
        pg = not self.server.db.startswith("sqlite:")
        rows = sql(self.server.db, "SELECT %s, seq FROM notifications WHERE user_id = %d ORDER BY %sseq"
                   % ("xid" if pg else "0", int(user["id"], 16), "xid, " if pg else ""))
        self.assertEqual(len(rows), 4)
        self.assertFalse(set(int(r[1]) for r in rows) & set(shown), "a cursor shows a seq")
        first = ("%s-%s" % (rows[0][0], rows[0][1])) if pg else str(rows[0][1])
        rest = self.server.get("/v1/notifications?after=" + first, token=token).json["items"]
        self.assertEqual(len(rest), 3)
        r = self.server.post("/v1/notifications/read", {"up_to": cursors[2]}, token=token)
        self.assertEqual((r.status, r.json), (200, {"marked": 2}))
        r = self.server.post("/v1/notifications/read", {"up_to": first}, token=token)
        self.assertEqual((r.status, r.json), (200, {"marked": 0}))
        self.assertError(self.server.get("/v1/notifications?after=" + "z" * 16, token=token), 400, "after")


if __name__ == "__main__":
    main()
