"""Crash safety of reminders. 10,050 in-app reminders (50 events, each with
its organizer and 200 attendees) fall due over ten seconds while the test
SIGKILLs the server at random points and restarts it at once. Afterwards
every reminder has been delivered, the inbox holds each exactly once
(duplicates may only ever be redeliveries of the same delivery id, which
the inbox's unique key absorbs), and nothing is left pending.

On PostgreSQL, three nodes share the database; the shards' lease groups are
spread over all three; one node is SIGKILLed just before a batch falls due,
its groups move to the two survivors and everything is still delivered."""
import datetime
import random
import signal
import time
import unittest

from chime import BACKEND, NodesTest
from test_jobs import sql, wait_for
from test_jobs_cluster import node_id

ARGS = ["--reminder-window", "1000", "--lease-heartbeat", "0.5", "--lease-ttl", "2", "--access-log", "off",
        "--threads", "1"]
EVENTS, ATTENDEES = 50, 200


def iso(t):
    return datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def one(db, query):
    return int(sql(db, query)[0][0])


class CrashTest(NodesTest):
    node_args = ARGS

    def populate(self, s, events, first_due, spread):
        """events events, each for an organizer and ATTENDEES attendees,
        due at first_due + (i % spread) seconds. Returns the reminder count."""
        org, token = s.new_user()
        emails = [s.signup()["email"] for _ in range(ATTENDEES)]
        for i in range(events):
            start = first_due + (i % spread)
            r = s.post("/v1/events", {"summary": "crash %d" % i, "start": {"date_time": iso(start)},
                                      "end": {"date_time": iso(start + 60)},
                                      "attendees": [{"email": e} for e in emails],
                                      "reminders": [{"method": "push", "minutes_before": 0}]}, token=token)
            self.assertEqual(r.status, 201, r)
        self.assertLess(time.time(), first_due - 1, "setup took too long for the chosen due time")
        return events * (ATTENDEES + 1)

    def assert_all_delivered_once(self, total, timeout=90):
        done = wait_for(lambda: one(self.db, "SELECT count(*) FROM notifications") >= total, timeout=timeout,
                        step=0.5)
        counts = sql(self.db, "SELECT state, count(*) FROM deliveries GROUP BY state")
        self.assertTrue(done, "delivered %d of %d; deliveries by state: %s; leases: %s\n%s" % (
            one(self.db, "SELECT count(*) FROM notifications"), total, counts,
            sql(self.db, "SELECT owner, count(*) FROM leases GROUP BY owner"),
            "\n".join("--- server %d log:\n%s" % (i, s.log()[-2500:]) for i, s in enumerate(self.servers))))
        self.assertEqual(one(self.db, "SELECT count(*) FROM notifications"), total)
        self.assertEqual(one(self.db, "SELECT count(DISTINCT delivery_id) FROM notifications"), total)
        self.assertEqual(one(self.db, "SELECT count(*) FROM deliveries"), total)
        self.assertEqual(one(self.db, "SELECT count(*) FROM deliveries WHERE state <> 'done'"), 0, counts)
        self.assertEqual(one(self.db, "SELECT count(*) FROM reminders WHERE next_fire_ms IS NOT NULL"), 0)
        # One notification per (event, recipient): none lost, none doubled.
        self.assertEqual(one(self.db, "SELECT count(*) FROM (SELECT event_id, user_id FROM notifications "
                                      "GROUP BY event_id, user_id) x"), total)
        late = sql(self.db, "SELECT fired_ms - due_ms FROM notifications ORDER BY 1")
        lat = [int(x[0]) for x in late]
        print("lateness ms: median %d, p99 %d, max %d" % (lat[len(lat) // 2], lat[len(lat) * 99 // 100], lat[-1]))

    def test_sigkill_while_due(self):
        s = self.start()
        first_due = int(time.time()) + 45
        total = self.populate(s, EVENTS, first_due, 10)
        rng = random.Random()
        kills = 0
        while time.time() < first_due + 12:
            time.sleep(rng.uniform(0.3, 2.5))
            s.stop(signal.SIGKILL)
            kills += 1
            s = self.start()
        print("killed %d times" % kills)
        self.assert_all_delivered_once(total)
        self.assertEqual(s.stop(), 0)

    @unittest.skipUnless(BACKEND == "pg", "three nodes need PostgreSQL")
    def test_three_nodes_one_killed(self):
        nodes = [self.start() for _ in range(3)]

        def owners():
            return {r[0] for r in sql(self.db, "SELECT owner FROM leases WHERE name LIKE 'reminders/%' "
                                               "AND owner IS NOT NULL")}
        spread = wait_for(lambda: len(owners()) == 3 and owners(), timeout=15)
        self.assertTrue(spread, "lease groups not spread over three nodes: %s" % owners())
        first_due = int(time.time()) + 40
        total = self.populate(nodes[0], 15, first_due, 5)
        victim = nodes[1]
        vid = node_id(victim)
        held = "SELECT count(*) FROM leases WHERE name LIKE 'reminders/%%' AND owner = '%s'" % vid
        self.assertGreater(one(self.db, held), 0)
        time.sleep(max(0, first_due - 0.5 - time.time()))  # claims of the first second are in its heap
        victim.stop(signal.SIGKILL)
        self.assert_all_delivered_once(total)
        self.assertEqual(one(self.db, held), 0)  # its groups moved
        self.assertEqual(len(owners()), 2)
        self.assertEqual(one(self.db, "SELECT count(*) FROM leases WHERE name LIKE 'reminders/%' "
                                      "AND owner IS NULL"), 0)
        for n in (nodes[0], nodes[2]):
            self.assertEqual(n.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
