"""bench/chat seeding, through each server's own API (run by run.sh).

  seed.py chime URL N DIR [--pairs P] [--group G]
      signs up N users (POST /v1/users, then POST /v1/sessions for a token),
      makes the P direct conversations (user 2p with 2p+1) and one group of
      G members (user 0, its admin, and users 1..G-1).
      Writes DIR/chime_users.txt ("idx id token"), DIR/chime_convs.txt (one
      conversation id a line, pair order), DIR/chime_group.txt (the id).
  seed.py xmpp URL N DIR
      registers u0..u{N-1}@localhost through ejabberd's mod_http_api
      (POST URL/register); writes DIR/xmpp_users.txt ("idx name password").
"""
import argparse
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse


class Client:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.host, self.port, self.base = u.hostname, u.port, u.path.rstrip("/")
        self.c = None

    def req(self, method, path, body=None, token=None):
        for attempt in range(5):
            try:
                if self.c is None:
                    self.c = http.client.HTTPConnection(self.host, self.port, timeout=120)
                h = {"Content-Type": "application/json"}
                if token:
                    h["Authorization"] = "Bearer " + token
                self.c.request(method, self.base + path, body=json.dumps(body) if body is not None else None, headers=h)
                r = self.c.getresponse()
                data = r.read()
                if r.status == 503 or r.status == 429:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                return r.status, (json.loads(data) if data else None)
            except (ConnectionError, http.client.HTTPException, OSError):
                self.c = None
                time.sleep(0.2)
        raise RuntimeError("%s %s failed 5 times" % (method, path))


def parallel(n, threads, fn):
    """fn(client_index, i) for i in range(n), spread over threads."""
    errors = []

    def work(t):
        try:
            for i in range(t, n, threads):
                fn(t, i)
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def seed_chime(url, n, out, pairs, group, threads):
    clients = [Client(url) for _ in range(threads)]
    users = [None] * n
    t0 = time.time()

    def signup(t, i):
        c = clients[t]
        email = "u%d@bench.test" % i
        st, b = c.req("POST", "/v1/users", {"email": email, "name": "u%d" % i, "password": "pw-bench-%d" % i})
        if st not in (201, 409):
            raise RuntimeError("sign-up %d: %s %s" % (i, st, b))
        st, b = c.req("POST", "/v1/sessions", {"email": email, "password": "pw-bench-%d" % i})
        if st != 201:
            raise RuntimeError("sign-in %d: %s %s" % (i, st, b))
        users[i] = (b["user"]["id"], b["token"])
        if i and i % 2000 == 0:
            print("  %d users signed up (%.0f s)" % (i, time.time() - t0), file=sys.stderr, flush=True)

    parallel(n, threads, signup)
    print("chime: %d users signed up and signed in in %.1f s" % (n, time.time() - t0), file=sys.stderr, flush=True)
    with open(os.path.join(out, "chime_users.txt"), "w") as f:
        for i, (uid, tok) in enumerate(users):
            f.write("%d %s %s\n" % (i, uid, tok))
    convs = [None] * pairs
    t0 = time.time()

    def direct(t, p):
        st, b = clients[t].req("POST", "/v1/conversations", {"type": "direct", "user": users[2 * p + 1][0]},
                               token=users[2 * p][1])
        if st not in (200, 201):
            raise RuntimeError("direct %d: %s %s" % (p, st, b))
        convs[p] = b["id"]

    parallel(pairs, threads, direct)
    with open(os.path.join(out, "chime_convs.txt"), "w") as f:
        f.write("".join(c + "\n" for c in convs))
    st, b = clients[0].req("POST", "/v1/conversations",
                           {"type": "group", "title": "bench", "members": [users[i][0] for i in range(1, group)]},
                           token=users[0][1])
    if st != 201:
        raise RuntimeError("group: %s %s" % (st, b))
    with open(os.path.join(out, "chime_group.txt"), "w") as f:
        f.write(b["id"] + "\n")
    print("chime: %d direct conversations and a group of %d in %.1f s" % (pairs, len(b["members"]), time.time() - t0),
          file=sys.stderr, flush=True)


def seed_xmpp(url, n, out, threads):
    clients = [Client(url) for _ in range(threads)]
    t0 = time.time()

    def register(t, i):
        st, b = clients[t].req("POST", "/register", {"user": "u%d" % i, "host": "localhost", "password": "pw%d" % i})
        if st != 200 and not (st == 409 or (isinstance(b, dict) and "already" in json.dumps(b))):
            raise RuntimeError("register %d: %s %s" % (i, st, b))

    parallel(n, threads, register)
    with open(os.path.join(out, "xmpp_users.txt"), "w") as f:
        for i in range(n):
            f.write("%d u%d pw%d\n" % (i, i, i))
    print("ejabberd: %d users registered in %.1f s" % (n, time.time() - t0), file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server", choices=["chime", "xmpp"])
    ap.add_argument("url")
    ap.add_argument("n", type=int)
    ap.add_argument("dir")
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--group", type=int, default=500)
    ap.add_argument("--threads", type=int, default=8)
    a = ap.parse_args()
    if a.server == "chime":
        seed_chime(a.url, a.n, a.dir, a.pairs, a.group, a.threads)
    else:
        seed_xmpp(a.url, a.n, a.dir, a.threads)


if __name__ == "__main__":
    main()
