"""Request framing and oversized bodies, over raw sockets and real clients
(issues 24.5 and 25.2).

Framing is decided before any handler runs: two different Content-Length
values are a 400 and the connection closes (else the rest of the body
would be read as a second request: smuggling behind a proxy that reads
the other length); Content-Length with Transfer-Encoding is processed as
chunked and then the connection closes; a Transfer-Encoding other than
one "chunked" is a 400. The server does not announce h2o's version.

A body announced larger than --max-body gets the 413 JSON error at once,
and the server keeps reading and discarding what the client still sends
(bounded) before it closes, so curl, Python and browsers -- which send
the whole body before they read -- receive the 413 instead of a reset."""
import http.client
import json
import re
import socket
import subprocess
import time

import requests

from chime import ServerTest, main

TEN_MB = 10 * 1024 * 1024


def read_all(sock, timeout=10):
    """Everything the server sends until it closes (or the timeout)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data, True
            data += chunk
    except socket.timeout:
        return data, False


def responses(data):
    """The statuses of the HTTP responses in data, in order (a response may
    follow the previous body on the same line)."""
    return re.findall(rb"HTTP/1\.[01] (\d{3}) ", data)


def head_and_body(data):
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    return head, rest[:length]


class TestFraming(ServerTest):
    def raw(self, request, timeout=10):
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=timeout)
        sock.sendall(request)
        data, closed = read_all(sock, timeout)
        sock.close()
        return data, closed

    def assertFramingError(self, data, closed, field):
        head, body = head_and_body(data)
        self.assertTrue(head.startswith(b"HTTP/1.1 400"), data[:300])
        self.assertIn(b"application/json", head.lower())
        self.assertIn(b"connection: close", head.lower())
        err = json.loads(body)["error"]
        self.assertEqual(err["code"], "bad_request", err)
        self.assertEqual(err["field"], field, err)
        self.assertEqual(len(responses(data)), 1, data)  # nothing smuggled through
        self.assertTrue(closed, "the connection stayed open")

    def test_conflicting_content_lengths(self):
        smuggled = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        # The first length is the shorter: the rest would be a second request.
        data, closed = self.raw(b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                b"Content-Length: 2\r\nContent-Length: 36\r\n\r\n{}" + smuggled)
        self.assertFramingError(data, closed, "Content-Length")
        # The first is the longer (and all of it is sent).
        rest = b"{}" + smuggled
        data, closed = self.raw(b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                b"Content-Length: %d\r\nContent-Length: 2\r\n\r\n" % len(rest) + rest)
        self.assertFramingError(data, closed, "Content-Length")
        # One header listing two values is as bad.
        data, closed = self.raw(b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 3\r\n\r\n{}x")
        self.assertEqual(responses(data)[:1], [b"400"], data)
        self.assertTrue(closed)

    def test_folded_header_line(self):
        # RFC 9112 5.2: obs-fold is refused, not read as a nameless header.
        data, closed = self.raw(b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                b"Content-Length: 2\r\n Content-Length: 3\r\n\r\n{}")
        self.assertFramingError(data, closed, "headers")

    def test_repeated_equal_content_length_is_one_length(self):
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n"
                     b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data, closed = read_all(sock)
        sock.close()
        self.assertEqual(responses(data), [b"200", b"200"], data)

    def test_length_and_chunked_is_chunked_then_close(self):
        body = b'{"email":"nope"}'
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        smuggled = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        data, closed = self.raw(b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked + smuggled)
        head, got = head_and_body(data)
        # Read as chunked: the handler saw the whole JSON body (and named
        # the missing field), not the first four bytes of the chunk framing.
        self.assertTrue(head.startswith(b"HTTP/1.1 400"), data[:300])
        self.assertEqual(json.loads(got)["error"]["field"], "name", got)
        self.assertIn(b"connection: close", head.lower())
        self.assertEqual(len(responses(data)), 1, data)
        self.assertTrue(closed)

    def test_invalid_transfer_encoding(self):
        for te in (b"Transfer-Encoding: gzip, chunked\r\n", b"Transfer-Encoding: chunked, chunked\r\n",
                   b"Transfer-Encoding: identity\r\n",
                   b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
                   b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"):
            data, closed = self.raw(b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                    + te + b"\r\n2\r\n{}\r\n0\r\n\r\n")
            self.assertFramingError(data, closed, "Transfer-Encoding")

    def test_plain_chunked_still_works_and_keeps_alive(self):
        body = b'{"email":"nope"}'
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        sock.sendall(b"POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
                     + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data, closed = read_all(sock)
        sock.close()
        self.assertEqual(responses(data), [b"400", b"200"], data)

    def test_server_header_does_not_name_h2o(self):
        r = self.server.get("/healthz")
        self.assertNotIn("h2o", (r.header("server") or "").lower())
        data, _ = self.raw(b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        self.assertNotIn(b"h2o", data.lower())
        # h2o's own answers (a broken request line) say nothing either.
        data, _ = self.raw(b"NOT HTTP AT ALL\r\n\r\n")
        self.assertNotIn(b"h2o", data.lower())


class TestOversizedBody(ServerTest):
    """--max-body is 1m by default; the bodies here are 10 MB."""

    def setUp(self):
        self.user, self.token = self.server.new_user()
        cal = self.server.get("/v1/calendars", token=self.token).json["items"][0]["id"]
        self.path = "/v1/calendars/%s/import" % cal
        self.ics = (b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\n" + b"X-PAD:" + b"x" * 70 + b"\r\n") * (TEN_MB // 100)

    def assert413(self, status, body):
        self.assertEqual(status, 413, body[:300])
        err = json.loads(body)["error"]
        self.assertEqual(err["code"], "body_too_large")
        self.assertEqual(err["field"], "body")

    def test_python_http_client_gets_the_413(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        conn.request("POST", self.path, body=self.ics, headers={
            "Content-Type": "text/calendar", "Authorization": "Bearer " + self.token})
        r = conn.getresponse()
        self.assert413(r.status, r.read())
        conn.close()

    def test_python_requests_gets_the_413(self):
        r = requests.post("http://127.0.0.1:%d%s" % (self.server.port, self.path), data=self.ics, timeout=30,
                          headers={"Content-Type": "text/calendar", "Authorization": "Bearer " + self.token})
        self.assert413(r.status_code, r.content)

    def test_curl_gets_the_413(self):
        p = subprocess.run(["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "-X", "POST",
                            "-H", "Content-Type: text/calendar", "-H", "Authorization: Bearer " + self.token,
                            "--data-binary", "@-", "http://127.0.0.1:%d%s" % (self.server.port, self.path)],
                           input=self.ics, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        body, _, code = p.stdout.rpartition(b"\n")
        self.assert413(int(code), body)

    def test_raw_socket_sending_everything_then_reading(self):
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
        sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: text/calendar\r\n"
                     b"Authorization: Bearer %s\r\nContent-Length: %d\r\n\r\n"
                     % (self.path.encode(), self.token.encode(), len(self.ics)))
        sock.sendall(self.ics)  # a reset would raise here
        data, closed = read_all(sock)
        sock.close()
        head, body = head_and_body(data)
        self.assertTrue(head.startswith(b"HTTP/1.1 413"), data[:300])
        self.assertIn(b"connection: close", head.lower())
        self.assert413(413, body)
        self.assertTrue(closed)

    def test_discarding_is_bounded(self):
        # A client that never stops sending is cut off: by bytes (64 MiB)
        # or time (10 s), whichever comes first; the server stays healthy.
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
        sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\n" % self.path.encode())
        block = b"x" * 65536
        sent, t0, cut = 0, time.time(), False
        try:
            while time.time() - t0 < 25:
                sock.sendall(block)
                sent += len(block)
        except OSError:
            cut = True
        elapsed = time.time() - t0
        sock.close()
        self.assertTrue(cut, "still accepting after %d bytes and %.1f s" % (sent, elapsed))
        self.assertLess(sent, 80 * 1024 * 1024)
        self.assertLess(elapsed, 15)
        self.assertEqual(self.server.get("/healthz").status, 200)


if __name__ == "__main__":
    main()
