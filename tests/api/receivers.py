"""Real receivers for outbound-delivery tests, on loopback: an HTTP server
that records every request, and an SMTP server that records every message.

HTTP behaviour is chosen by the request path, so one receiver serves every
case without a control channel:
    /ok                 200
    /status/NNN         answers NNN
    /fail/N/KEY         the first N requests for KEY get 500, later ones 200
    /slow/MS            waits MS milliseconds, then 200
    /redirect           302 to /ok on the same receiver
and, for the webhook client's framing and connection handling:
    /chunked            200 with a chunked body
    /close              200 with "Connection: close", then closes
    /http10             an HTTP/1.0 200 with no length: the close ends it
    /continue           a 100 Continue, then the 200
    /garbage            an answer that is not HTTP
    /bigheaders         200 with 20 KB of headers
    /hangup             200, then closes without saying so (a keep-alive
                        the server ends at once)
    /drop-once/KEY      the first request for KEY: the connection closes
                        without an answer; later ones 200
Each request is recorded (method, path, headers with lower-case names, body,
client port, arrival time "t") before it is answered. The SMTP receiver refuses recipients
whose address starts with "reject" (550).

As a program (used by the C unit tests):
    receivers.py LOGDIR
prints "http PORT smtp PORT https PORT https-other PORT" on one line (the
HTTPS receivers serve tests/data/tls/server.pem, for localhost and
127.0.0.1, and other.pem, for example.org only), appends every HTTP request to
LOGDIR/http.jsonl and every email to LOGDIR/smtp.jsonl (one JSON object a
line, written before the answer goes out), and runs until killed or until
its standard input closes."""
import json
import os
import socket
import ssl
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Log:
    def __init__(self, path=None):
        self.items = []
        self.path = path
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)

    def add(self, item):
        with self.cond:
            self.items.append(item)
            if self.path:
                with open(self.path, "a") as f:
                    f.write(json.dumps(item) + "\n")
            self.cond.notify_all()

    def wait(self, n, timeout=10):
        """Waits until at least n items are recorded; returns the items."""
        deadline = time.time() + timeout
        with self.cond:
            while len(self.items) < n and time.time() < deadline:
                self.cond.wait(deadline - time.time())
            return list(self.items)


class _HttpHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse shows

    def log_message(self, fmt, *args):
        pass

    def _answer(self, status, headers=()):
        body = b'{"ok":true}' if 200 <= status < 300 else b'{"ok":false}'
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        rec = self.server.receiver
        rec.log.add({"method": self.command, "path": self.path, "t": time.time(),
                     "headers": {k.lower(): v for k, v in self.headers.items()},
                     "body": body.decode("utf-8", "replace"), "client_port": self.client_address[1]})
        parts = self.path.strip("/").split("/")
        if parts[0] == "status" and len(parts) == 2:
            self._answer(int(parts[1]))
        elif parts[0] == "fail" and len(parts) == 3:
            with rec.lock:
                seen = rec.fail_counts.get(parts[2], 0)
                rec.fail_counts[parts[2]] = seen + 1
            self._answer(500 if seen < int(parts[1]) else 200)
        elif parts[0] == "slow" and len(parts) == 2:
            time.sleep(int(parts[1]) / 1000.0)
            self._answer(200)
        elif parts[0] == "redirect":
            self._answer(302, [("Location", "/ok")])
        elif parts[0] in _RAW:
            self._raw(parts[0])
        elif parts[0] == "close":
            self._answer(200, [("Connection", "close")])
            self.close_connection = True
        elif parts[0] == "hangup":
            self._answer(200)
            self.close_connection = True
        elif parts[0] == "drop-once" and len(parts) == 2:
            with rec.lock:
                seen = rec.fail_counts.get("drop/" + parts[1], 0)
                rec.fail_counts["drop/" + parts[1]] = seen + 1
            if seen == 0:
                self.close_connection = True  # no answer at all
            else:
                self._answer(200)
        else:
            self._answer(200)

    def _raw(self, kind):
        self.wfile.write(_RAW[kind])
        self.wfile.flush()
        if kind in ("http10", "garbage"):
            self.close_connection = True

    do_GET = do_POST
    do_PUT = do_POST


_RAW = {
    "chunked": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: yes\r\n\r\n",
    "http10": b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nno length: the close ends me",
    "continue": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "garbage": b"SMTP READY, NOT HTTP\r\n\r\n",
    "bigheaders": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 2000) for i in range(10))
                  + b"Content-Length: 0\r\n\r\n",
}


def _quiet_errors(server, request, client_address):
    """A client that hung up (a timeout) or refused our certificate is part
    of the tests, not a receiver failure: no traceback for those."""
    err = sys.exc_info()[1]
    if not isinstance(err, (BrokenPipeError, ConnectionResetError, ssl.SSLError)):
        ThreadingHTTPServer.handle_error(server, request, client_address)


class HttpReceiver:
    def __init__(self, log_path=None, host="127.0.0.1", tls=None):
        self.log = _Log(log_path)
        self.lock = threading.Lock()
        self.fail_counts = {}
        # A listen backlog like a real server's: socketserver's default of 5
        # drops connects when many sends open connections at once, and a
        # dropped SYN is retried only after a second.
        cls = type("Server", (ThreadingHTTPServer,), {"request_queue_size": 128, "handle_error": _quiet_errors})
        if ":" in host:
            cls = type("V6Server", (cls,), {"address_family": socket.AF_INET6})
        self.httpd = cls((host, 0), _HttpHandler)
        if tls:
            tls_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "tls")
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(os.path.join(tls_dir, tls + ".pem"), os.path.join(tls_dir, tls + ".key"))
            # The handshake happens in the request's own thread, not in accept.
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True, do_handshake_on_connect=False)
        self.httpd.daemon_threads = True
        self.httpd.receiver = self
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def requests(self):
        return self.log.wait(0, 0)


class _SmtpHandler(socketserver.StreamRequestHandler):
    """Just enough SMTP (RFC 5321) for a client that sends well-formed
    commands: EHLO/HELO, MAIL, RCPT, DATA with dot-unstuffing, RSET, NOOP,
    QUIT."""

    def _say(self, line):
        self.wfile.write(line.encode() + b"\r\n")
        self.wfile.flush()

    def handle(self):
        self._say("220 receivers.py ESMTP ready")
        mail_from, rcpts = None, []
        while True:
            raw = self.rfile.readline(8192)
            if not raw:
                return
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            verb = line[:4].upper()
            if verb == "EHLO":
                self._say("250-receivers.py")
                self._say("250-8BITMIME")
                self._say("250 SIZE 10485760")
            elif verb == "HELO":
                self._say("250 receivers.py")
            elif verb == "MAIL":
                mail_from, rcpts = line.split(":", 1)[1].strip().split(" ")[0], []
                self._say("250 OK")
            elif verb == "RCPT":
                addr = line.split(":", 1)[1].strip()
                if addr.startswith("<reject"):
                    self._say("550 no such mailbox")
                else:
                    rcpts.append(addr)
                    self._say("250 OK")
            elif verb == "DATA":
                self._say("354 end with <CRLF>.<CRLF>")
                data = []
                while True:
                    d = self.rfile.readline(1 << 20)
                    if not d or d in (b".\r\n", b".\n"):
                        break
                    data.append(d[1:] if d.startswith(b"..") else d)
                self.server.receiver.log.add({"mail_from": mail_from, "rcpt_to": rcpts,
                                              "data": b"".join(data).decode("utf-8", "replace")})
                self._say("250 OK queued")
            elif verb == "RSET":
                mail_from, rcpts = None, []
                self._say("250 OK")
            elif verb == "NOOP":
                self._say("250 OK")
            elif verb == "QUIT":
                self._say("221 bye")
                return
            else:
                self._say("502 command not implemented")


class SmtpReceiver:
    def __init__(self, log_path=None):
        self.log = _Log(log_path)
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _SmtpHandler)
        self.server.daemon_threads = True
        self.server.receiver = self
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    @property
    def messages(self):
        return self.log.wait(0, 0)


def main():
    logdir = sys.argv[1]
    h = HttpReceiver(os.path.join(logdir, "http.jsonl")).start()
    s = SmtpReceiver(os.path.join(logdir, "smtp.jsonl")).start()
    t = HttpReceiver(os.path.join(logdir, "http.jsonl"), tls="server").start()
    o = HttpReceiver(os.path.join(logdir, "http.jsonl"), tls="other").start()
    print("http %d smtp %d https %d https-other %d" % (h.port, s.port, t.port, o.port), flush=True)
    sys.stdin.read()  # until the parent closes our stdin or goes away


if __name__ == "__main__":
    main()
