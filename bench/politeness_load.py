#!/usr/bin/env python3
"""Politeness as the site sees it under load (issue 12 item 7 figures).

`shoal audit` crawls many test hosts of `shoal-testsite` on 127.0.0.1 twice, one run after the
other: (a) on the machine as it is ("idle"), (b) beside a CPU hog (`--hog` python3 busy loops, one
per core by default, normal priority) started before the audit and stopped after it. From the test
server's request log (`--log-json`: when each request reached the handler, as a site owner's access
log shows it) it prints per host the gap in force, the smallest gap between consecutive request
starts, the 1st percentile gap, how many gaps were below 97 % of the gap in force and the most
requests in flight at once; then the worst host and whether every host kept >= 97 % of its gap (the
target), and pages per second over each audit's wall time, idle against loaded.

Hosts: `--hosts` (20) x `--pages` (60) at `--gap-ms` (300, Shoal's default) and `--in-flight` (4,
the default), audited by one `shoal audit`; and `--slow-hosts` (3) at a 1 s gap. shoal-testsite
cannot serve a robots.txt Crawl-delay, so the slow hosts are audited by a second `shoal audit`
started at the same moment with `--gap-ms --slow-gap-ms` (1000; Crawl-delay only raises the same
per-host gap, shared/src/pace.rs) and `--max-pages --slow-pages` (20) so both audits take about as
long. Shoal's gap counts between request starts, whatever the number in flight, so every pair of
consecutive starts to a host must be a gap apart.

With root (`--no-wire` to skip) the request packets are also read off the loopback interface
(AF_PACKET, a kernel filter for the test server's port only, kernel send timestamps): the gap as it
left Shoal ("wire"), which TCP connection each request used (new connections show as a SYN from a
new client port) and how late the server's handler logged each request. That tells a gap that
Shoal sent short from one the server only logged short, and short gaps that follow a new connection.

Printed first: the machine's speed (the fixed python3 20M-iteration loop of bench/build-figures.sh)
and the binaries used; per run how busy the machine was (/proc/stat) and who took the cores.

Only 127.0.0.1 is used. Every process is bounded in time (--max-seconds on the server, a deadline
in each hog, --timeout on each audit) and stopped in a `finally`. Run from the repository root
after `cargo build --profile dist -p shoal -p shoal-tests`:
    python3 bench/politeness_load.py [--runs N] [--hosts N] [--pages N] [--hog N]
"""
import argparse
import ctypes
import json
import math
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet  # noqa: E402  (beside this file)

TARGET = 0.97  # share of the gap in force every gap must keep
HOGS = {
    # A busy loop in the interpreter: the CPU only.
    "spin": ("import sys, time\n"
             "end = time.monotonic() + float(sys.argv[1])\n"
             "while time.monotonic() < end:\n"
             "    for _ in range(200000):\n"
             "        pass\n"),
    # Copies a 64 MiB buffer into freshly mapped memory again and again: memory bandwidth, page
    # faults and kernel time besides the CPU, closer to a compiler or a database than "spin".
    "memory": ("import sys, time\n"
               "end = time.monotonic() + float(sys.argv[1])\n"
               "buf = bytearray(64 << 20)\n"
               "while time.monotonic() < end:\n"
               "    copy = bytes(buf)\n"
               "    del copy\n"),
}
PAGE_PATH = ("/", "/p/")


# ---------------------------------------------------------------------------------------------
# Processes

class Run:
    """Every process of one run; stop_all() (in a `finally`) ends them in reverse start order."""

    def __init__(self, d):
        self.d = d
        self.procs = []  # (name, Popen)

    def start(self, name, args, stdout=None):
        # A clean environment: no SHOAL_* setting of the caller's changes what is measured.
        env = {k: v for k, v in os.environ.items() if not k.startswith("SHOAL_")}
        env["SHOAL_LOG"] = "warn"
        with open(os.path.join(self.d, name + ".log"), "ab") as errf:
            p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=stdout or errf, stderr=errf,
                                 env=env, text=stdout is not None)
        self.procs.append((name, p))
        return p

    def stop(self, p, timeout=25):
        fleet.stop_proc(p, signal.SIGTERM, timeout)

    def stop_all(self):
        for _, p in reversed(self.procs):
            fleet.stop_proc(p, signal.SIGTERM, 25)


def wait_with_rusage(p, deadline):
    """Reaps `p` by its deadline (monotonic) and returns (exit code, CPU seconds, end time), or
    kills it and exits the benchmark."""
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            end = time.monotonic()
            p.returncode = os.waitstatus_to_exitcode(status)
            return p.returncode, ru.ru_utime + ru.ru_stime, end
        if time.monotonic() > deadline:
            p.kill()
            raise SystemExit("shoal audit did not finish within --timeout")
        time.sleep(0.02)


def start_testsite(run, bin_dir, hosts, pages, links, log_path, max_seconds):
    p = run.start("testsite", [os.path.join(bin_dir, "shoal-testsite"), "--hosts", str(hosts),
                               "--pages", str(pages), "--links", str(links),
                               "--max-seconds", str(max_seconds), "--log-json", log_path],
                  stdout=subprocess.PIPE)
    line = p.stdout.readline().strip()
    if not line.startswith("listening "):
        raise SystemExit("test server did not start: %r" % line)
    return p, int(line.rsplit(":", 1)[1])


def stop_testsite(p):
    """SIGTERM makes the server write its log; returns its summary (origin_unix_ms, ...)."""
    out = ""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            out, _ = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
    return dict(line.split(" ", 1) for line in (out or "").splitlines() if " " in line)


def audit_args(bin_dir, d, name, hosts, port, flags):
    args = [os.path.join(bin_dir, "shoal"), "audit", *["http://%s:%d/" % (h, port) for h in hosts],
            "--db", os.path.join(d, name + ".db"), "--allow-private", "--no-dns", "--no-progress"]
    for h in hosts:
        args += ["--resolve", "%s=127.0.0.1" % h]
    return args + flags


# ---------------------------------------------------------------------------------------------
# The loopback wire: request packets with kernel timestamps

SO_ATTACH_FILTER, SO_TIMESTAMPNS, SO_RCVBUFFORCE = 26, 35, 33
SOL_PACKET, PACKET_STATISTICS, PACKET_OUTGOING = 263, 6, 4


def tcp_port_filter(port):
    """Classic BPF: IPv4, TCP, not a fragment, source or destination port `port`."""
    def ins(code, jt, jf, k):
        return struct.pack("HBBI", code, jt, jf, k)
    return [
        ins(0x28, 0, 0, 12),        # 0  ldh [12]          ethertype
        ins(0x15, 0, 10, 0x0800),   # 1  jeq IPv4 else 12
        ins(0x30, 0, 0, 23),        # 2  ldb [23]          protocol
        ins(0x15, 0, 8, 6),         # 3  jeq TCP else 12
        ins(0x28, 0, 0, 20),        # 4  ldh [20]          fragment offset
        ins(0x45, 6, 0, 0x1FFF),    # 5  jset -> 12
        ins(0xB1, 0, 0, 14),        # 6  ldxb 4*([14]&0xf) IP header length
        ins(0x48, 0, 0, 14),        # 7  ldh [x+14]        source port
        ins(0x15, 2, 0, port),      # 8  jeq port -> 11
        ins(0x48, 0, 0, 16),        # 9  ldh [x+16]        destination port
        ins(0x15, 0, 1, port),      # 10 jeq port -> 11 else 12
        ins(0x06, 0, 0, 0x40000),   # 11 accept
        ins(0x06, 0, 0, 0),         # 12 drop
    ]


class Wire:
    """Reads the test server's TCP traffic on `lo` in a thread: SYNs of new connections and the
    packets that carry a request head, each with the kernel's timestamp of the send (the copy
    the sender's write put on the interface, so the reader's own scheduling does not move it)."""

    def __init__(self, port):
        self.port = port
        self.syns = []      # (unix s, client port)
        self.heads = []     # (unix s, client port, seq, bytes)
        self.error = None
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        prog = tcp_port_filter(port)
        self._buf = ctypes.create_string_buffer(b"".join(prog))
        self.sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER,
                             struct.pack("HL", len(prog), ctypes.addressof(self._buf)))
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
        except OSError:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
        self.sock.bind(("lo", 0))
        self.sock.settimeout(0.2)
        # Packets that matched before the filter was attached (any port) are thrown away.
        self.sock.setblocking(False)
        try:
            while True:
                self.sock.recv(65536)
        except BlockingIOError:
            pass
        self.sock.settimeout(0.2)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            while not self.stopping.is_set():
                try:
                    data, anc, _, addr = self.sock.recvmsg(2048, 64)
                except socket.timeout:
                    continue
                if addr[2] != PACKET_OUTGOING or len(data) < 54:
                    continue
                ts = None
                for level, kind, value in anc:
                    if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                        sec, ns = struct.unpack("qq", value[:16])
                        ts = sec + ns / 1e9
                if ts is None:
                    continue
                tcp = 14 + (data[14] & 0x0F) * 4
                sport, dport, seq = struct.unpack("!HHI", data[tcp:tcp + 8])
                flags = data[tcp + 13]
                if dport != self.port:
                    continue
                if flags & 0x02 and not flags & 0x10:
                    self.syns.append((ts, sport))
                    continue
                payload = data[tcp + (data[tcp + 12] >> 4) * 4:]
                if payload.startswith((b"GET ", b"HEAD ")):
                    self.heads.append((ts, sport, seq, bytes(payload[:1024])))
        except OSError as e:  # the socket closed under us, or the kernel refused: no wire figures
            self.error = str(e)

    def stop(self):
        """Stops reading; returns the kernel's (packets, drops) for this socket."""
        self.stopping.set()
        self.thread.join(timeout=5)
        try:
            packets, drops = struct.unpack("II", self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        except OSError:
            packets, drops = -1, -1
        self.sock.close()
        return packets, drops

    def requests(self):
        """One dict per request: host, method, path, t (unix s), cport, conn_seq (0 = first
        request on its connection), syn_t (when its connection was opened, if seen)."""
        syn_by_port = defaultdict(list)
        for ts, sport in sorted(self.syns):
            syn_by_port[sport].append(ts)
        seen, out, per_conn = set(), [], defaultdict(int)
        for ts, sport, seq, head in sorted(self.heads):
            if (sport, seq) in seen:  # a retransmission
                continue
            seen.add((sport, seq))
            text = head.decode("latin-1")
            line, _, rest = text.partition("\r\n")
            parts = line.split(" ")
            if len(parts) < 3:
                continue
            host = ""
            for h in rest.split("\r\n"):
                if h[:5].lower() == "host:":
                    host = h[5:].strip().lower().rsplit(":", 1)[0]
                    break
            syn_t = max((s for s in syn_by_port.get(sport, []) if s <= ts), default=None)
            conn = (sport, syn_t)
            out.append({"host": host, "method": parts[0], "path": parts[1], "t": ts, "cport": sport,
                        "conn_seq": per_conn[conn], "syn_t": syn_t})
            per_conn[conn] += 1
        return out


def wire_available():
    if os.geteuid() != 0 or not hasattr(socket, "AF_PACKET"):
        return False
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003)).close()
        return True
    except OSError:
        return False


def match_wire(reqs, wire_reqs):
    """Gives each log entry its wire request ("wire"), matched by host, method and path in order."""
    by_key = defaultdict(list)
    for w in wire_reqs:
        by_key[(w["host"], w["method"], w["path"])].append(w)
    taken = defaultdict(int)
    for r in sorted(reqs, key=lambda r: r["start_ms"]):
        key = (r["host"], r["method"], r["path"])
        i = taken[key]
        r["wire"] = by_key[key][i] if i < len(by_key[key]) else None
        taken[key] = i + 1


# ---------------------------------------------------------------------------------------------
# One run

def one_run(args, label, hog_n):
    """Starts the server, the hog (if any), both audits; returns what the analysis needs."""
    main_hosts = ["site%d.test" % i for i in range(args.hosts)]
    slow_hosts = ["site%d.test" % i for i in range(args.hosts, args.hosts + args.slow_hosts)]
    d = tempfile.mkdtemp(prefix="shoal-politeness-", dir=args.logs)
    run = Run(d)
    log_path = os.path.join(d, "requests.jsonl")
    out = {"label": label, "dir": d, "main_hosts": main_hosts, "slow_hosts": slow_hosts}
    wire = None
    try:
        server, port = start_testsite(run, args.bin_dir, args.hosts + args.slow_hosts, args.pages, args.links,
                                      log_path, args.timeout + 120)
        if args.server_nice:
            for task in os.listdir("/proc/%d/task" % server.pid):  # every thread of its runtime
                os.setpriority(os.PRIO_PROCESS, int(task), args.server_nice)
        if args.wire:
            wire = Wire(port)
        hogs = [run.start("hog%d" % i, ["python3", "-c", HOGS[args.hog_kind], str(args.timeout + 30)])
                for i in range(hog_n)]
        if hogs:
            time.sleep(args.hog_lead_s)  # every hog at full speed before the first request
        common = ["--in-flight", str(args.in_flight)]
        audits = [("A", audit_args(args.bin_dir, d, "A", main_hosts, port,
                                   common + ["--gap-ms", str(args.gap_ms)]))]
        if slow_hosts:
            audits.append(("B", audit_args(args.bin_dir, d, "B", slow_hosts, port,
                                           common + ["--gap-ms", str(args.slow_gap_ms),
                                                     "--max-pages", str(args.slow_pages)])))
        out["commands"] = {name: a for name, a in audits}
        def others_cpu():
            return sum(fleet.proc_cpu(h.pid) or 0.0 for h in hogs), fleet.proc_cpu(server.pid) or 0.0
        c0, j0, t0, u0 = others_cpu(), fleet.machine_jiffies(), time.monotonic(), time.time()
        started = [(name, run.start("shoal-" + name, a), time.monotonic()) for name, a in audits]
        deadline = t0 + args.timeout
        out["audits"] = {}
        for name, p, t_start in started:
            code, cpu, t_end = wait_with_rusage(p, deadline)
            if code != 0:
                raise SystemExit("shoal audit %s failed (%d); see %s" % (name, code,
                                                                        os.path.join(d, "shoal-%s.log" % name)))
            out["audits"][name] = {"wall": t_end - t_start, "cpu": cpu}
        t1, j1, c1 = time.monotonic(), fleet.machine_jiffies(), others_cpu()
        out["window"] = (t1 - t0, j1[0] - j0[0], j1[1] - j0[1], u0)
        out["hog_cpu"], out["server_cpu"] = c1[0] - c0[0], c1[1] - c0[1]
        for h in hogs:
            run.stop(h, timeout=5)
        summary = stop_testsite(server)
        out["origin_unix_ms"] = int(summary.get("origin_unix_ms", "0"))
        if wire is not None:
            out["wire_stats"] = wire.stop()
            out["wire_error"] = wire.error
            out["wire"] = wire.requests()
            with open(os.path.join(d, "wire.jsonl"), "w") as f:
                f.writelines(json.dumps(w) + "\n" for w in out["wire"])
            wire = None
    finally:
        if wire is not None:
            wire.stop()
        run.stop_all()
    out["reqs"] = fleet.read_log(log_path)
    return out


# ---------------------------------------------------------------------------------------------
# Figures

def p1(values):
    """1st percentile, linear interpolation between the closest ranks (numpy's default)."""
    if len(values) < 2:
        return values[0] if values else None
    return statistics.quantiles(values, n=100, method="inclusive")[0]


def gaps_of(starts):
    starts = sorted(starts)
    return [b - a for a, b in zip(starts, starts[1:])]


def fmt(v, spec="%.1f"):
    return "-" if v is None else spec % v


def analyse(args, r):
    """Per-host figures and the short gaps of one run."""
    gap_in_force = {h: args.gap_ms for h in r["main_hosts"]}
    gap_in_force.update({h: args.slow_gap_ms for h in r["slow_hosts"]})
    # The server prints its origin truncated to the millisecond: take the middle of that ms.
    origin = (r["origin_unix_ms"] + 0.5) / 1000.0
    reqs = [q for q in r["reqs"] if q["host"] in gap_in_force]
    wire_on = r["wire_on"] = "wire" in r
    if wire_on:
        match_wire(reqs, [w for w in r["wire"] if w["host"] in gap_in_force])
    by_host = defaultdict(list)
    for q in reqs:
        by_host[q["host"]].append(q)
    t_first = min(q["start_ms"] for q in reqs)
    rows, shorts, all_pairs = {}, [], []
    for host in r["main_hosts"] + r["slow_hosts"]:
        rs = sorted(by_host.get(host, []), key=lambda q: q["start_ms"])
        g = gap_in_force[host]
        gaps = gaps_of([q["start_ms"] for q in rs])
        peak, _ = fleet.peak_and_violations(rs, args.in_flight)
        row = {"gap": g, "reqs": len(rs), "min": min(gaps) if gaps else None, "p1": p1(gaps),
               "below": sum(1 for x in gaps if x < TARGET * g), "peak": peak}
        ws = [q["wire"]["t"] * 1000 for q in rs if q.get("wire")]
        if wire_on:
            wg = gaps_of(ws)
            row.update({"wmin": min(wg) if wg else None, "wbelow": sum(1 for x in wg if x < TARGET * g),
                        "matched": len(ws), "newconn": sum(1 for q in rs if q.get("wire") and
                                                           q["wire"]["conn_seq"] == 0)})
        rows[host] = row
        prev = None
        for a, b in zip(rs, rs[1:]):
            pair = {"host": host, "gap_in_force": g, "log": b["start_ms"] - a["start_ms"],
                    "t": (b["start_ms"] - t_first) / 1000.0, "a": a, "b": b,
                    "in_flight": sum(1 for q in rs if q["start_ms"] <= b["start_ms"] and
                                     (q.get("end_ms") is None or q["end_ms"] > b["start_ms"]))}
            if a.get("wire") and b.get("wire"):
                pair["wire"] = (b["wire"]["t"] - a["wire"]["t"]) * 1000
                pair["lag_a"] = origin * 1000 + a["start_ms"] - a["wire"]["t"] * 1000
                pair["lag_b"] = origin * 1000 + b["start_ms"] - b["wire"]["t"] * 1000
            if prev is not None:
                pair["prev_log"], pair["prev_wire"] = prev["log"], prev.get("wire")
            prev = pair
            all_pairs.append(pair)
            if pair["log"] < TARGET * g or pair.get("wire", g) < TARGET * g:
                shorts.append(pair)
    return rows, shorts, all_pairs, reqs


def print_run(args, r, cores):
    rows, shorts, pairs, reqs = analyse(args, r)
    r["rows"], r["shorts"], r["pairs"] = rows, shorts, pairs
    wall, busy, total, _ = r["window"]
    ours = sum(a["cpu"] for a in r["audits"].values())
    busy_s = busy / fleet.CLK_TCK
    print()
    print("== run %s: %d hosts x %d pages at gap %d ms + %d hosts at gap %d ms (--gap-ms, at most %d pages), "
          "in flight %d ==" % (r["label"], args.hosts, args.pages, args.gap_ms, args.slow_hosts, args.slow_gap_ms,
                               args.slow_pages, args.in_flight))
    print("machine busy %.0f %% of %d cores over the %.1f s of the audits: shoal %.2f cores, test server %.2f, "
          "hog %.2f, other processes %.2f"
          % (100.0 * busy / max(total, 1), cores, wall, ours / wall, r["server_cpu"] / wall, r["hog_cpu"] / wall,
             max(0.0, busy_s - ours - r["server_cpu"] - r["hog_cpu"]) / wall))
    for name, hosts in (("A", r["main_hosts"]), ("B", r["slow_hosts"])):
        if name not in r["audits"]:
            continue
        a = r["audits"][name]
        hs = set(hosts)
        mine = [q for q in reqs if q["host"] in hs]
        pages = sum(1 for q in mine if q["method"] == "GET" and q.get("status") == 200 and
                    (q["path"] == "/" or q["path"].startswith("/p/")))
        floor = max(((rows[h]["reqs"] - 1) * rows[h]["gap"] / 1000.0 for h in hosts if rows[h]["reqs"]), default=0)
        a.update({"pages": pages, "pps": pages / a["wall"]})
        print("audit %s (%d hosts): %d pages, %d requests in %.2f s = %.1f pages/s; shoal CPU %.2f s; the pace "
              "alone needs %.1f s (the busiest host's requests x its gap)"
              % (name, len(hosts), pages, len(mine), a["wall"], a["pps"], a["cpu"], floor))
    wire_on = r["wire_on"]
    head = "%-12s %6s %5s %9s %9s %6s %6s" % ("host", "gap", "reqs", "min gap", "p1 gap", "<97%", "in fl.")
    if wire_on:
        head += " | %9s %6s %7s" % ("wire min", "<97%", "new cx")
    print(head)
    for host, row in rows.items():
        line = "%-12s %6d %5d %9s %9s %6d %6d" % (host, row["gap"], row["reqs"], fmt(row["min"]), fmt(row["p1"]),
                                                row["below"], row["peak"])
        if wire_on:
            line += " | %9s %6d %7d" % (fmt(row["wmin"]), row["wbelow"], row["newconn"])
        print(line)
    have = [(h, x) for h, x in rows.items() if x["min"] is not None]
    worst_h, worst = min(have, key=lambda hx: hx[1]["min"] / hx[1]["gap"])
    failing = [h for h, x in have if x["min"] < TARGET * x["gap"]]
    r["worst"] = (worst_h, worst["min"], worst["gap"])
    r["pass"] = not failing
    print("worst host (server's view): %s, min gap %.1f ms = %.1f %% of its %d ms"
          % (worst_h, worst["min"], 100.0 * worst["min"] / worst["gap"], worst["gap"]))
    print("target, every host >= 97 %% of its gap (server's view): %s%s"
          % ("PASS" if not failing else "FAIL", "" if not failing else " (%d of %d hosts: %s)"
             % (len(failing), len(have), " ".join(failing))))
    if wire_on:
        print_wire(args, r, rows, shorts, pairs, reqs)
    elif shorts:
        print_shorts(shorts[:args.show], False)


def print_wire(args, r, rows, shorts, pairs, reqs):
    packets, drops = r["wire_stats"]
    matched = sum(1 for q in reqs if q.get("wire"))
    print("wire: %d of %d logged requests matched to their packets (%d packets read, %d dropped by the kernel%s)"
          % (matched, len(reqs), packets, drops, "; reader error: " + r["wire_error"] if r["wire_error"] else ""))
    wfail = [h for h, x in rows.items() if x.get("wmin") is not None and x["wmin"] < TARGET * x["gap"]]
    wworst = min((h for h, x in rows.items() if x.get("wmin") is not None),
                 key=lambda h: rows[h]["wmin"] / rows[h]["gap"], default=None)
    r["wpass"] = not wfail
    if wworst:
        x = rows[wworst]
        r["wworst"] = (wworst, x["wmin"], x["gap"])
        print("worst host (wire, as Shoal sent): %s, min gap %.1f ms = %.1f %% of its %d ms; hosts below 97 %%: %d"
              % (wworst, x["wmin"], 100.0 * x["wmin"] / x["gap"], x["gap"], len(wfail)))
    lags = sorted(p["lag_b"] for p in pairs if "lag_b" in p)
    if lags:
        print("server's lag, log start - packet sent: median %.2f ms, p99 %.2f, max %.2f (origin known to +-0.5 ms)"
              % (statistics.median(lags), lags[min(len(lags) - 1, int(len(lags) * 0.99))], lags[-1]))
    with_w = [p for p in pairs if "wire" in p]
    for which, label in (("a", "earlier"), ("b", "later")):
        for name, new in (("a new", True), ("a reused", False)):
            ps = [p for p in with_w if (p[which]["wire"]["conn_seq"] == 0) == new]
            if ps:
                share = [p["wire"] / p["gap_in_force"] for p in ps]
                print("gaps whose %s request went on %s connection: %d, wire min %.1f %% of the gap, below 97 %%: %d"
                      % (label, name, len(ps), 100 * min(share), sum(1 for s in share if s < TARGET)))
    first = [p for p in with_w if p["a"]["path"] == "/robots.txt" and p["a"]["wire"]["conn_seq"] == 0]
    setup = sorted((p["a"]["wire"]["t"] - p["a"]["wire"]["syn_t"]) * 1000 for p in first if p["a"]["wire"]["syn_t"])
    if first and setup:
        share = sorted(p["wire"] / p["gap_in_force"] for p in first)
        print("robots.txt (each host's first request, on a new connection) to the next request, wire: min %.1f %% "
              "of the gap, median %.1f %%; SYN to the robots.txt request: median %.2f ms, max %.2f"
              % (100 * share[0], 100 * statistics.median(share), statistics.median(setup), setup[-1]))
        short = min((p for p in first if p["a"]["wire"]["syn_t"]), key=lambda p: p["wire"] / p["gap_in_force"])
        syn = (short["a"]["wire"]["t"] - short["a"]["wire"]["syn_t"]) * 1000
        print("  the shortest (%s): %.1f ms after a robots.txt sent %.2f ms after its SYN; gap + that = %.1f ms"
              % (short["host"], short["wire"], syn, short["wire"] + syn))
    if not shorts:
        print("short gaps (server's log or wire below 97 %): none")
        return
    sent_short = sum(1 for p in shorts if p.get("wire", 1e9) < TARGET * p["gap_in_force"])
    log_only = sum(1 for p in shorts if p["log"] < TARGET * p["gap_in_force"] and
                   p.get("wire", 0) >= TARGET * p["gap_in_force"])
    after_new = sum(1 for p in shorts if p["a"].get("wire") and p["a"]["wire"]["conn_seq"] == 0)
    a_late = sum(1 for p in shorts if p.get("lag_a", 0) - p.get("lag_b", 0) > 0.03 * p["gap_in_force"])
    times = sorted(p["t"] for p in shorts)
    clusters, last = [], None
    for t in times:
        if last is None or t - last > 0.1:
            clusters.append([])
        clusters[-1].append(t)
        last = t
    print("short gaps: %d; sent short by Shoal (wire below 97 %%): %d; short in the log only: %d; earlier request "
          "opened a new connection: %d; earlier request logged > 3 %% of the gap later than the later one: %d"
          % (len(shorts), sent_short, log_only, after_new, a_late))
    print("in time: %d clusters (short gaps within 100 ms of each other), the largest %d gaps at %.1f s"
          % (len(clusters), max(len(c) for c in clusters), max(clusters, key=len)[0]))
    print_shorts(shorts[:args.show], True)
    if len(shorts) > args.show:
        print("... %d more (--show)" % (len(shorts) - args.show))


def print_shorts(shorts, wire_on):
    print("%7s %-12s %6s %8s %8s %8s %8s %7s %7s %4s %4s %5s  %s" % (
        "t s", "host", "gap", "log ms", "wire ms", "prev log", "prev wr", "lag1", "lag2", "new1", "new2", "infl",
        "requests"))
    for p in sorted(shorts, key=lambda p: p["t"]):
        wa, wb = p["a"].get("wire"), p["b"].get("wire")
        print("%7.2f %-12s %6d %8.1f %8s %8s %8s %7s %7s %4s %4s %5d  %s -> %s" % (
            p["t"], p["host"], p["gap_in_force"], p["log"], fmt(p.get("wire")), fmt(p.get("prev_log")),
            fmt(p.get("prev_wire")), fmt(p.get("lag_a"), "%.2f"),
            fmt(p.get("lag_b"), "%.2f"), "-" if not wa else ("yes" if wa["conn_seq"] == 0 else "no"),
            "-" if not wb else ("yes" if wb["conn_seq"] == 0 else "no"), p["in_flight"],
            p["a"]["path"], p["b"]["path"]))


def print_summary(args, results):
    print()
    print("== summary over %d run(s) each ==" % len(results["idle"]))
    hosts = list(results["idle"][0]["rows"].keys())
    wire_on = results["idle"][0]["wire_on"]
    head = "%-12s %6s %11s %11s" % ("host", "gap", "idle min", "loaded min")
    if wire_on:
        head += " | %11s %11s" % ("idle wire", "loaded wire")
    print(head + "   (smallest gap over the runs, ms)")
    for h in hosts:
        def least(kind, key):
            vs = [r["rows"][h][key] for r in results[kind] if r["rows"][h].get(key) is not None]
            return min(vs) if vs else None
        line = "%-12s %6d %11s %11s" % (h, results["idle"][0]["rows"][h]["gap"], fmt(least("idle", "min")),
                                         fmt(least("loaded", "min")))
        if wire_on:
            line += " | %11s %11s" % (fmt(least("idle", "wmin")), fmt(least("loaded", "wmin")))
        print(line)
    for kind in ("idle", "loaded"):
        rs = results[kind]
        pooled = [p["log"] / p["gap_in_force"] for r in rs for p in r["pairs"]]
        worst = min((r["worst"] for r in rs), key=lambda w: w[1] / w[2])
        print("%-6s: target %s, met in %d of %d runs; worst host %s %.1f ms = %.1f %% of %d ms; all gaps pooled: "
              "p1 %.1f %% of the gap, %d of %d below 97 %%"
              % (kind, "PASS" if all(r["pass"] for r in rs) else "FAIL", sum(1 for r in rs if r["pass"]), len(rs),
                 worst[0], worst[1], 100 * worst[1] / worst[2], worst[2], 100 * p1(pooled),
                 sum(1 for s in pooled if s < TARGET), len(pooled)))
        if results["idle"][0]["wire_on"]:
            wpooled = [p["wire"] / p["gap_in_force"] for r in rs for p in r["pairs"] if "wire" in p]
            wworst = min((r["wworst"] for r in rs), key=lambda w: w[1] / w[2])
            print("%-6s  wire, as Shoal sent: every host >= 97 %% in %d of %d runs; worst host %s %.1f ms = %.1f %% "
                  "of %d ms; pooled p1 %.1f %%, %d below 97 %%"
                  % ("", sum(1 for r in rs if r["wpass"]), len(rs), wworst[0], wworst[1], 100 * wworst[1] / wworst[2],
                     wworst[2], 100 * p1(wpooled), sum(1 for s in wpooled if s < TARGET)))
    for name in ("A", "B"):
        if name not in results["idle"][0]["audits"]:
            continue
        idle = [r["audits"][name]["pps"] for r in results["idle"]]
        loaded = [r["audits"][name]["pps"] for r in results["loaded"]]
        mi, ml = statistics.median(idle), statistics.median(loaded)
        print("throughput audit %s: idle %s pages/s (median %.2f), loaded %s (median %.2f); loaded/idle %.3f"
              % (name, " ".join("%.2f" % x for x in idle), mi, " ".join("%.2f" % x for x in loaded), ml, ml / mi))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1, help="idle+loaded pairs (default 1)")
    ap.add_argument("--hosts", type=int, default=20, help="hosts at --gap-ms (default 20)")
    ap.add_argument("--pages", type=int, default=60, help="pages per host (default 60)")
    ap.add_argument("--links", type=int, default=5, help="links per page (default 5)")
    ap.add_argument("--gap-ms", type=int, default=300, help="gap of audit A (default 300, Shoal's default)")
    ap.add_argument("--in-flight", type=int, default=4, help="in flight per host (default 4, Shoal's default)")
    ap.add_argument("--slow-hosts", type=int, default=3, help="hosts of audit B at --slow-gap-ms (default 3; 0: none)")
    ap.add_argument("--slow-gap-ms", type=int, default=1000, help="gap of audit B (default 1000, as Crawl-delay: 1)")
    ap.add_argument("--slow-pages", type=int, default=20, help="--max-pages of audit B (default 20)")
    ap.add_argument("--hog", type=int, default=os.cpu_count(), help="busy python3 processes in the loaded run "
                    "(default one per core: %d)" % os.cpu_count())
    ap.add_argument("--hog-kind", choices=sorted(HOGS), default="spin",
                    help="spin: a busy loop (default); memory: copies 64 MiB buffers (bandwidth, page faults)")
    ap.add_argument("--hog-lead-s", type=float, default=1.0, help="seconds the hog runs before the audits (1)")
    ap.add_argument("--server-nice", type=int, default=0,
                    help="nice value of the test server's threads (default 0: the hog's; -10 with root "
                         "approximates a site on another machine)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per audit at most (300)")
    ap.add_argument("--no-wire", dest="wire", action="store_false", help="do not read packets off lo")
    ap.add_argument("--show", type=int, default=25, help="short gaps listed per run (25)")
    ap.add_argument("--bin-dir", default=fleet.BIN_DIR,
                    help="where shoal and shoal-testsite are (default target/dist)")
    ap.add_argument("--logs", default=None, help="keep every run's logs and request log under this directory")
    args = ap.parse_args()
    for b in ("shoal", "shoal-testsite"):
        if not os.path.exists(os.path.join(args.bin_dir, b)):
            raise SystemExit("%s missing: %s" % (os.path.join(args.bin_dir, b), fleet.BUILD))
    if args.wire and not wire_available():
        print("wire: not available (needs root and AF_PACKET); server's view only")
        args.wire = False
    if args.logs:
        os.makedirs(args.logs, exist_ok=True)
    cores = os.cpu_count()
    t_start = time.monotonic()
    shoal = os.path.join(args.bin_dir, "shoal")
    version = subprocess.run([shoal, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    print("machine: %d cores; reference loop (python3, 20M iterations) %.2f s"
          % (cores, fleet.reference_loop()))
    j0 = fleet.machine_jiffies()
    time.sleep(1)
    j1 = fleet.machine_jiffies()
    print("machine busy before the runs: %.0f %% of %d cores (1 s)"
          % (100.0 * (j1[0] - j0[0]) / max(1, j1[1] - j0[1]), cores))
    print("binaries: %s (%s, built %s), %s"
          % (shoal, version, time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(shoal))),
             os.path.join(args.bin_dir, "shoal-testsite")))
    print("loaded runs: %d busy python3 processes (%s) at normal priority, started %.1f s before the audits"
          % (args.hog, args.hog_kind, args.hog_lead_s))
    print("test server at nice %d" % args.server_nice)
    print("wire view: %s" % ("on (packets on lo, kernel send timestamps)" if args.wire else "off"))
    results = {"idle": [], "loaded": []}
    for i in range(args.runs):
        for kind, hog_n in (("idle", 0), ("loaded", args.hog)):
            r = one_run(args, "%d %s" % (i + 1, kind), hog_n)
            print_run(args, r, cores)
            results[kind].append(r)
            for key in ("reqs", "wire"):
                r.pop(key, None)
            if not args.logs:
                shutil.rmtree(r["dir"], ignore_errors=True)
    print_summary(args, results)
    if args.logs:
        print("logs and request logs kept under %s" % args.logs)
    print("bench time: %.0f s" % (time.monotonic() - t_start))


if __name__ == "__main__":
    fleet.script(main)
