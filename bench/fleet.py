#!/usr/bin/env python3
"""What Shoal's benchmarks share: a private redis-server, the test server, `shoal coordinator` and
`shoal worker` processes, a minimal Redis client, /proc readings and the logs' warnings.

Imported by distributed.py and soak.py, which sit beside it (run them from the repository root).
Standard library only. Only 127.0.0.1 and unix sockets are used; every process started through
Procs is stopped by Procs.stop_all, which the callers run in a `finally`.
"""
import bisect
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The `dist` profile (fat LTO): what the image and the packages ship, so CPU, memory and throughput
# figures are those of the binary users run in production (Cargo.toml, [profile.dist]).
BIN_DIR = os.path.join(ROOT, "target", "dist")
BUILD = "cargo build --profile dist -p shoal -p shoal-tests"
SHOAL = os.path.join(BIN_DIR, "shoal")
TESTSITE = os.path.join(BIN_DIR, "shoal-testsite")
TOKEN = "bench-token-0123456789"  # at least 16 characters (shoal coordinator --token)
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------
# A minimal RESP2 client over the unix socket (no dependency beyond the standard library).

class RedisError(Exception):
    pass


class Redis:
    def __init__(self, path, timeout=30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.f = self.sock.makefile("rb")

    def send(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))

    def __call__(self, *args):
        self.send(*args)
        return self.read()

    def read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("redis closed the connection")
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise RedisError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            return self.f.read(n + 2)[:-2]
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RedisError("unexpected reply %r" % line)

    def info(self, section):
        text = self(b"INFO", section).decode()
        out = {}
        for line in text.splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                out[k] = v
        return out

    def commandstats(self):
        """{command: calls} from INFO commandstats."""
        out = {}
        for k, v in self.info("commandstats").items():
            if k.startswith("cmdstat_"):
                out[k[len("cmdstat_"):]] = int(v.split(",", 1)[0].split("=", 1)[1])
        return out

    def scan(self, pattern):
        cursor, keys = b"0", []
        while True:
            cursor, batch = self(b"SCAN", cursor, b"MATCH", pattern, b"COUNT", 1000)
            keys.extend(batch)
            if cursor == b"0":
                return keys

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Processes

def proc_cpu(pid):
    """utime+stime of a live process in seconds, or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def machine_jiffies():
    """(busy, total) jiffies of the whole machine from /proc/stat."""
    with open("/proc/stat") as f:
        parts = [int(x) for x in f.readline().split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)
    return sum(parts) - idle, sum(parts)


class Procs:
    """Every child process of one run, stopped in reverse order on exit (workers before the
    coordinator, the test server before redis)."""

    def __init__(self, d):
        self.d = d
        self.procs = []  # (name, Popen, log path)

    def start(self, name, args, env=None, stdout=None):
        log = os.path.join(self.d, name + ".log")
        with open(log, "ab") as errf:
            p = subprocess.Popen(args, stdout=stdout if stdout is not None else errf, stderr=errf,
                                 stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})},
                                 text=stdout is not None)
        self.procs.append((name, p, log))
        return p

    def pid(self, name):
        p = self.proc(name)
        return p.pid if p else None

    def proc(self, name):
        for n, p, _ in self.procs:
            if n == name:
                return p
        return None

    def stop(self, name, sig=signal.SIGTERM, timeout=25):
        for n, p, _ in self.procs:
            if n == name:
                stop_proc(p, sig, timeout)

    def stop_all(self):
        for _, p, _ in reversed(self.procs):
            stop_proc(p, signal.SIGTERM, 25)

    def logs(self):
        return [(n, log) for n, _, log in self.procs]


def stop_proc(p, sig, timeout):
    if p.poll() is None:
        try:
            p.send_signal(sig)
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
        except ProcessLookupError:
            pass
    if p.stdout:
        p.stdout.close()


def wait_for(cond, timeout, what, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise SystemExit("timed out waiting for %s" % what)


def start_redis(procs):
    sock = os.path.join(procs.d, "redis.sock")
    procs.start("redis", ["redis-server", "--port", "0", "--unixsocket", sock, "--save", "",
                          "--appendonly", "no", "--dir", procs.d])

    def ready():
        try:
            r = Redis(sock)
            return r if r(b"PING") == "PONG" else None
        except OSError:
            return None
    return sock, wait_for(ready, 10, "redis-server")


def start_server(procs, hosts, pages, links, log_path, delay_ms=0, extra=(), max_seconds=600):
    """The test server with `hosts` generated sites (site0.test ...); returns its port. `extra`
    are more shoal-testsite flags (e.g. --throttle-host)."""
    p = procs.start("testsite", [TESTSITE, "--hosts", str(hosts), "--pages", str(pages),
                                 "--links", str(links), "--delay-ms", str(delay_ms),
                                 "--max-seconds", str(max_seconds), "--log-json", log_path,
                                 *extra],
                    stdout=subprocess.PIPE)
    line = p.stdout.readline().strip()
    if not line.startswith("listening "):
        raise SystemExit("test server did not start: %r" % line)
    return int(line.rsplit(":", 1)[1])


def stop_server(procs):
    """SIGTERM makes the test server write its request log. Returns the summary it printed after
    the `listening` line as a dict (origin_unix_ms, requests, statuses, ...)."""
    p = procs.proc("testsite")
    out = ""
    if p is not None and p.poll() is None:
        try:
            p.send_signal(signal.SIGTERM)
            out, _ = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
    procs.stop("testsite", signal.SIGTERM, 30)
    return dict(line.split(" ", 1) for line in (out or "").splitlines() if " " in line)


def start_coordinator(procs, sock, ns, extra=(), env_log="info"):
    """`shoal coordinator` on the private Redis (namespace `ns`) with its own audit database in
    procs.d; `extra` are more flags (audit defaults, --lease-ttl-s). Returns its API port.
    `--no-dns` as for the workers and `shoal audit`: the audits' domain checks (DNS, mail, RDAP)
    are off, so a distributed audit stores what `shoal audit --no-dns` stores."""
    log = os.path.join(procs.d, "coordinator.log")
    procs.start("coordinator", [SHOAL, "coordinator", "--redis", "redis+unix://" + sock,
                                "--namespace", ns, "--db", os.path.join(procs.d, "audit.db"),
                                "--listen", "127.0.0.1:0", "--token", TOKEN, "--no-dns", *extra],
                env={"SHOAL_LOG": env_log})

    def listening():
        with open(log, errors="replace") as f:
            m = re.search(r"coordinator started listen=127\.0\.0\.1:(\d+)", f.read())
        return int(m.group(1)) if m else None
    return wait_for(listening, 20, "the coordinator to listen")


def start_workers(procs, sock, ns, n, hosts, extra=(), user_agent=None):
    """n `shoal worker`s named worker1.. (ids w1..), every test host resolved to 127.0.0.1, with
    `extra` flags; `user_agent(i)`, if given, is worker i's (1-based) own User-Agent."""
    resolve = []
    for h in hosts:
        resolve += ["--resolve", "%s=127.0.0.1" % h]
    for i in range(n):
        ua = ["--user-agent", user_agent(i + 1)] if user_agent else []
        procs.start("worker%d" % (i + 1),
                    [SHOAL, "worker", "--redis", "redis+unix://" + sock, "--namespace", ns,
                     "--id", "w%d" % (i + 1), "--allow-private", "--no-dns", *resolve, *ua,
                     *extra],
                    env={"SHOAL_LOG": "info"})

    def started():
        n_started = 0
        for i in range(n):
            with open(os.path.join(procs.d, "worker%d.log" % (i + 1)), errors="replace") as f:
                n_started += "worker started" in f.read()
        return n_started == n
    wait_for(started, 20, "the workers to start")


def submit(procs, cport, urls, extra, wait, timeout):
    sites = os.path.join(procs.d, "sites.txt")
    with open(sites, "w") as f:
        f.write("".join(u + "\n" for u in urls))
    args = [SHOAL, "submit", "--coordinator", "http://127.0.0.1:%d" % cport, "--token", TOKEN,
            "--file", sites, *extra] + (["--wait"] if wait else [])
    with open(os.path.join(procs.d, "submit.log"), "ab") as errf:
        t0 = time.monotonic()
        r = subprocess.run(args, stdout=subprocess.PIPE, stderr=errf, text=True, timeout=timeout,
                           env={**os.environ, "SHOAL_LOG": "info"})
        wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit("shoal submit failed (%d); see %s" % (r.returncode, errf.name))
    return int(r.stdout.split()[0]), wall


def audit_view(cport, audit):
    r = subprocess.run([SHOAL, "status", str(audit), "--coordinator", "http://127.0.0.1:%d" % cport,
                        "--token", TOKEN, "--json"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit("shoal status failed: %s" % r.stderr[-1000:])
    return json.loads(r.stdout)


# ---------------------------------------------------------------------------------------------
# Server log

def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def peak_and_violations(reqs, limit):
    """Max requests in flight at once and how many started with `limit` already in flight."""
    events = []
    for r in reqs:
        end = r.get("end_ms")
        events.append((r["start_ms"], 1))
        events.append((end if end is not None else float("inf"), -1))
    events.sort(key=lambda e: (e[0], e[1]))  # an end at the same instant frees the slot first
    cur = peak = bad = 0
    for _, d in events:
        if d == 1 and cur >= limit:
            bad += 1
        cur += d
        peak = max(peak, cur)
    return peak, bad


# ---------------------------------------------------------------------------------------------
# Logs

NOISE = re.compile(r"stopping: finishing requests in flight")
LOG_LINE = re.compile(r"^\S+\s+(WARN|ERROR)\s+(.*)$")


def scan_logs(all_logs):
    """(kind, level, message without timestamp) -> count, over every process log."""
    found = Counter()
    for name, path in all_logs:
        kind = re.sub(r"\d+$", "", name)
        try:
            with open(path, errors="replace") as f:
                for line in f:
                    line = re.sub(r"\x1b\[[0-9;]*m", "", line.rstrip())
                    m = LOG_LINE.match(line)
                    if kind == "redis":
                        if "# WARNING" in line or "# Warning" in line:
                            found[(kind, "WARN", line.split(" # ", 1)[-1][:160])] += 1
                        continue
                    if m and not NOISE.search(m.group(2)):
                        msg = re.sub(r"\d{4,}", "N", m.group(2))[:200]
                        found[(kind, m.group(1), msg)] += 1
                    elif "panicked" in line:
                        found[(kind, "PANIC", line[:200])] += 1
        except OSError:
            pass
    return found


# ---------------------------------------------------------------------------------------------
# Figures

class Sampler(threading.Thread):
    """Samples every `period` s while a run goes on, in a thread of its own; `sample()` returns one
    tuple whose first field is the wall time (ms since the epoch) and whose other fields are
    numbers, None or {name: number} dicts. `at(t_ms)` interpolates every field to a wall time, so
    figures can be cut to the exact window of a run. Used by distributed.py and cpu.py."""

    def __init__(self, period=0.05):
        super().__init__(daemon=True)
        self.period = period
        self.samples = []
        self.halt = threading.Event()

    def sample(self):
        raise NotImplementedError

    def close(self):
        """Releases what sample() uses (called once by finish())."""

    def run(self):
        while not self.halt.is_set():
            self.samples.append(self.sample())
            self.halt.wait(self.period)

    def finish(self):
        if self.is_alive():
            self.halt.set()
            self.join(10)
        self.samples.append(self.sample())
        self.close()

    def at(self, t_ms):
        """The fields after the time, interpolated linearly to wall time t_ms."""
        s = self.samples
        i = max(bisect.bisect_right([x[0] for x in s], t_ms) - 1, 0)
        a, b = s[i], s[min(i + 1, len(s) - 1)]
        w = 0.0 if b[0] == a[0] else min(max((t_ms - a[0]) / (b[0] - a[0]), 0.0), 1.0)

        def mix(x, y):
            if isinstance(x, dict):
                return {n: mix(x[n], y[n]) for n in x}
            if x is None or y is None:
                return x if y is None else y
            return x + (y - x) * w
        return tuple(mix(x, y) for x, y in zip(a[1:], b[1:]))


def rss_kib(pid):
    """VmRSS of a live process in KiB (/proc/PID/status), or None once it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


REFERENCE_LOOP = "n=0\nfor i in range(20_000_000): n += i*i % 7\n"


def reference_loop():
    """Seconds a fresh python3 takes for the fixed loop bench/build-figures.sh times (20M
    iterations, start-up included): the machine's speed, so runs on different days or machines
    can be put side by side."""
    t0 = time.monotonic()
    subprocess.run(["python3", "-c", REFERENCE_LOOP], check=True, timeout=600)
    return time.monotonic() - t0


def prerequisites():
    """Exits unless the dist binaries and redis-server are there; returns Redis' version."""
    for b in (SHOAL, TESTSITE):
        if not os.path.exists(b):
            raise SystemExit("%s missing: %s" % (b, BUILD))
    if not shutil.which("redis-server"):
        raise SystemExit("redis-server missing (apt-get install redis-server)")
    ver = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.split()
    return next((w[2:] for w in ver if w.startswith("v=")), "?")


def print_logs(all_logs, base, keep, t_start):
    """The warnings and errors of every process's log (the 20 most frequent), then the bench's
    time since `t_start` (time.monotonic()); removes `base` unless `keep`."""
    found = scan_logs(all_logs)
    print()
    print("== logs: %d processes' logs under %s%s ==" % (len(all_logs), base,
          "" if keep else " (removed)"))
    if not found:
        print("no warnings or errors (apart from the expected 'stopping' line on SIGTERM)")
    for (kind, level, msg), n in sorted(found.items(), key=lambda x: -x[1])[:20]:
        print("%s %s x%d: %s" % (kind, level, n, msg))
    if not keep:
        shutil.rmtree(base, ignore_errors=True)
    print("bench time: %.0f s" % (time.monotonic() - t_start))


def on_sigterm(signum, frame):
    raise KeyboardInterrupt("SIGTERM")  # unwinds through every `finally`, which stops the children


def script(main):
    """Runs a benchmark's main(): SIGTERM and Ctrl-C unwind through its `finally`s, exit 130."""
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
