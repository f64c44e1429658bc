"""bench/chat: chime's chat against ejabberd 23.01 (XMPP over WebSocket,
RFC 7395), same client (chatload.c), same counts, same pattern. Run
through bench/chat/run.sh, which builds and installs what this needs.

Phases (each prints a JSON line from chatload, then a summary):
  idle   N concurrent device connections (default 10,000), then as many as
         the server process may hold (its file descriptor limit): server
         RSS before and after, per connection.
  pairs  1,000 pairs, 1:1 messages at each --rates R (200 and 5,000/s):
         chime: send -> 201, -> receiver's sync frame, -> message in its
         /v1/sync; ejabberd: send -> stanza at the receiver.
  group  a 500-member group (chime) / MUC room (ejabberd): one sender,
         --rounds messages; time until the last other member has it.
ejabberd runs twice: without an archive, and with mod_mam on SQL
(SQLite, default: always), restarted between the two. Each server runs
its pairs and group phases back to back (chime, then ejabberd, then
ejabberd with its archive), one server at a time: the others wait until
idle, and ejabberd is stopped (SIGSTOP) while chime's phases run.
--reminders N adds N in-app reminders due during each of chime's pairs
phases (written into its database as bench/reminders does): chat and
reminders on one node, one SQLite file, and each one's lateness.
"""
import argparse
import importlib.util
import json
import os
import platform
import pwd
import re
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHIME = os.environ.get("CHIME_BIN") or os.path.join(ROOT, "build/chime")  # CHIME_BIN=path: another build, for A/B runs
LOAD = os.environ.get("CHATLOAD_BIN") or os.path.join(ROOT, "build/bench/chatload")
PY = "/usr/bin/python3"
REMINDER_LEAD_S = 2.0  # --reminders: chatload's connecting before its warm-up
SRCS = ",".join("127.0.0.%d" % i for i in range(2, 10))  # client source addresses


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def loadavg():
    return open("/proc/loadavg").read().split()[:3]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rss_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def proc_stat(pid):
    """A process's name and CPU seconds so far (/proc/PID/stat)."""
    head, rest = open("/proc/%s/stat" % pid).read().rsplit(")", 1)
    f = rest.split()
    return head.split("(", 1)[1], (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    return proc_stat(pid)[1]


def procs_cpu():
    """CPU seconds of every process now, by pid: (name, seconds)."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            out[int(p)] = proc_stat(p)
        except (OSError, IndexError, ValueError):
            continue
    return out


def others_cpu(a, b, skip):
    """What the machine's other processes (not skip's pids, not this
    script, not the load client) took between two procs_cpu(): by name,
    seconds, largest first. On the development guests this is where the
    noise shows: the sandbox's agent (pid 1, process_api, its threads at
    nice -10) takes 5-15 ms of one core about once a second."""
    d = {}
    for pid, (name, t) in b.items():
        if pid in skip or pid == os.getpid() or name == "chatload":
            continue
        dt = t - a.get(pid, (name, 0.0))[1]
        if dt > 0:
            d[name] = d.get(name, 0.0) + dt
    return sorted(((round(v, 2), k) for k, v in d.items()), reverse=True)


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def sched(pid):
    """Per thread name: [ms on a CPU, ms runnable but waiting for one,
    times run] (/proc/PID/task/*/schedstat), summed over the threads of
    that name."""
    out = {}
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            name = open("/proc/%d/task/%s/comm" % (pid, t)).read().strip()
            run, wait, slices = [int(x) for x in open("/proc/%d/task/%s/schedstat" % (pid, t)).read().split()[:3]]
        except (OSError, ValueError):
            continue
        name = re.sub(r"^\d+_", "", name)  # beam's 1_scheduler, 2_scheduler...
        o = out.setdefault(name, [0, 0, 0])
        o[0] += run / 1e6
        o[1] += wait / 1e6
        o[2] += slices
    return out


def sched_delta(a, b):
    d = {k: [round(v[i] - a.get(k, [0, 0, 0])[i]) for i in range(3)] for k, v in b.items()}
    d = {k: v for k, v in d.items() if v[0] + v[1] >= 5}
    d["all"] = [sum(v[i] for v in d.values()) for i in range(3)]
    return d


def fd_limit(pid):
    for line in open("/proc/%d/limits" % pid):
        if line.startswith("Max open files"):
            return int(line.split()[3])
    return 0


# ---- servers ------------------------------------------------------------------------------


class Chime:
    name = "chime"
    proto = "chime"

    def __init__(self, d, threads):
        self.d, self.threads = d, threads
        self.logf = open(os.path.join(d, "chime.log"), "a")
        args = [CHIME, "serve", "--listen", "127.0.0.1:0", "--db", "sqlite:" + os.path.join(d, "chime.db"),
                "--access-log", "off", "--password-ops", "1", "--password-mem", "8192"]
        if threads:
            args += ["--threads", str(threads)]
        args += os.environ.get("CHIME_ARGS", "").split()  # A/B of flags; printed with the settings
        self.args = args
        self.p = subprocess.Popen(args, stdout=self.logf, stderr=self.logf)
        self.port = None
        for _ in range(200):
            time.sleep(0.05)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(os.path.join(d, "chime.log")).read())
            if m:
                self.port = int(m.group(1))
                break
        if not self.port:
            raise RuntimeError("chime did not start; see %s/chime.log" % d)
        self.pid = self.p.pid

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


EJ_YML = """\
loglevel: warning
log_rotate_count: 0
hosts:
  - localhost
auth_password_format: plain
{sql}
listen:
  -
    port: {c2s}
    ip: "127.0.0.1"
    module: ejabberd_c2s
    max_stanza_size: 262144
    shaper: c2s_shaper
    access: c2s
  -
    port: {http}
    ip: "127.0.0.1"
    module: ejabberd_http
    backlog: 4096
    request_handlers:
      /ws: ejabberd_http_ws
      /api: mod_http_api
acl:
  local:
    user_regexp: ""
  loopback:
    ip:
      - 127.0.0.0/8
access_rules:
  local:
    allow: local
  c2s:
    allow: all
  muc_create:
    allow: local
api_permissions:
  "bench":
    who:
      ip: 127.0.0.1/8
    what: "*"
shaper_rules:
  max_user_sessions: 10
  max_user_offline_messages: 5000
  c2s_shaper: none
max_fsm_queue: 100000
cache_size: 100000
modules:
  mod_caps: {{}}
  mod_carboncopy: {{}}
  mod_client_state: {{}}
  mod_blocking: {{}}
  mod_disco: {{}}
  mod_http_api: {{}}
  mod_last: {{}}
  mod_offline:
    access_max_user_messages: max_user_offline_messages
  mod_ping: {{}}
  mod_privacy: {{}}
  mod_roster:
    versioning: true
  mod_stream_mgmt: {{}}
  mod_muc:
    access:
      - allow
    access_create: muc_create
    max_users: 500
    default_room_options:
      max_users: 500
      persistent: true
      mam: {room_mam}
  mod_muc_admin: {{}}
{mam}"""


class Ejabberd:
    proto = "xmpp"

    def __init__(self, d, mam):
        self.d = os.path.join(d, "ejabberd")
        self.mam = mam
        self.name = "ejabberd+MAM(SQLite)" if mam else "ejabberd"
        # One node name per work directory: Mnesia's files belong to it.
        self.node = "chatbench%s@localhost" % re.sub(r"[^A-Za-z0-9]", "", os.path.basename(d).split("-")[-1])
        os.makedirs(os.path.join(self.d, "spool"), exist_ok=True)
        os.makedirs(os.path.join(self.d, "logs"), exist_ok=True)
        db = os.path.join(self.d, "mam.db")
        if mam and not os.path.exists(db):
            # ejabberd 23.01 does not create its SQL schema: load Debian's
            # lite.sql. WAL, like chime's SQLite; synchronous stays FULL
            # (SQLite's default; ejabberd sets only foreign_keys).
            subprocess.run(["sqlite3", db, "PRAGMA journal_mode=WAL;", ".read /usr/share/ejabberd/sql/lite.sql"],
                           check=True, stdout=subprocess.DEVNULL)
        self.port, c2s = free_port(), free_port()
        with open(os.path.join(self.d, "ejabberd.yml"), "w") as f:
            f.write(EJ_YML.format(
                c2s=c2s, http=self.port, room_mam="true" if mam else "false",
                sql=('sql_type: sqlite\nsql_database: "%s"\n' % db) if mam else "",
                mam="  mod_mam:\n    db_type: sql\n    default: always\n" if mam else ""))
        with open(os.path.join(self.d, "ejabberdctl.cfg"), "w") as f:
            f.write('ERL_MAX_PORTS=65536\nERL_PROCESSES=1000000\nERLANG_NODE=%s\n'
                    'EJABBERD_CONFIG_PATH=%s/ejabberd.yml\n' % (self.node, self.d))
        ej = pwd.getpwnam("ejabberd")
        for root, dirs, files in os.walk(self.d):
            for x in [root] + [os.path.join(root, y) for y in dirs + files]:
                os.chown(x, ej.pw_uid, ej.pw_gid)
        os.chown(os.path.dirname(self.d), ej.pw_uid, ej.pw_gid)
        self.logf = open(os.path.join(self.d, "foreground.log"), "a")
        self.p = subprocess.Popen(
            ["setpriv", "--reuid", "ejabberd", "--regid", "ejabberd", "--init-groups"] + self.ctl("foreground"),
            stdout=self.logf, stderr=self.logf, env=dict(os.environ, HOME="/var/lib/ejabberd"),
            start_new_session=True)
        self.pid = None
        t0 = time.time()
        while time.time() - t0 < 120:
            time.sleep(0.5)
            if self.p.poll() is not None:
                raise RuntimeError("ejabberd exited; see %s/logs and foreground.log" % self.d)
            try:
                r = urllib.request.urlopen(urllib.request.Request(
                    "http://127.0.0.1:%d/api/status" % self.port, data=b"{}",
                    headers={"Content-Type": "application/json"}), timeout=5)
                if r.status == 200 and b"started" in r.read():
                    break
            except OSError:
                continue
        else:
            raise RuntimeError("ejabberd did not start in 120 s")
        for pid in os.listdir("/proc"):
            try:
                if pid.isdigit() and open("/proc/%s/comm" % pid).read().strip() == "beam.smp" and \
                        self.node.encode() in open("/proc/%s/cmdline" % pid, "rb").read():
                    self.pid = int(pid)
            except OSError:
                pass
        if not self.pid:
            raise RuntimeError("cannot find ejabberd's beam.smp")

    def warm(self, d):
        """ejabberd starts its SQL pool at the first query; stanzas archived
        while it starts crash the hook ("ejabberd_sql_localhost_1: not an
        existing atom") and are not archived. So a few messages first, until
        the archive has them."""
        before = archived(self) or 0
        for _ in range(10):
            subprocess.run([LOAD, "pairs", "--proto", "xmpp", "--port", str(self.port), "--users",
                            os.path.join(d, "xmpp_users.txt"), "--pairs", "1", "--rate", "10", "--seconds", "1",
                            "--warmup", "0", "--drain", "5"], capture_output=True, timeout=120)
            if (archived(self) or 0) > before:
                return
        raise RuntimeError("ejabberd's archive stays empty")

    def ctl(self, *cmd):
        return ["ejabberdctl", "--node", self.node, "--ctl-config", os.path.join(self.d, "ejabberdctl.cfg"),
                "--config", os.path.join(self.d, "ejabberd.yml"), "--spool", os.path.join(self.d, "spool"),
                "--logs", os.path.join(self.d, "logs")] + list(cmd)

    def stop(self):
        if self.p.poll() is None:
            subprocess.run(["setpriv", "--reuid", "ejabberd", "--regid", "ejabberd", "--init-groups"] + self.ctl("stop"),
                           env=dict(os.environ, HOME="/var/lib/ejabberd"), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60)
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
        if self.pid:
            try:
                os.kill(self.pid, 0)
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# ---- phases -------------------------------------------------------------------------------


def users_file(srv, d):
    return os.path.join(d, "chime_users.txt" if srv.proto == "chime" else "xmpp_users.txt")


def archived(srv):
    """Rows in ejabberd's SQL archive (None without one)."""
    if not getattr(srv, "mam", False):
        return None
    out = subprocess.run(["sqlite3", os.path.join(srv.d, "mam.db"), "SELECT count(*) FROM archive"],
                         capture_output=True, text=True).stdout.strip()
    return int(out) if out.isdigit() else None


def settle(others, limit_s=120):
    """Waits until the other servers still running are idle (under 5% of a
    core over a second): ejabberd with its archive goes on working through
    a backlog long after a phase it fell behind in, which took CPU from
    the next server's phase on this 2-core machine. Returns the seconds
    waited (logged when more than one)."""
    pids = [o.pid for o in others if o is not None and getattr(o, "pid", None)]
    t0 = time.time()
    while pids and time.time() - t0 < limit_s:
        try:
            c0 = sum(cpu_s(p) for p in pids)
            time.sleep(1)
            if sum(cpu_s(p) for p in pids) - c0 < 0.05:
                break
        except (FileNotFoundError, ProcessLookupError):
            break
    waited = time.time() - t0
    if waited > 1.5:
        log("waited %.0f s for the other servers to go idle" % waited)
    return waited


def run_load(srv, d, mode, extra, timeout, others=()):
    a0 = archived(srv)
    settle([o for o in others if o is not srv])
    args = [LOAD, mode, "--proto", srv.proto, "--port", str(srv.port), "--users", users_file(srv, d)] + extra
    # ejabberd, when it is not the one measured, is stopped (SIGSTOP) for
    # the phase and goes on after it. Settled is not enough: its idle
    # Erlang VM still wakes its schedulers, and on 2 cores what it takes
    # showed in chime's p99 (full runs 8.9-12.3 ms at 5,000/s where chime
    # alone measured 7.7-7.9). chime is not stopped: idle it takes next to
    # nothing, and stopped past its lease TTL it lost its leases and took
    # them back in its own next phase (one run's p99 went to 70 ms).
    paused = [o.pid for o in others
              if o is not None and o is not srv and o.proto != "chime" and getattr(o, "pid", None)]
    for p in paused:
        os.kill(p, signal.SIGSTOP)
    try:
        l0, c0, t0, s0, p0 = loadavg(), cpu_s(srv.pid), time.time(), sched(srv.pid), procs_cpu()
        u0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        s1, u1, p1 = sched(srv.pid), resource.getrusage(resource.RUSAGE_CHILDREN), procs_cpu()
    finally:
        for p in paused:
            os.kill(p, signal.SIGCONT)
    if r.returncode != 0:
        raise RuntimeError("chatload %s failed: %s" % (mode, r.stderr[-2000:]))
    line = [x for x in r.stdout.splitlines() if x.startswith("{")][-1]
    res = json.loads(line)
    res["server_cpu_s"] = round(cpu_s(srv.pid) - c0, 2)
    res["client_cpu_s"] = round(u1.ru_utime + u1.ru_stime - u0.ru_utime - u0.ru_stime, 2)
    res["wall_s"] = round(time.time() - t0, 1)
    res["load_before"], res["load_after"] = l0, loadavg()
    res["server"] = srv.name
    res["sched_ms"] = sched_delta(s0, s1)  # per thread name: [on CPU, waiting for a CPU, times run]
    res["others_cpu_s"] = others_cpu(p0, p1, {srv.pid})[:3]
    if a0 is not None:
        res["archived_rows"] = archived(srv) - a0
    print(json.dumps(res), flush=True)
    return res


def reminders_bench():
    """bench/reminders/bench.py as a module: its seed_sql and percentile."""
    spec = importlib.util.spec_from_file_location("rbench", os.path.join(ROOT, "bench", "reminders", "bench.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def seed_reminders(rbench, d, a, phase):
    """a.reminders in-app reminders of 1,000 organizers, due evenly over
    the pairs phase's measured seconds (they start --warmup s after
    chatload, plus REMINDER_LEAD_S for its connecting), written into
    chime's database as bench/reminders does. Returns (base, first due,
    span, count) for reminder_lateness."""
    base = 10000000 * (phase + 1)
    t0 = int(time.time() * 1000 + (REMINDER_LEAD_S + a.warmup) * 1000)
    con = sqlite3.connect(os.path.join(d, "chime.db"), timeout=60)
    for stmt in rbench.seed_sql(a.reminders, 1024, t0, int(a.seconds), False, base=base):
        con.execute(stmt)
    con.commit()
    con.close()
    return base, t0, int(a.seconds) * 1000, a.reminders


def reminder_lateness(rbench, d, base, t0, span_ms, n):
    """Fire time minus due time of the reminders seed_reminders wrote (to
    its organizers base + 1000000...), read once the last is 5 s overdue."""
    time.sleep(max(0.0, (t0 + span_ms + 5000) / 1000 - time.time()))
    con = sqlite3.connect(os.path.join(d, "chime.db"), timeout=60)
    try:
        late = sorted(r[0] for r in con.execute("SELECT fired_ms - due_ms FROM notifications WHERE user_id "
                                                "BETWEEN ? AND ?", (base + 1000000, base + 1000000 + rbench.ORGS - 1)))
    finally:
        con.close()
    return {"n": len(late), "missing": n - len(late), "p50": rbench.percentile(late, 0.5),
            "p99": rbench.percentile(late, 0.99), "max": late[-1] if late else None, "first_due_ms": t0}


def idle(srv, d, n, procs, label, probe=0):
    """n connections from procs client processes; server RSS per connection,
    against the RSS the process had before its first idle phase (memory
    freed by an earlier phase is not given back to the system, and is
    reused)."""
    time.sleep(2)
    rss0, fds0 = rss_kb(srv.pid), nfds(srv.pid)
    if not hasattr(srv, "rss_base"):
        srv.rss_base = rss0
    l0 = loadavg()
    share = [n // procs + (1 if i < n % procs else 0) for i in range(procs)]
    clients, first = [], 0
    for k in share:
        clients.append(subprocess.Popen(
            [LOAD, "idle", "--proto", srv.proto, "--port", str(srv.port), "--users", users_file(srv, d),
             "--conns", str(k), "--first", str(first), "--src", SRCS, "--timeout", "60"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(os.path.join(d, "idle.log"), "a"), text=True))
        first += k
    ready = failed = 0
    t0 = time.time()
    for c in clients:
        parts = c.stdout.readline().split()
        if not parts or parts[0] != "READY":
            raise RuntimeError("an idle client did not get ready; see %s/idle.log" % d)
        ready += int(parts[1])
        failed += int(parts[2])
    secs = time.time() - t0
    time.sleep(5)
    rss1, fds1 = rss_kb(srv.pid), nfds(srv.pid)
    res = {"mode": "idle", "server": srv.name, "label": label, "wanted": n, "ready": ready, "failed": failed,
           "connect_s": round(secs, 1), "rss_before_kb": rss0, "rss_after_kb": rss1,
           "rss_base_kb": srv.rss_base, "kb_per_conn": round((rss1 - srv.rss_base) / max(1, ready), 2),
           "kb_per_conn_phase": round((rss1 - rss0) / max(1, ready), 2), "server_fds": fds1, "server_fds_before": fds0,
           "server_fd_limit": fd_limit(srv.pid), "load_before": l0, "load_after": loadavg()}
    if probe:
        pc0 = cpu_s(srv.pid)
        p = subprocess.run([LOAD, "idle", "--proto", srv.proto, "--port", str(srv.port), "--users", users_file(srv, d),
                            "--conns", str(probe), "--first", str(first), "--src", SRCS, "--timeout", "5"],
                           input="", capture_output=True, text=True, timeout=120)
        m = re.search(r"READY (\d+) (\d+)", p.stdout)
        res["probe_wanted"], res["probe_ready"] = probe, int(m.group(1)) if m else -1
        res["probe_server_cpu_s"] = round(cpu_s(srv.pid) - pc0, 2)
        time.sleep(1)
    for c in clients:
        c.stdin.close()
    for c in clients:
        c.wait(60)
    time.sleep(3)
    res["rss_after_close_kb"] = rss_kb(srv.pid)
    print(json.dumps(res), flush=True)
    return res


def max_conns(srv):
    """What the server process's file descriptor limit leaves room for."""
    return fd_limit(srv.pid) - nfds(srv.pid) - 16


# ---- report -----------------------------------------------------------------------------------


def ms(x):
    if x is None:
        return "-"
    if x < 0:
        return "undelivered"
    return "%.1f ms" % x if x < 100 else "%.0f ms" % x


def dist(r, key):
    d = r.get(key)
    if not d:
        return "-"
    s = "%s / %s" % (ms(d["p50"]), ms(d["p99"]))
    if d["missing"]:
        s += " (%d of %d missing)" % (d["missing"], d["n"] + d["missing"])
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=10000, help="users signed up on each server")
    ap.add_argument("--idle", type=int, default=10000, help="connections of the idle phase")
    ap.add_argument("--no-max", action="store_true", help="skip the as-many-as-possible idle phase")
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--rates", default="200,5000")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--drain", type=float, default=20)
    ap.add_argument("--members", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=1, help="latency phases, alternating servers, this many times")
    ap.add_argument("--only", choices=["all", "chime", "ejabberd"], default="all")
    ap.add_argument("--phases", default="idle,pairs,group")
    ap.add_argument("--threads", type=int, default=0, help="chime --threads (0: one per core)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--reminders", type=int, default=0,
                    help="chime: this many in-app reminders (a multiple of 1000) due during each pairs phase, "
                         "fired by the same server into the same database; their lateness is reported")
    a = ap.parse_args()
    if a.reminders < 0 or a.reminders % 1000:
        ap.error("--reminders: a multiple of 1000 (one share for each of the 1,000 organizers), not %d" % a.reminders)
    rbench = reminders_bench() if a.reminders else None
    phases = a.phases.split(",")
    rates = [float(x) for x in a.rates.split(",")]
    d = tempfile.mkdtemp(prefix="chatbench-")
    os.chmod(d, 0o755)
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    info = {"date": started, "nproc": os.cpu_count(), "uname": " ".join(platform.uname()),
            "load_start": loadavg(), "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE))}
    log("bench/chat: %s; %d cores; %s; load %s; nofile %s; work dir %s" % (
        started, info["nproc"], info["uname"], " ".join(info["load_start"]), info["nofile"], d))
    log("settings: users %d, idle %d (+max), pairs %d at %s/s for %.0f s (+%.0f s warm-up), group %d x %d rounds, "
        "repeat %d; chime: SQLite (WAL; the chat pushes once written, answers 201 once synced), --password-ops 1 --password-mem 8192 "
        "(seeding only), --chat-rate default 20/s, --ws-ping 25 s; ejabberd 23.01: c2s_shaper none, "
        "MAM on SQLite (WAL) default: always" % (
            a.users, a.idle, a.pairs, "/".join("%g" % r for r in rates), a.seconds, a.warmup, a.members, a.rounds,
            a.repeat))
    log("chime binary: %s" % CHIME)
    if os.environ.get("CHIME_ARGS"):
        log("chime extra flags (CHIME_ARGS, not the defaults): %s" % os.environ["CHIME_ARGS"])
    results = []
    epmd_before = subprocess.run(["pgrep", "-x", "epmd"], capture_output=True).returncode == 0
    chime = ej = None
    do_chime, do_ej = a.only in ("all", "chime"), a.only in ("all", "ejabberd")
    try:
        if do_chime:
            chime = Chime(d, a.threads)
            log("chime on port %d (pid %d), fd limit %d" % (chime.port, chime.pid, fd_limit(chime.pid)))
            subprocess.run([PY, os.path.join(HERE, "seed.py"), "chime", "http://127.0.0.1:%d" % chime.port,
                            str(a.users), d, "--pairs", str(a.pairs), "--group", str(a.members)], check=True)
        if do_ej:
            ej = Ejabberd(d, False)
            log("ejabberd on port %d (beam pid %d), fd limit %d" % (ej.port, ej.pid, fd_limit(ej.pid)))
            subprocess.run([PY, os.path.join(HERE, "seed.py"), "xmpp", "http://127.0.0.1:%d/api" % ej.port,
                            str(a.users), d], check=True)

        def ejabberd(mam):
            nonlocal ej
            if ej and ej.mam == mam:
                return ej
            if ej:
                ej.stop()
            ej = Ejabberd(d, mam)
            if mam:
                ej.warm(d)
            return ej

        if "idle" in phases:
            for srv in ([chime] if do_chime else []) + ([ejabberd(False)] if do_ej else []):
                results.append(idle(srv, d, a.idle, 1, "idle"))
                if not a.no_max:
                    n = max_conns(srv)
                    log("%s: the fd limit leaves room for %d connections" % (srv.name, n))
                    if n > 10 * a.users:
                        # both servers allow 10 devices a user (chime --ws-max-per-user, ejabberd
                        # max_user_sessions); more would measure evictions
                        n = 10 * a.users
                        log("  capped at 10 devices for each of the %d users: %d" % (a.users, n))
                    results.append(idle(srv, d, n, 2, "max", probe=50))
        # Each server runs all its phases back to back. Taking turns phase
        # by phase left each server idle a minute or more before its next
        # phase, and on this VM kind the host reclaims page cache idle for
        # 60 s (DAMON): chime, whose data is a database file, then read it
        # back from the disk during the phase (5,000/s p99 25-130 ms against
        # 5-6 ms without the pause), which ejabberd, whose data is in its
        # Erlang heap, does not feel.
        servers = ([lambda: chime] if do_chime else []) + \
                  ([lambda: ejabberd(False), lambda: ejabberd(True)] if do_ej else [])
        for get in servers:
            for rep in range(a.repeat):
                if "pairs" in phases:
                    for rate in rates:
                        srv = get()
                        extra = ["--pairs", str(a.pairs), "--rate", "%g" % rate, "--seconds", "%g" % a.seconds,
                                 "--warmup", "%g" % a.warmup, "--drain", "%g" % a.drain]
                        if srv.proto == "chime":
                            extra += ["--convs", os.path.join(d, "chime_convs.txt")]
                        due = None
                        if srv.proto == "chime" and a.reminders:
                            due = seed_reminders(rbench, d, a, len(results))
                        r = run_load(srv, d, "pairs", extra, timeout=600, others=(chime, ej))
                        if due:
                            r["reminders"] = reminder_lateness(rbench, d, *due)
                            log("  reminders during the phase: %s" % json.dumps(r["reminders"]))
                        r["rep"] = rep
                        results.append(r)
                if "group" in phases:
                    srv = get()
                    extra = ["--members", str(a.members), "--rounds", str(a.rounds), "--warmup-rounds", "5",
                             "--interval-ms", "100"]
                    if srv.proto == "chime":
                        extra += ["--conv", open(os.path.join(d, "chime_group.txt")).read().strip()]
                    else:
                        # a room per configuration: a persistent room keeps the
                        # options it was made with (mam among them)
                        extra += ["--room", "bench%d%s@conference.localhost" % (rep, "mam" if srv.mam else "")]
                    r = run_load(srv, d, "group", extra, timeout=1800, others=(chime, ej))
                    r["rep"] = rep
                    results.append(r)
    finally:
        if chime:
            chime.stop()
            log(open(os.path.join(d, "chime.log")).read()[-1500:])
        if ej:
            ej.stop()
        if not epmd_before:
            names = subprocess.run(["epmd", "-names"], capture_output=True, text=True).stdout
            if re.search(r"^name ", names, re.M):
                log("epmd left running: other Erlang nodes use it:\n" + names)
            else:
                subprocess.run(["epmd", "-kill"], capture_output=True)
        info["load_end"] = loadavg()
        with open(os.path.join(d, "results.json"), "w") as f:
            json.dump({"info": info, "results": results}, f, indent=1)
        report(info, results, a)
        if a.keep:
            log("work dir kept: %s" % d)
        else:
            shutil.rmtree(d, ignore_errors=True)


def report(info, results, a):
    print()
    print("machine: %d cores, %s; date %s; load average at start %s, at end %s" % (
        info["nproc"], info["uname"], info["date"], " ".join(info["load_start"]), " ".join(info.get("load_end", []))))
    names = ["chime", "ejabberd", "ejabberd+MAM(SQLite)"]
    for r in results:
        if r["mode"] == "idle":
            print("idle %-5s %-22s %6d of %6d connections (server fds %d of limit %d)%s: RSS %d (before any) -> %d KB, "
                  "%.2f KB/connection; load %s" % (
                      r["label"], r["server"], r["ready"], r["wanted"], r["server_fds"], r["server_fd_limit"],
                      (", then %d of %d more got through (server CPU %.1f s meanwhile)" % (
                          r["probe_ready"], r["probe_wanted"], r["probe_server_cpu_s"])) if "probe_ready" in r else "",
                      r["rss_base_kb"], r["rss_after_kb"], r["kb_per_conn"], " ".join(r["load_after"])))
        elif "sched_ms" in r:
            top = sorted(((v[1], k, v[0], v[2]) for k, v in r["sched_ms"].items() if k != "all"), reverse=True)[:3]
            print("%s %s%s: server CPU %.1f s, client CPU %.1f s in %.0f s%s; threads waiting for a CPU: %s; load %s" % (
                r["server"], r["mode"], (" %g/s" % r["rate"]) if "rate" in r else "", r["server_cpu_s"],
                r.get("client_cpu_s", -1), r["wall_s"],
                ("; %d rows archived" % r["archived_rows"]) if "archived_rows" in r else "",
                ", ".join("%s %d ms (on CPU %d ms, run %d times)" % (k, w, c, n) for w, k, c, n in top),
                " ".join(r["load_after"])))
            if r.get("others_cpu_s"):
                print("  other processes' CPU meanwhile: %s" % ", ".join("%s %.2f s" % (k, v) for v, k in r["others_cpu_s"]))
    print()
    print("| measure | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))

    def row(label, pick):
        cells = []
        for n in names:
            vals = [pick(r) for r in results if r.get("server") == n]
            vals = [v for v in vals if v is not None]
            cells.append(", ".join(vals) if vals else "")
        print("| %s | %s |" % (label, " | ".join(cells)))

    for lab in ("idle", "max"):
        row("idle connections (%s): count, KB each" % lab,
            lambda r, lab=lab: "%d, %.1f KB" % (r["ready"] + r.get("probe_ready", 0), r["kb_per_conn"])
            if r["mode"] == "idle" and r["label"] == lab else None)
    rates = sorted({r["rate"] for r in results if r["mode"] == "pairs"})
    for rate in rates:
        sel = lambda r, rate=rate: r["mode"] == "pairs" and r["rate"] == rate
        row("1:1 %g/s: send -> 201, median / p99" % rate, lambda r: dist(r, "ack") if sel(r) and "ack" in r else None)
        row("1:1 %g/s: send -> push, median / p99" % rate, lambda r: dist(r, "push") if sel(r) else None)
        row("1:1 %g/s: send -> pulled, median / p99" % rate, lambda r: dist(r, "pull") if sel(r) else None)
        row("1:1 %g/s: server CPU s per 1,000 messages" % rate,
            lambda r: "%.2f" % (r["server_cpu_s"] * 1000 / r["messages"]) if sel(r) else None)
    g = lambda r: r["mode"] == "group"
    row("group %d: last member pushed, median / p99" % a.members, lambda r: dist(r, "last_push") if g(r) else None)
    row("group %d: last member pulled, median / p99" % a.members, lambda r: dist(r, "last_pull") if g(r) else None)
    row("group %d: each member pulled, median / p99" % a.members, lambda r: dist(r, "each_pull") if g(r) else None)
    print()
    # ratios: chime p99 / peer p99 (lower is better for chime)
    def best(name, mode, rate=None):
        rs = [r for r in results if r.get("server") == name and r["mode"] == mode and (rate is None or r["rate"] == rate)]
        return rs
    for rate in rates:
        for peer in names[1:]:
            c, p = best("chime", "pairs", rate), best(peer, "pairs", rate)
            for cr, pr in zip(c, p):
                for key in ("push", "pull"):
                    cv, pv = cr[key]["p99"], pr["pull"]["p99"]
                    if cv > 0 and pv > 0:
                        print("ratio 1:1 %g/s p99 send->%s, chime / %s: %.2fx (%.2f vs %.2f ms)" % (
                            rate, "pulled" if key == "pull" else "push", peer, cv / pv, cv, pv))
                    else:
                        print("ratio 1:1 %g/s p99 send->%s, chime / %s: n/a (chime %s, %s %s)" % (
                            rate, key, peer, ms(cv), peer, ms(pv)))
    for peer in names[1:]:
        for cr, pr in zip(best("chime", "group"), best(peer, "group")):
            cv, pv = cr["last_pull"]["p99"], pr["last_pull"]["p99"]
            if cv > 0 and pv > 0:
                print("ratio group p99 to the last member (pulled), chime / %s: %.2fx" % (peer, cv / pv))
        for lab in ("idle", "max"):
            c = [r for r in results if r.get("server") == "chime" and r["mode"] == "idle" and r["label"] == lab]
            p = [r for r in results if r.get("server") == peer and r["mode"] == "idle" and r["label"] == lab]
            if c and p and c[0]["kb_per_conn"] > 0:
                print("ratio memory per idle connection (%s), %s / chime: %.1fx" % (
                    lab, peer, p[0]["kb_per_conn"] / c[0]["kb_per_conn"]))


if __name__ == "__main__":
    main()
