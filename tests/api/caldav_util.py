"""Helpers the CalDAV tests share: a user with an app password, raw DAV
requests with HTTP Basic, and multistatus answers read into dicts."""
import base64
import urllib.parse
from xml.etree import ElementTree as ET

NS = {"D": "DAV:", "C": "urn:ietf:params:xml:ns:caldav", "CS": "http://calendarserver.org/ns/",
      "A": "http://apple.com/ns/ical/"}
D = "{DAV:}"
C = "{urn:ietf:params:xml:ns:caldav}"


def basic(email, password):
    return "Basic " + base64.b64encode(("%s:%s" % (email, password)).encode()).decode()


class DavUser:
    """A signed-up user with a bearer token (JSON API) and an app password
    (CalDAV)."""

    def __init__(self, server, email=None, name="Dav User"):
        self.server = server
        self.user, self.token = server.new_user(email=email, name=name)
        r = server.post("/v1/me/app-passwords", {"label": "tests"}, token=self.token)
        assert r.status == 201, r
        self.password = r.json["password"]
        self.email = self.user["email"]
        self.id = self.user["id"]
        self.auth = basic(self.email, self.password)
        self.principal = "/dav/principals/%s/" % self.id
        self.home = "/dav/calendars/%s/" % self.id

    def base_url(self):
        return "http://127.0.0.1:%d/" % self.server.port

    def client(self):
        import caldav
        return caldav.DAVClient(url=self.base_url(), username=self.email, password=self.password)

    def dav(self, method, path, body=None, depth=None, headers=None, auth=None):
        h = {"Authorization": auth or self.auth}
        if depth is not None:
            h["Depth"] = str(depth)
        if body is not None and "Content-Type" not in (headers or {}):
            h["Content-Type"] = "application/xml; charset=utf-8"
        h.update(headers or {})
        data = body.encode() if isinstance(body, str) else body
        return self.server.request(method, path, raw=data, headers=h)

    def calendar(self, summary="Work", zone="UTC"):
        """A new calendar (JSON API): its id and its collection path."""
        r = self.server.post("/v1/calendars", {"summary": summary, "time_zone": zone}, token=self.token)
        assert r.status == 201, r
        return r.json["id"], self.home + r.json["id"] + "/"

    def put(self, path, ics, headers=None):
        h = {"Content-Type": "text/calendar; charset=utf-8"}
        h.update(headers or {})
        return self.dav("PUT", path, ics, headers=h)

    def instances(self, cal_id, start="2026-01-01T00:00:00Z", end="2028-01-01T00:00:00Z"):
        """Every instance the JSON API lists in a window, as tuples."""
        out, page = [], None
        while True:
            q = {"from": start, "to": end, "calendar_id": cal_id, "max_results": 2500}
            if page:
                q["page_token"] = page
            r = self.server.get("/v1/events?" + urllib.parse.urlencode(q), token=self.token)
            assert r.status == 200, r
            for i in r.json["items"]:
                out.append((i["ical_uid"], i["summary"], i["start"].get("date_time") or i["start"]["date"],
                            i["end"].get("date_time") or i["end"]["date"], i["status"]))
            page = r.json["next_page_token"]
            if not page:
                return sorted(out)


def multistatus(resp):
    """{href: {"status": int or None, "props": {tag: element}, "missing": set of tags}}"""
    assert resp.status == 207, resp
    root = ET.fromstring(resp.body.encode())
    out = {}
    for r in root.findall(D + "response"):
        href = urllib.parse.unquote(r.find(D + "href").text)
        entry = {"status": None, "props": {}, "missing": set()}
        st = r.find(D + "status")
        if st is not None:
            entry["status"] = int(st.text.split()[1])
        for ps in r.findall(D + "propstat"):
            code = int(ps.find(D + "status").text.split()[1])
            for p in ps.find(D + "prop"):
                if code == 200:
                    entry["props"][p.tag] = p
                else:
                    entry["missing"].add(p.tag)
        out[href] = entry
    return out


def sync_token_of(resp):
    root = ET.fromstring(resp.body.encode())
    return root.find(D + "sync-token").text


def dav_error(resp):
    """The precondition elements of a DAV:error body (local names)."""
    root = ET.fromstring(resp.body.encode())
    assert root.tag == D + "error", resp
    return {el.tag.split("}")[1] for el in root}


def vcal(*events, tz=None):
    """A VCALENDAR text from VEVENT bodies (lists of content lines)."""
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//chime tests//EN"]
    if tz:
        lines += tz
    for ev in events:
        lines += ["BEGIN:VEVENT"] + list(ev) + ["END:VEVENT"]
    lines.append("END:VCALENDAR")
    return "\r\n".join(lines) + "\r\n"


def propfind(props, ns='xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav" '
                      'xmlns:CS="http://calendarserver.org/ns/" xmlns:A="http://apple.com/ns/ical/"'):
    return '<?xml version="1.0" encoding="utf-8"?><D:propfind %s><D:prop>%s</D:prop></D:propfind>' % (
        ns, "".join("<%s/>" % p for p in props))


def sync_body(token="", props=("D:getetag",), limit=None):
    lim = "<D:limit><D:nresults>%d</D:nresults></D:limit>" % limit if limit else ""
    return ('<D:sync-collection xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:sync-token>%s'
            '</D:sync-token><D:sync-level>1</D:sync-level>%s<D:prop>%s</D:prop></D:sync-collection>'
            % (token, lim, "".join("<%s/>" % p for p in props)))
