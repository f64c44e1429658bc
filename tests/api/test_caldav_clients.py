"""vdirsyncer syncing a chime calendar both ways with a local directory
(creates, edits and deletes on each side, then a conflict, refused and
then resolved), and khal reading what vdirsyncer brought down: recurring
series with their deleted and moved instances, as the JSON API lists them.
Real Debian clients as subprocesses, against a real chime."""
import glob
import os
import re
import subprocess
import tempfile

import icalendar

from caldav_util import DavUser, vcal
from chime import TMP, ServerTest, main

STANDUP = vcal(["UID:standup@test", "DTSTAMP:20260101T000000Z", "DTSTART;TZID=Europe/Paris:20261102T090000",
                "DTEND;TZID=Europe/Paris:20261102T091500", "RRULE:FREQ=DAILY;COUNT=10",
                "EXDATE;TZID=Europe/Paris:20261104T090000", "SUMMARY:Standup"],
               ["UID:standup@test", "DTSTAMP:20260101T000000Z", "RECURRENCE-ID;TZID=Europe/Paris:20261105T090000",
                "DTSTART;TZID=Europe/Paris:20261105T100000", "DTEND;TZID=Europe/Paris:20261105T101500",
                "SUMMARY:Standup moved"])


def run(cmd, env=None, check=True, stdin=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env, input=stdin)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d:\n%s\n%s" % (cmd, p.returncode, p.stdout, p.stderr))
    return p


class VdirsyncerKhalTest(ServerTest):
    def setUp(self):
        self.ada = DavUser(self.server, name="Ada")
        self.cal_id, self.path = self.ada.calendar("Sync", "Europe/Paris")
        self.dir = tempfile.mkdtemp(prefix="vdir-", dir=TMP)
        self.local = os.path.join(self.dir, "local", "sync")
        os.makedirs(self.local)
        os.makedirs(os.path.join(self.dir, "status"))
        self.env = dict(os.environ, HOME=self.dir, XDG_DATA_HOME=self.dir, XDG_CACHE_HOME=self.dir,
                        XDG_CONFIG_HOME=self.dir)

    def configure(self, conflict="null"):
        with open(os.path.join(self.dir, "vdirsyncer.conf"), "w") as f:
            f.write("""[general]
status_path = "%(dir)s/status/"

[pair chime]
a = "local"
b = "remote"
collections = [["sync", "sync", "%(cal)s"]]
conflict_resolution = %(conflict)s

[storage local]
type = "filesystem"
path = "%(dir)s/local/"
fileext = ".ics"

[storage remote]
type = "caldav"
url = "%(url)s"
username = "%(user)s"
password = "%(pw)s"
""" % {"dir": self.dir, "cal": self.cal_id, "conflict": conflict, "url": self.ada.base_url(),
       "user": self.ada.email, "pw": self.ada.password})

    def sync(self, check=True):
        conf = os.path.join(self.dir, "vdirsyncer.conf")
        run(["vdirsyncer", "-c", conf, "discover"], env=self.env, stdin="y\n" * 4)
        return run(["vdirsyncer", "-c", conf, "sync"], env=self.env, check=check)

    def local_files(self):
        """{UID: (path, text)} of the local vdir."""
        out = {}
        for path in glob.glob(os.path.join(self.local, "*.ics")):
            with open(path) as f:
                text = f.read()
            uid = str([c for c in icalendar.Calendar.from_ical(text).walk() if c.name == "VEVENT"][0]["UID"])
            out[uid] = (path, text)
        return out

    def json_events(self):
        """{ical_uid: (id, summary)} of the calendar's series (JSON API)."""
        r = self.server.get("/v1/events?from=2026-01-01T00:00:00Z&to=2028-01-01T00:00:00Z&max_results=2500&"
                            "calendar_id=" + self.cal_id, token=self.ada.token)
        self.assertEqual(r.status, 200, r)
        out = {}
        for i in r.json["items"]:
            out.setdefault(i["ical_uid"], (i.get("recurring_event_id") or i["id"], i["summary"]))
        return out

    def edit_local(self, uid, old, new):
        path, text = self.local_files()[uid]
        self.assertIn(old, text)
        with open(path, "w") as f:
            f.write(text.replace(old, new))

    def json_event(self, summary, start, end):
        r = self.server.post("/v1/events", {"calendar_id": self.cal_id, "summary": summary,
                                            "start": {"date_time": start, "time_zone": "Europe/Paris"},
                                            "end": {"date_time": end, "time_zone": "Europe/Paris"}},
                             token=self.ada.token)
        self.assertEqual(r.status, 201, r)
        return r.json

    def test_sync_both_ways_with_a_conflict_then_khal(self):
        self.assertEqual(self.ada.put(self.path + "standup.ics", STANDUP).status, 201)
        review = self.json_event("Review", "2026-11-03T14:00:00", "2026-11-03T15:00:00")
        self.configure()
        self.sync()
        self.assertEqual(set(self.local_files()), {"standup@test", review["ical_uid"]})
        # Made, edited and deleted on the local side.
        with open(os.path.join(self.local, "local-1.ics"), "w") as f:
            f.write(vcal(["UID:local-1", "DTSTAMP:20260101T000000Z", "DTSTART:20261106T120000Z",
                          "DTEND:20261106T130000Z", "SUMMARY:Lunch"]))
        self.edit_local("standup@test", "SUMMARY:Standup\n", "SUMMARY:Daily standup\n")
        self.sync()
        self.sync()  # settles: chime's rendering of what was uploaded comes back down
        events = self.json_events()
        self.assertEqual(events["local-1"][1], "Lunch")
        self.assertEqual(events["standup@test"][1], "Daily standup")
        os.unlink(self.local_files()["local-1"][0])
        self.sync()
        self.assertNotIn("local-1", self.json_events())
        # Made, edited and deleted on chime's side (the JSON API).
        later = self.json_event("Retro", "2026-11-06T16:00:00", "2026-11-06T17:00:00")
        self.assertEqual(self.server.patch("/v1/events/" + review["id"], {"summary": "Review (room 2)"},
                                           token=self.ada.token).status, 200)
        self.sync()
        files = self.local_files()
        self.assertIn(later["ical_uid"], files)
        self.assertIn("SUMMARY:Review (room 2)", files[review["ical_uid"]][1])
        self.assertEqual(self.server.delete("/v1/events/" + later["id"], token=self.ada.token).status, 204)
        self.sync()
        self.assertNotIn(later["ical_uid"], self.local_files())
        # Both sides change the same event: refused, nothing lost ...
        self.edit_local(review["ical_uid"], "SUMMARY:Review (room 2)", "SUMMARY:Review (local)")
        self.assertEqual(self.server.patch("/v1/events/" + review["id"], {"summary": "Review (server)"},
                                           token=self.ada.token).status, 200)
        p = self.sync(check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertRegex(p.stdout + p.stderr, re.compile("conflict", re.I))
        self.assertIn("SUMMARY:Review (local)", self.local_files()[review["ical_uid"]][1])
        self.assertEqual(self.json_events()[review["ical_uid"]][1], "Review (server)")
        # ... then resolved in the local side's favour.
        self.configure(conflict='"a wins"')
        self.sync()
        self.assertEqual(self.json_events()[review["ical_uid"]][1], "Review (local)")
        self.khal_reads_it()

    def khal_reads_it(self):
        conf = os.path.join(self.dir, "khal.conf")
        with open(conf, "w") as f:
            f.write("""[calendars]
[[sync]]
path = %s
type = calendar

[locale]
timeformat = %%H:%%M
dateformat = %%Y-%%m-%%d
longdateformat = %%Y-%%m-%%d
datetimeformat = %%Y-%%m-%%d %%H:%%M
longdatetimeformat = %%Y-%%m-%%d %%H:%%M
local_timezone = Europe/Paris
default_timezone = Europe/Paris

[default]
default_calendar = sync
""" % self.local)
        p = run(["khal", "-c", conf, "list", "--format", "{start} {end} {title}", "--day-format", "",
                 "2026-11-02", "2026-11-06"], env=self.env)  # khal: both days included
        lines = [line for line in p.stdout.splitlines() if line.strip()]
        self.assertEqual(lines, ["2026-11-02 09:00 2026-11-02 09:15 Daily standup",
                                 "2026-11-03 09:00 2026-11-03 09:15 Daily standup",
                                 "2026-11-03 14:00 2026-11-03 15:00 Review (local)",
                                 "2026-11-05 10:00 2026-11-05 10:15 Standup moved",
                                 "2026-11-06 09:00 2026-11-06 09:15 Daily standup"])


if __name__ == "__main__":
    main()
