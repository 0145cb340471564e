#!/usr/bin/env python3
"""Shoal CPU benchmark (issue 13 items 1, 3 and 4): what a request costs in CPU, where Redis
spends its time, how far one machine scales, and the same figures for an older revision.

Printed, for the current build and (with --rev) a base revision built in a git worktree, one
after the other on the same machine and the same farm, with the ratio current/base:

  A. `shoal audit` (one process, embedded frontier, no Redis) of a farm served by
     target/dist/shoal-testsite: --hosts (200) x --pages (50), gap 0, --in-flight 4 per host,
     --ip-in-flight 16. Measured from outside: requests (the test server's summary), CPU seconds
     of the shoal process (utime+stime from os.wait4's rusage), CPU ms per request, peak RSS
     (ru_maxrss), the most files it had open (/proc/PID/fd every 100 ms: its connections), the
     most requests the server saw in flight at one host, wall time of the process, pages per
     second. --runs (3) runs per build,
     alternating base and current; medians printed, with the spread of CPU ms per request.
  B. The same farm distributed: a private redis-server (unix socket), `shoal coordinator` and 1,
     then 2 `shoal worker`s (--workers 1,2), submitted with `shoal submit --wait`, --runs each.
     Per process (coordinator, each worker, redis-server) CPU seconds and CPU ms per request over
     the audit's created..finished window (/proc/PID/stat sampled every 50 ms and interpolated
     to the window; Redis' own from INFO cpu used_cpu_user+used_cpu_sys, sampled the same way),
     peak RSS (VmHWM from /proc/PID/status just before stopping), pages per second; Redis INFO
     commandstats per command (calls, usec, usec per call) as a delta over the submit, Redis
     commands per request, and Redis' SLOWLOG at its default threshold (read, never
     reconfigured). MONITOR is never attached.
  C. Scaling: `shoal audit --file` of 10k, 20k and 40k unreachable sites (sNNNNNN.invalid with
     --no-dns: no name is looked up, every site ends at once with a start_unreachable finding),
     each bounded by --scale-limit-s (120 s, then SIGTERM; the sites done by then are counted),
     wall time and seconds per 1,000 sites (target: 40k in under 30 s); --submit-sites (100,000)
     submitted to a coordinator with --scale-workers (1) workers (`shoal submit --file`, not
     waiting; target under 10 s); `GET /v1/audits/{id}` of that audit (http.client, a fresh
     connection each, body read), --status-calls (20) during it and 20 after it (target: under
     50 ms), the audit cancelled when it is not done --scale-wait-s (60) after the submit began.
  D. With --rev REV every part runs with the base binaries, then with the current ones; the test
     server is the current checkout's for both, so the farm is identical. The audit databases of
     the two `shoal audit` runs, of each pair of distributed runs, of every run against the first
     of its build, of `shoal audit` against the distributed runs, and of the largest scale run
     (when both finished) are compared per site: the set of (url, status, kind) in `pages` and
     the multiset of (code, url) in `findings`, the test server's port replaced by PORT and the
     soft-404 probe's random path by RANDOM. Any difference is printed and the exit status is 1.
  E. The machine: cores, load average, the reference loop (fleet.reference_loop: python3, 20M
     iterations) at the start and the end, and per run how busy the machine was and how many
     cores processes this script did not start took (a build on a shared machine shows here).

Only 127.0.0.1 and unix sockets are used; every wait is bounded (--timeout-s), every process is
stopped in a `finally`. The binaries are copied at the start, so a rebuild of target/ during
the run changes nothing. A run with the defaults and --rev takes about 10 minutes on 2 cores.
Binaries are of the `dist` profile (fat LTO), the one the image and the packages ship, for the
current build and for --rev alike. Run from the repository root after
`cargo build --profile dist -p shoal -p shoal-tests`:
    python3 bench/cpu.py [--rev 04b3203] [--hosts 200] [--pages 50] [--skip-scale] ...
--base-bin PATH takes a prebuilt binary as the base instead of --rev (copy target/dist/shoal
aside before a change, rebuild, and compare the two without building a second target folder).
--bin-dir DIR measures the current binaries of another profile, e.g. target/release (the README's
build) against --base-bin of a dist binary: what the profile itself costs.
"""
import argparse
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import tempfile
import time
from collections import Counter

import fleet
from fleet import (Procs, Redis, machine_jiffies, proc_cpu, start_redis, stop_server, submit,
                   wait_for)

NS = "cpu"
ROOT = fleet.ROOT
BASE_DIR = "/tmp/shoal-cpu-base"
OWN_COMMANDS = {"info"}  # this script's own Redis commands inside a window; never counted


# ---------------------------------------------------------------------------------------------
# Builds

class Build:
    """One pair of binaries: shoal (measured) and the label it is printed under."""

    def __init__(self, label, shoal, rev):
        self.label, self.shoal, self.rev = label, shoal, rev


def git(*args, cwd=ROOT):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120).stdout.strip()


def sha256_short(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:12]


def build_base(rev, timeout):
    """Builds `rev` in the worktree BASE_DIR (created if absent, moved to `rev` if it is at
    another commit) with its own target dir; returns (commit, path of its shoal binary)."""
    full = git("rev-parse", "--verify", rev + "^{commit}")
    if not full:
        raise SystemExit("--rev %s: no such commit" % rev)
    if not os.path.isdir(BASE_DIR):
        r = subprocess.run(["git", "worktree", "add", "--detach", BASE_DIR, full], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise SystemExit("git worktree add failed: %s" % r.stderr)
    elif git("rev-parse", "HEAD", cwd=BASE_DIR) != full:
        r = subprocess.run(["git", "checkout", "--detach", full], cwd=BASE_DIR,
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise SystemExit("git checkout %s in %s failed: %s" % (rev, BASE_DIR, r.stderr))
    target = os.path.join(BASE_DIR, "target")
    log = os.path.join(BASE_DIR, "cpu-bench-build.log")
    print("building %s (%s) in %s (log %s) ..." % (rev, full[:10], BASE_DIR, log), flush=True)
    t0 = time.monotonic()
    with open(log, "ab") as f:
        r = subprocess.run(["cargo", "build", "--profile", "dist", "-p", "shoal", "-p", "shoal-tests"],
                           cwd=BASE_DIR, stdout=f, stderr=f, timeout=timeout,
                           env={**os.environ, "CARGO_TARGET_DIR": target})
    if r.returncode != 0:
        raise SystemExit("building %s failed (%d); see %s" % (rev, r.returncode, log))
    print("  built in %.0f s (nothing to do if it was built before)" % (time.monotonic() - t0))
    # Revisions before [profile.dist] existed fail here: build those with --release by hand and
    # pass the binary as --base-bin (their release profile was the fat-LTO one).
    return full, os.path.join(target, "dist", "shoal")


def snapshot(path, d, name):
    """A private copy of a binary, so a rebuild of target/ during the run changes nothing."""
    dst = os.path.join(d, name)
    shutil.copy2(path, dst)
    return dst


# ---------------------------------------------------------------------------------------------
# Readings

def hwm_kib(pid):
    """VmHWM (peak resident set) of a live process in KiB, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def commandstats(r):
    """{command: (calls, usec, failed)} from INFO commandstats."""
    out = {}
    for k, v in r.info("commandstats").items():
        if k.startswith("cmdstat_"):
            f = dict(x.split("=", 1) for x in v.split(","))
            out[k[len("cmdstat_"):]] = (int(f["calls"]), int(f["usec"]),
                                        int(f.get("failed_calls", 0)))
    return out


def stats_delta(a, b):
    out = {}
    for c, (n, us, fail) in b.items():
        n0, us0, f0 = a.get(c, (0, 0, 0))
        if n - n0 > 0 and c not in OWN_COMMANDS:
            out[c] = (n - n0, us - us0, fail - f0)
    return out


def slowlog(r):
    """Redis' SLOWLOG at its default threshold (slowlog-log-slower-than, 10 ms unless configured
    otherwise; nothing is changed): (threshold usec, [(usec, command, first argument)])."""
    th = r(b"CONFIG", b"GET", b"slowlog-log-slower-than")
    out = []
    for e in r(b"SLOWLOG", b"GET", b"1000") or []:
        args = [a.decode(errors="replace") if isinstance(a, bytes) else str(a) for a in e[3]]
        out.append((int(e[2]), args[0].lower() if args else "?",
                    args[1][:12] if len(args) > 1 else "", int(e[1])))
    return int(th[1]) if th and len(th) > 1 else None, out


def fmt_slowlog(sl, t0_unix=None):
    """The slow entries by command (evalsha by its script's SHA1 prefix: Redis knows no names),
    with the time of the slowest since t0_unix if given (the log has whole seconds)."""
    th, entries = sl
    if not entries:
        return "none over %s usec" % th
    by = Counter()
    top = {}
    for us, cmd, arg, ts in entries:
        k = cmd + (" " + arg if cmd in ("evalsha", "eval", "fcall") else "")
        by[k] += 1
        top[k] = max(top.get(k, (0, 0)), (us, ts))
    return "%d over %s usec: %s" % (len(entries), th, ", ".join(
        "%s x%d (max %.1f ms%s)" % (k, n, top[k][0] / 1000,
                                    "" if t0_unix is None else " at +%.0f s" % (top[k][1] - t0_unix))
        for k, n in by.most_common(6)))


def redis_cpu(r):
    i = r.info("cpu")
    return float(i["used_cpu_user"]) + float(i["used_cpu_sys"])


class Sampler(fleet.Sampler):
    """Every `period` s: wall time (ms since the epoch), CPU s per named process (/proc), Redis'
    own CPU (INFO cpu), the commandstats calls total and the machine's jiffies; `at(t_ms)` gives
    ({name: cpu}, calls, busy, total)."""

    def __init__(self, pids, sock, period=0.05):
        super().__init__(period)
        self.pids = pids
        self.redis = Redis(sock)

    def sample(self):
        t = time.time() * 1000
        cpu = {n: proc_cpu(p) for n, p in self.pids.items()}
        cpu["redis_info"] = redis_cpu(self.redis)
        calls = sum(n for c, (n, _, _) in commandstats(self.redis).items() if c not in OWN_COMMANDS)
        busy, total = machine_jiffies()
        return (t, cpu, calls, busy, total)

    def close(self):
        self.redis.close()


class Busy:
    """How busy the machine was between start() and stop(), and the cores other processes took
    (machine busy minus the CPU of the processes named, minus this script's own)."""

    def __init__(self):
        self.t0 = time.monotonic()
        self.b0, self.j0 = machine_jiffies()
        self.own0 = sum(os.times()[:2])

    def stop(self, ours_cpu_s):
        wall = max(time.monotonic() - self.t0, 1e-3)
        b1, j1 = machine_jiffies()
        busy = (b1 - self.b0) / max(j1 - self.j0, 1)
        own = sum(os.times()[:2]) - self.own0
        ncpu = os.cpu_count()
        return busy, max(busy * ncpu - (ours_cpu_s + own) / wall, 0.0)


def run_child(args, log, timeout, env=None, grace=30):
    """Runs a command as a child, waits with os.wait4 (bounded by `timeout`), returns
    {rc, wall, user, sys, maxrss_kib, timed_out, term_unix_ms}. On timeout it gets SIGTERM
    (shoal saves what it has and exits 130), then SIGKILL after `grace` s; `wall` is then the
    time to the SIGTERM."""
    with open(log, "ab") as f:
        p = subprocess.Popen(args, stdout=f, stderr=f, stdin=subprocess.DEVNULL,
                             env={**os.environ, **(env or {})})
    t0 = time.monotonic()
    deadline = t0 + timeout
    killed, t_term, term_ms = False, None, None
    max_fds, next_fds = 0, t0
    try:
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            if time.monotonic() >= next_fds:
                # Open files (sockets: one per connection kept open), sampled every 100 ms.
                try:
                    max_fds = max(max_fds, len(os.listdir("/proc/%d/fd" % p.pid)))
                except OSError:
                    pass
                next_fds = time.monotonic() + 0.1
            if time.monotonic() > deadline and not killed:
                p.send_signal(signal.SIGTERM)
                killed, t_term, term_ms = True, time.monotonic(), time.time() * 1000
                deadline = t_term + grace
            elif killed and time.monotonic() > deadline:
                p.kill()
            time.sleep(0.02)
    except BaseException:
        if p.returncode is None:
            p.kill()
            p.wait(10)
        raise
    p.returncode = os.waitstatus_to_exitcode(status)
    end = time.monotonic()
    return {"rc": p.returncode, "wall": (t_term if killed else end) - t0, "user": ru.ru_utime,
            "sys": ru.ru_stime, "cpu": ru.ru_utime + ru.ru_stime, "maxrss_kib": ru.ru_maxrss,
            "timed_out": killed, "term_unix_ms": term_ms, "stop_s": end - t_term if killed else 0,
            "max_fds": max_fds}


# ---------------------------------------------------------------------------------------------
# Audit databases

SOFT_404 = re.compile(r"shoal-soft-404-check-[0-9a-f]+")


def db_content(path, port):
    """{start_url: (set of (url, status, kind), Counter of (code, url))} with ':PORT' for the
    test server's port and RANDOM for the soft-404 probe's random path (a new one every audit)."""
    def p(s):
        if not s:
            return s
        if port:
            s = s.replace(":%d" % port, ":PORT")
        return SOFT_404.sub("shoal-soft-404-check-RANDOM", s)
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        sites = {sid: p(u) for sid, u in con.execute("SELECT id, start_url FROM sites")}
        out = {u: (set(), Counter()) for u in sites.values()}
        for sid, url, status, kind in con.execute("SELECT site_id, url, status, kind FROM pages"):
            out[sites[sid]][0].add((p(url), status, kind))
        for sid, code, url in con.execute("SELECT site_id, code, url FROM findings"):
            out[sites[sid]][1][(code, p(url))] += 1
        return out
    finally:
        con.close()


def db_summary(path):
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        one = con.execute
        return {"sites": one("SELECT count(*) FROM sites").fetchone()[0],
                "sites_done": one("SELECT count(*) FROM sites WHERE status='done'").fetchone()[0],
                "pages": one("SELECT count(*) FROM pages WHERE kind='page'").fetchone()[0],
                "rows": one("SELECT count(*) FROM pages").fetchone()[0],
                "findings": one("SELECT count(*) FROM findings").fetchone()[0],
                "codes": Counter(dict(one("SELECT code, count(*) FROM findings GROUP BY code")))}
    finally:
        con.close()


def same_runs(what, merged):
    """Checks that every run of one build stored what its first run stored; True if so."""
    ok = True
    runs = merged["runs"]
    for i in range(1, len(runs)):
        ok &= compare_dbs("%s, run %d against run 1" % (what, i + 1), runs[0]["content"],
                          runs[i]["content"], names=("run 1", "run %d" % (i + 1)), quiet=True)
    if ok and len(runs) > 1:
        print("%s: all %d runs stored the same pages and findings" % (what, len(runs)))
    return ok


def compare_dbs(what, a, b, show=12, names=("base", "current"), quiet=False):
    """Prints whether two db_content()s agree (only if not, when quiet); True if they do."""
    diffs = []
    for site in sorted(set(a) | set(b)):
        if site not in a or site not in b:
            diffs.append("%s: only in %s" % (site, names[1] if site in b else names[0]))
            continue
        (pa, fa), (pb, fb) = a[site], b[site]
        for x in sorted(pa - pb, key=repr)[:3]:
            diffs.append("%s: page only in %s %r" % (site, names[0], x))
        for x in sorted(pb - pa, key=repr)[:3]:
            diffs.append("%s: page only in %s %r" % (site, names[1], x))
        for x, n in sorted((fa - fb).items(), key=repr)[:3]:
            diffs.append("%s: finding only in %s %r x%d" % (site, names[0], x, n))
        for x, n in sorted((fb - fa).items(), key=repr)[:3]:
            diffs.append("%s: finding only in %s %r x%d" % (site, names[1], x, n))
    pages = sum(len(v[0]) for v in a.values()), sum(len(v[0]) for v in b.values())
    finds = sum(sum(v[1].values()) for v in a.values()), sum(sum(v[1].values()) for v in b.values())
    if not diffs:
        if quiet:
            return True
        print("%s: %s and %s databases AGREE: %d sites, %d page rows, %d findings"
              % (what, names[0], names[1], len(a), pages[0], finds[0]))
        return True
    print("!! %s: %s and %s databases DIFFER (FAIL): sites %d / %d, page rows %d / %d, "
          "findings %d / %d; %d difference(s), the first %d:"
          % (what, names[0], names[1], len(a), len(b), pages[0], pages[1], finds[0], finds[1], len(diffs),
             min(show, len(diffs))))
    for d in diffs[:show]:
        print("!!   " + d)
    return False


def merge_runs(runs):
    """One result from several runs of the same thing: numbers are the median over the runs
    (dicts merged key by key, tuples element by element), anything else is the first run's;
    `runs` keeps every run."""
    def med(vals):
        v0 = vals[0]
        if isinstance(v0, bool) or v0 is None:
            return v0
        if isinstance(v0, (int, float)) and all(isinstance(v, (int, float)) for v in vals):
            return statistics.median(vals)
        if isinstance(v0, dict) and not isinstance(v0, Counter):
            keys = set().union(*[v.keys() for v in vals if isinstance(v, dict)])
            zero = (0, 0, 0) if isinstance(next(iter(v0.values()), None), tuple) else None
            return {k: med([v.get(k, zero) for v in vals]) for k in keys}
        if isinstance(v0, tuple) and all(isinstance(v, tuple) and len(v) == len(v0) for v in vals):
            return tuple(med([v[i] for v in vals]) for i in range(len(v0)))
        return v0
    out = med(runs)
    out["runs"] = runs
    return out


def spread(res, f, fmt="%.3f"):
    """'min..max' of f over a merged result's runs."""
    vals = [f(r) for r in res["runs"]]
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    return (fmt + ".." + fmt) % (min(vals), max(vals))


# ---------------------------------------------------------------------------------------------
# A. shoal audit of the farm

def farm_flags(args):
    return ["--max-pages", str(args.pages), "--max-depth", "50", "--gap-ms", str(args.gap_ms),
            "--in-flight", str(args.in_flight)]


def resolve_flags(hosts):
    out = []
    for h in hosts:
        out += ["--resolve", "%s=127.0.0.1" % h]
    return out


def part_a(args, build, d):
    os.makedirs(d, exist_ok=True)
    procs = Procs(d)
    hosts = ["site%d.test" % i for i in range(args.hosts)]
    db = os.path.join(d, "audit.db")
    try:
        port = fleet.start_server(procs, args.hosts, args.pages, args.links,
                                  os.path.join(d, "requests.jsonl"),
                                  max_seconds=args.timeout_s + 120)
        srv_pid = procs.pid("testsite")
        urls = ["http://%s:%d/" % (h, port) for h in hosts]
        cmd = [build.shoal, "audit", *urls, "--db", db, "--allow-private", "--no-dns",
               "--no-progress", "--ip-in-flight", str(args.ip_in_flight), "--concurrency",
               str(args.audit_concurrency), *farm_flags(args), *resolve_flags(hosts)]
        srv0 = proc_cpu(srv_pid)
        busy = Busy()
        res = run_child(cmd, os.path.join(d, "shoal-audit.log"), args.timeout_s,
                        {"SHOAL_LOG": "warn"})
        srv_cpu = proc_cpu(srv_pid) - srv0
        res["busy"], res["others"] = busy.stop(res["cpu"] + srv_cpu)
        res["testsite_cpu"] = srv_cpu
        summary = stop_server(procs)
    finally:
        procs.stop_all()
    if res["rc"] != 0:
        raise SystemExit("shoal audit (%s) failed with %d%s; see %s"
                         % (build.label, res["rc"], " (timed out)" if res["timed_out"] else "",
                            os.path.join(d, "shoal-audit.log")))
    res["requests"] = int(summary.get("requests", 0))
    res["max_in_flight"] = summary.get("max_in_flight_per_host")
    res.update(db_summary(db))
    res["content"] = db_content(db, port)
    res["logs"] = procs.logs() + [("shoal", os.path.join(d, "shoal-audit.log"))]
    return res


# ---------------------------------------------------------------------------------------------
# B. coordinator + workers

def part_b(args, build, workers, d):
    os.makedirs(d, exist_ok=True)
    fleet.SHOAL = build.shoal  # fleet's helpers start this build's coordinator, workers, submit
    procs = Procs(d)
    hosts = ["site%d.test" % i for i in range(args.hosts)]
    sampler = None
    out = {"workers": workers}
    try:
        sock, r = start_redis(procs)
        port = fleet.start_server(procs, args.hosts, args.pages, args.links,
                                  os.path.join(d, "requests.jsonl"),
                                  max_seconds=args.timeout_s + 120)
        cport = fleet.start_coordinator(procs, sock, NS,
                                        ["--gap-ms", str(args.gap_ms), "--in-flight",
                                         str(args.in_flight), "--ip-in-flight",
                                         str(args.ip_in_flight)], env_log="info")
        fleet.start_workers(procs, sock, NS, workers, hosts,
                            ["--concurrency", str(args.worker_concurrency)])
        names = ["coordinator"] + ["worker%d" % (i + 1) for i in range(workers)] + ["redis",
                                                                                      "testsite"]
        pids = {n: procs.pid(n) for n in names}
        time.sleep(1.0)  # the workers settle into their idle polling
        # Idle cost for 1 s before the submit (workers polling an empty frontier).
        idle0 = (time.monotonic(), {n: proc_cpu(p) for n, p in pids.items()},
                 sum(n for c, (n, _, _) in commandstats(r).items() if c not in OWN_COMMANDS))
        time.sleep(1.0)
        idle1 = (time.monotonic(), {n: proc_cpu(p) for n, p in pids.items()},
                 sum(n for c, (n, _, _) in commandstats(r).items() if c not in OWN_COMMANDS))
        span = idle1[0] - idle0[0]
        out["idle_cpu_ms_s"] = {n: (idle1[1][n] - idle0[1][n]) * 1000 / span for n in pids}
        out["idle_cmds_s"] = (idle1[2] - idle0[2]) / span
        sampler = Sampler(pids, sock)
        sampler.start()
        time.sleep(0.1)
        stats0 = commandstats(r)
        urls = ["http://%s:%d/" % (h, port) for h in hosts]
        audit, out["submit_wall"] = submit(procs, cport, urls, farm_flags(args), True,
                                           args.timeout_s)
        stats1 = commandstats(r)
        sampler.finish()
        view = fleet.audit_view(cport, audit)
        out["status"], out["pages"] = view["status"], view["pages"]
        t0, t1 = view["created_at_ms"], view["finished_at_ms"]
        out["window"] = (t1 - t0) / 1000.0
        c0, k0, b0, j0 = sampler.at(t0)
        c1, k1, b1, j1 = sampler.at(t1)
        out["cpu"] = {n: (c1[n] or 0) - (c0[n] or 0) for n in c0}
        out["calls"] = k1 - k0
        out["busy"] = (b1 - b0) / max(j1 - j0, 1)
        ours = sum(v for n, v in out["cpu"].items() if n != "redis_info") / max(out["window"], 1e-3)
        out["others"] = max(out["busy"] * os.cpu_count() - ours, 0.0)
        out["stats"] = stats_delta(stats0, stats1)
        out["hwm"] = {n: hwm_kib(p) for n, p in pids.items()}
        out["used_memory_peak"] = int(r.info("memory").get("used_memory_peak", 0))
        out["slowlog"] = slowlog(r)
        for i in range(workers):
            procs.stop("worker%d" % (i + 1))
        procs.stop("coordinator")
        summary = stop_server(procs)
        out["requests"] = int(summary.get("requests", 0))
        out["max_in_flight"] = summary.get("max_in_flight_per_host")
        db = os.path.join(d, "audit.db")
        out.update({k: v for k, v in db_summary(db).items() if k not in ("pages",)})
        out["content"] = db_content(db, port)
    finally:
        if sampler is not None:
            sampler.finish()
        procs.stop_all()
        out["logs"] = procs.logs()
    return out


# ---------------------------------------------------------------------------------------------
# C. scaling

def invalid_sites(n):
    return ["s%06d.invalid" % (i + 1) for i in range(n)]


def part_c_audit(args, build, n, d):
    os.makedirs(d, exist_ok=True)
    sites = os.path.join(d, "sites.txt")
    with open(sites, "w") as f:
        f.write("".join(u + "\n" for u in invalid_sites(n)))
    db = os.path.join(d, "audit.db")
    cmd = [build.shoal, "audit", "--file", sites, "--db", db, "--no-dns", "--no-progress",
           "--concurrency", str(args.audit_concurrency)]
    busy = Busy()
    limit = min(args.scale_limit_s, args.timeout_s)
    res = run_child(cmd, os.path.join(d, "shoal-audit.log"), limit, {"SHOAL_LOG": "warn"})
    res["busy"], res["others"] = busy.stop(res["cpu"])
    res["limit"] = limit
    # Stopped at the limit (SIGTERM: shoal keeps what it crawled and exits 130, or SIGKILL after
    # the grace) is a figure, not a failure; any other exit is.
    if res["rc"] != 0 and not res["timed_out"]:
        raise SystemExit("shoal audit --file (%d sites, %s) failed with %d%s; see %s"
                         % (n, build.label, res["rc"], " (timed out)" if res["timed_out"] else "",
                            os.path.join(d, "shoal-audit.log")))
    res.update(db_summary(db))
    if res["timed_out"]:  # the sites done by the SIGTERM, not during the stop
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        try:
            res["sites_done"] = con.execute(
                "SELECT count(*) FROM sites WHERE status='done' AND done_at_ms <= ?",
                (int(res["term_unix_ms"]),)).fetchone()[0]
        finally:
            con.close()
    res["db"] = db
    res["logs"] = [("shoal", os.path.join(d, "shoal-audit.log"))]
    return res


def api_get(cport, path):
    """(milliseconds, status, bytes) of one GET with a fresh connection, body read."""
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", cport, timeout=60)
    try:
        c.request("GET", path, headers={"Authorization": "Bearer " + fleet.TOKEN})
        resp = c.getresponse()
        body = resp.read()
        ms = (time.perf_counter() - t0) * 1000
        return ms, resp.status, body
    finally:
        c.close()


def api_post(cport, path):
    c = http.client.HTTPConnection("127.0.0.1", cport, timeout=60)
    try:
        c.request("POST", path, body=b"", headers={"Authorization": "Bearer " + fleet.TOKEN})
        resp = c.getresponse()
        return resp.status, resp.read()
    finally:
        c.close()


def time_status(cport, audit, n):
    """n timed GET /v1/audits/{id}: (list of ms, statuses seen, bytes of the last body, pages)."""
    ms, seen, size, view = [], Counter(), 0, None
    for _ in range(n):
        t, code, body = api_get(cport, "/v1/audits/%d" % audit)
        if code != 200:
            raise SystemExit("GET /v1/audits/%d answered %d: %r" % (audit, code, body[:300]))
        ms.append(t)
        view = json.loads(body)
        seen[view["status"]] += 1
        size = len(body)
    return ms, seen, size, view


def part_c_submit(args, build, d):
    """Coordinator + --scale-workers workers (--no-dns), --submit-sites sites submitted without
    waiting; the status call timed during and after; the audit bounded by --scale-wait-s."""
    os.makedirs(d, exist_ok=True)
    fleet.SHOAL = build.shoal
    procs = Procs(d)
    out = {}
    try:
        sock, r = start_redis(procs)
        cport = fleet.start_coordinator(procs, sock, NS, [], env_log="info")
        fleet.start_workers(procs, sock, NS, args.scale_workers, [],
                            ["--concurrency", str(args.worker_concurrency)])
        cpid = procs.pid("coordinator")
        c_cpu0 = proc_cpu(cpid)
        sites = os.path.join(d, "sites.txt")
        with open(sites, "w") as f:
            f.write("".join(u + "\n" for u in invalid_sites(args.submit_sites)))
        limit = min(args.scale_limit_s * 5, args.timeout_s)
        t0 = time.monotonic()
        out["t0_unix"] = time.time()
        audit = None
        try:
            r_sub = subprocess.run([build.shoal, "submit", "--coordinator",
                                    "http://127.0.0.1:%d" % cport, "--token", fleet.TOKEN,
                                    "--file", sites], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, timeout=limit)
            if r_sub.returncode == 0:
                audit = int(r_sub.stdout.split()[0])
            else:
                out["submit_error"] = "exit %d: %s" % (r_sub.returncode,
                                                       r_sub.stderr.strip().splitlines()[-1][:300])
        except subprocess.TimeoutExpired:
            out["submit_error"] = "not done after %d s (stopped)" % limit
        out["submit_s"] = time.monotonic() - t0
        out["submit_wall"] = out["submit_s"] if audit is not None else None
        out["submit_coord_cpu"] = proc_cpu(cpid) - c_cpu0
        if audit is None:
            # The submit failed; the coordinator may still have created the audit (or go on
            # creating it): look for it until --scale-wait-s from the submit's start.
            def listed():
                _, code, body = api_get(cport, "/v1/audits")
                if code != 200:
                    return None
                v = json.loads(body)
                v = v.get("audits", []) if isinstance(v, dict) else v
                return v[0]["id"] if v else None
            end = t0 + max(args.scale_wait_s, out["submit_s"] + 5)
            while time.monotonic() < end and audit is None:
                audit = listed()
                if audit is None:
                    time.sleep(1.0)
            out["found_after_failure"] = audit
            if audit is None:
                return out
        t_submitted = t0
        out["during"], out["during_status"], out["during_bytes"], v = time_status(
            cport, audit, args.status_calls)
        out["during_sites_done"] = v["sites_done"]
        limit = min(args.scale_wait_s, args.timeout_s)
        end = t_submitted + limit
        while time.monotonic() < end:
            _, _, body = api_get(cport, "/v1/audits/%d" % audit)
            v = json.loads(body)
            if v["status"] != "running":
                break
            time.sleep(1.0)
        out["waited"] = time.monotonic() - t_submitted
        out["at_limit"] = {k: v[k] for k in ("status", "sites_done", "sites_total", "pages",
                                             "findings")}
        out["cancelled"] = v["status"] == "running"
        if out["cancelled"]:
            code, body = api_post(cport, "/v1/audits/%d/cancel" % audit)
            if code != 200:
                raise SystemExit("cancel answered %d: %r" % (code, body[:300]))
            t_cancel = time.monotonic()
            out["cancel_at"] = t_cancel - t0
            wait_for(lambda: json.loads(api_get(cport, "/v1/audits/%d" % audit)[2])["status"]
                     != "running", min(120, args.timeout_s), "the cancelled audit to end", step=0.5)
            out["cancel_s"] = time.monotonic() - t_cancel
        out["after"], out["after_status"], out["after_bytes"], v = time_status(
            cport, audit, args.status_calls)
        out["final"] = {k: v[k] for k in ("status", "sites_done", "sites_total")}
        out["coord_cpu"] = proc_cpu(cpid) - c_cpu0
        out["slowlog"] = slowlog(r)
        out["hwm"] = {n: hwm_kib(procs.pid(n)) for n in ["coordinator", "redis"] +
                      ["worker%d" % (i + 1) for i in range(args.scale_workers)]}
    finally:
        procs.stop_all()
        out["logs"] = procs.logs()
    return out


# ---------------------------------------------------------------------------------------------
# Printing

def ratio(b, c):
    if b in (None, 0) or c is None:
        return "-"
    return "%.2fx" % (c / b)


class Table:
    """Rows of figures for each build: `figure | base | current | current/base`."""

    def __init__(self, builds):
        self.builds = builds
        self.rows = []

    def add(self, name, values, fmt="%.1f"):
        self.rows.append((name, values, fmt))

    def print(self):
        w = max([len(n) for n, _, _ in self.rows] + [10])
        labels = [b.label for b in self.builds]
        text = [["-" if v is None else (fmt % v if not isinstance(v, str) else v) for v in vals]
                for _, vals, fmt in self.rows]
        cw = max([len(c) for row in text for c in row] + [12])
        head = "%-*s | %s" % (w, "figure", " | ".join("%*s" % (cw, x) for x in labels))
        if len(labels) == 2:
            head += " | current/base"
        print(head)
        for (name, vals, fmt), cells in zip(self.rows, text):
            line = "%-*s | %s" % (w, name, " | ".join("%*s" % (cw, c) for c in cells))
            if len(vals) == 2 and not any(isinstance(v, str) for v in vals):
                line += " | %s" % ratio(vals[0], vals[1])
            print(line)


def mib(kib):
    return None if kib is None else kib / 1024


def per_req(cpu_s, requests):
    return cpu_s * 1000 / requests if requests else None


def runs_note():
    if ARGS.runs == 1:
        return "1 run each"
    return ("median of %d runs each (base and current alternating), the commandstats too"
            % ARGS.runs)


def print_a(builds, res):
    print("== A. shoal audit (one process, embedded frontier) of %d hosts x %d pages, gap %d ms, "
          "%d in flight per host, %d per IP, --concurrency %d; %s =="
          % (ARGS.hosts, ARGS.pages, ARGS.gap_ms, ARGS.in_flight, ARGS.ip_in_flight,
             ARGS.audit_concurrency, runs_note()))
    t = Table(builds)
    rs = [res[b.label] for b in builds]
    t.add("requests (test server)", [r["requests"] for r in rs], "%d")
    t.add("pages stored (kind page)", [r["pages"] for r in rs], "%d")
    t.add("findings stored", [r["findings"] for r in rs], "%d")
    t.add("CPU s (user+sys, wait4)", [r["cpu"] for r in rs], "%.2f")
    t.add("  of which user s", [r["user"] for r in rs], "%.2f")
    t.add("  of which sys s", [r["sys"] for r in rs], "%.2f")
    t.add("CPU ms per request", [per_req(r["cpu"], r["requests"]) for r in rs], "%.3f")
    if ARGS.runs > 1:
        t.add("  min..max over the runs", [spread(r, lambda x: per_req(x["cpu"], x["requests"]))
                                          for r in rs], "%s")
    t.add("CPU ms per page", [per_req(r["cpu"], r["pages"]) for r in rs], "%.3f")
    t.add("peak RSS MiB (ru_maxrss)", [mib(r["maxrss_kib"]) for r in rs], "%.1f")
    t.add("peak open files (100 ms samples)", [r["max_fds"] for r in rs], "%d")
    t.add("max in flight per host (server)", [int(r["max_in_flight"] or 0) for r in rs], "%d")
    t.add("wall s (process)", [r["wall"] for r in rs], "%.2f")
    t.add("pages/s (by process wall)", [r["pages"] / r["wall"] for r in rs], "%.0f")
    t.add("test server CPU ms/request", [per_req(r["testsite_cpu"], r["requests"]) for r in rs],
          "%.3f")
    t.add("machine busy %", [r["busy"] * 100 for r in rs], "%.0f")
    t.add("other processes, cores", [r["others"] for r in rs], "%.2f")
    t.print()


def print_b(builds, res, w):
    print()
    print("== B. distributed: coordinator + %d worker(s), private redis-server, same farm "
          "(worker --concurrency %d); %s ==" % (w, ARGS.worker_concurrency, runs_note()))
    rs = [res[b.label] for b in builds]
    t = Table(builds)
    t.add("status", [r["status"] for r in rs], "%s")
    t.add("requests (test server)", [r["requests"] for r in rs], "%d")
    t.add("pages (coordinator)", [r["pages"] for r in rs], "%d")
    t.add("window s (created..finished)", [r["window"] for r in rs], "%.2f")
    t.add("pages/s", [r["pages"] / r["window"] for r in rs], "%.0f")
    t.add("submit --wait returned after s", [r["submit_wall"] for r in rs], "%.2f")
    names = ["coordinator"] + ["worker%d" % (i + 1) for i in range(w)]
    for n in names:
        t.add("%s CPU s" % n, [r["cpu"][n] for r in rs], "%.2f")
        t.add("%s CPU ms/request" % n, [per_req(r["cpu"][n], r["requests"]) for r in rs], "%.3f")
    t.add("redis CPU s (INFO cpu)", [r["cpu"]["redis_info"] for r in rs], "%.2f")
    t.add("redis CPU ms/request", [per_req(r["cpu"]["redis_info"], r["requests"]) for r in rs],
          "%.3f")
    t.add("redis CPU s (/proc, check)", [r["cpu"]["redis"] for r in rs], "%.2f")
    allc = [sum(r["cpu"][n] for n in names) + r["cpu"]["redis_info"] for r in rs]
    t.add("all Shoal+Redis CPU ms/request", [per_req(c, r["requests"]) for c, r in zip(allc, rs)],
          "%.3f")
    if ARGS.runs > 1:
        t.add("  min..max over the runs",
              [spread(r, lambda x: per_req(sum(x["cpu"][n] for n in names) + x["cpu"]["redis_info"],
                                           x["requests"])) for r in rs], "%s")
    t.add("test server CPU ms/request", [per_req(r["cpu"]["testsite"], r["requests"]) for r in rs],
          "%.3f")
    t.add("Redis commands per request [1]",
          [r["calls"] / r["requests"] if r["requests"] else None for r in rs], "%.2f")
    for n in names + ["redis"]:
        t.add("%s peak RSS MiB (VmHWM)" % n, [mib(r["hwm"][n]) for r in rs], "%.1f")
    t.add("redis used_memory_peak MiB", [r["used_memory_peak"] / 1048576 for r in rs], "%.1f")
    t.add("machine busy %", [r["busy"] * 100 for r in rs], "%.0f")
    t.add("other processes, cores", [r["others"] for r in rs], "%.2f")
    t.add("idle before submit: Redis commands/s", [r["idle_cmds_s"] for r in rs], "%.0f")
    t.add("idle before submit: workers CPU ms/s (10 ms ticks)",
          [sum(v for n, v in r["idle_cpu_ms_s"].items() if n.startswith("worker")) for r in rs],
          "%.1f")
    t.print()
    print("[1] Redis commands per request (upper bound on round trips; pipelined commands count "
          "one each): INFO commandstats calls in the window, the commands scripts run included, "
          "this script's INFO excluded, / the test server's requests")
    # Per command, from INFO commandstats over the whole submit (a little wider than the window).
    print("Redis INFO commandstats, delta over the submit (start of `shoal submit` to its return;"
          " commands run inside scripts are counted under their own names as well, and their "
          "usec is also inside evalsha's, so usec does not add up; per request = calls / "
          "requests):")
    cmds = Counter()
    for r in rs:
        for c, (n, us, _) in r["stats"].items():
            cmds[c] = max(cmds[c], us)
    top = [c for c, _ in cmds.most_common(ARGS.top)]
    hdr = "  %-16s" % "command"
    for b in builds:
        hdr += " | %-7s calls/req usec/call usec total failed" % b.label
    if len(builds) == 2:
        hdr += " | usec total current/base"
    print(hdr)
    for c in top:
        line = "  %-16s" % c
        for r in rs:
            n, us, fail = r["stats"].get(c, (0, 0, 0))
            line += " | %-7s %9.3f %9.2f %10d %6d" % ("", n / max(r["requests"], 1),
                                                       us / n if n else 0, us, fail)
        if len(builds) == 2:
            line += " | %s" % ratio(rs[0]["stats"].get(c, (0, 0, 0))[1],
                                    rs[1]["stats"].get(c, (0, 0, 0))[1])
        print(line)
    print("  (failed evalsha calls are NOSCRIPT answers before a script's first load; the client "
          "then loads it: script|load)")
    for b, r in zip(builds, rs):
        print("  %s: Redis SLOWLOG, run 1: %s" % (b.label, fmt_slowlog(r["runs"][0]["slowlog"])))
    for b, r in zip(builds, rs):
        tot_us = sum(us for c, (n, us, _) in r["stats"].items() if c not in ("evalsha", "eval",
                                                                               "fcall"))
        ev = [r["stats"].get(c, (0, 0, 0)) for c in ("evalsha", "eval", "fcall")]
        print("  %s: %d commands in all; evalsha+eval+fcall %d calls, %d usec (scripts, their "
              "inner commands included); every other command %d usec (inner commands "
              "included); Redis' own CPU %.2f s"
              % (b.label, sum(n for n, _, _ in r["stats"].values()), sum(e[0] for e in ev),
                 sum(e[1] for e in ev), tot_us, r["cpu"]["redis_info"]))


def print_c(builds, scale, submits):
    print()
    if scale:
        print("== C1. shoal audit --file of N unreachable sites (sNNNNNN.invalid, --no-dns: every "
              "site ends with a dns finding, no name is looked up), each run bounded by "
              "--scale-limit-s %d s ==" % ARGS.scale_limit_s)
        t = Table(builds)
        sizes = sorted(next(iter(scale.values())).keys())
        for n in sizes:
            rs = [scale[b.label][n] for b in builds]
            t.add("%d sites: finished" % n,
                  ["yes" if not r["timed_out"] else "STOPPED at %d s" % r["limit"] for r in rs], "%s")
            if any(r["timed_out"] for r in rs):
                t.add("%d sites: exit status; s to stop after SIGTERM" % n,
                      ["%d; %.1f" % (r["rc"], r["stop_s"]) if r["timed_out"] else "%d" % r["rc"]
                       for r in rs], "%s")
            t.add("%d sites: wall s (to the SIGTERM if stopped)" % n, [r["wall"] for r in rs],
                  "%.2f")
            t.add("%d sites: sites done (by the SIGTERM if stopped)" % n,
                  [r["sites_done"] for r in rs], "%d")
            t.add("%d sites: s per 1,000 sites done" % n,
                  [r["wall"] * 1000 / r["sites_done"] if r["sites_done"] else None for r in rs],
                  "%.3f")
            t.add("%d sites: CPU s (the stop's included)" % n, [r["cpu"] for r in rs], "%.2f")
            t.add("%d sites: CPU ms per site done" % n,
                  [r["cpu"] * 1000 / r["sites_done"] if r["sites_done"] else None for r in rs],
                  "%.3f")
            t.add("%d sites: peak RSS MiB" % n, [mib(r["maxrss_kib"]) for r in rs], "%.1f")
            t.add("%d sites: findings" % n, [r["findings"] for r in rs], "%d")
            t.add("%d sites: other processes, cores" % n, [r["others"] for r in rs], "%.2f")
        t.print()
        big = sizes[-1]
        for b in builds:
            r = scale[b.label][big]
            codes = ", ".join("%s %d" % kv for kv in r["codes"].most_common(4)) or "none"
            per = ", ".join("%d: %.3f" % (n, scale[b.label][n]["wall"] * 1000 / n) for n in sizes
                            if not scale[b.label][n]["timed_out"])
            if r["timed_out"]:
                verdict = ("ABOVE the 30 s target: stopped at %d s with %d of %d sites done"
                           % (r["limit"], r["sites_done"], big))
            else:
                verdict = "%s the 30 s target (%.1f s)" % ("WITHIN" if r["wall"] < 30 else "ABOVE",
                                                           r["wall"])
            print("  %s: %d sites %s; findings by code: %s; s per 1,000 sites of the finished runs: "
                  "%s" % (b.label, big, verdict, codes, per or "-"))
        if len(builds) == 2 and any(scale["base"][n]["timed_out"] for n in sizes):
            print("  (a stopped base run's wall time is a lower bound, so current/base of its wall "
                  "time is an upper bound)")
    if submits:
        print()
        print("== C2/C3. %d sites submitted to the coordinator (%d worker(s), --no-dns), then "
              "GET /v1/audits/{id} timed %d times during the audit and %d times after it "
              "(a fresh connection each, body read) =="
              % (ARGS.submit_sites, ARGS.scale_workers, ARGS.status_calls, ARGS.status_calls))
        t = Table(builds)
        rs = [submits[b.label] for b in builds]

        def g(r, k, f=None):
            if k not in r:
                return None
            return f(r[k]) if f else r[k]
        t.add("submit finished", ["yes" if r["submit_wall"] is not None else
                                  "FAILED after %.1f s" % r["submit_s"] for r in rs], "%s")
        t.add("submit wall s (shoal submit --file, to its end)", [r["submit_s"] for r in rs], "%.2f")
        t.add("coordinator CPU s during the submit", [r["submit_coord_cpu"] for r in rs], "%.2f")
        t.add("GET during: median ms", [g(r, "during", statistics.median) for r in rs], "%.1f")
        t.add("GET during: max ms", [g(r, "during", max) for r in rs], "%.1f")
        t.add("GET during: answers 'running'",
              [("%d/%d" % (r["during_status"]["running"], len(r["during"]))) if g(r, "during")
               else "-" for r in rs], "%s")
        t.add("GET during: body KiB", [g(r, "during_bytes", lambda x: x / 1024) for r in rs], "%.0f")
        t.add("sites done when that timing ended", [g(r, "during_sites_done") for r in rs], "%d")
        t.add("s from the submit's start to done or the limit", [g(r, "waited") for r in rs], "%.1f")
        t.add("sites done then", [g(r, "at_limit", lambda x: x["sites_done"]) for r in rs],
              "%d")
        t.add("sites done per s over that time",
              [g(r, "at_limit", lambda x: x["sites_done"]) / r["waited"] if g(r, "waited") else None
               for r in rs], "%.0f")
        t.add("cancelled at the limit (--scale-wait-s)", [("yes" if r["cancelled"] else "no") if g(r, "waited")
                                         is not None else "-" for r in rs], "%s")
        t.add("GET after: median ms", [g(r, "after", statistics.median) for r in rs], "%.1f")
        t.add("GET after: max ms", [g(r, "after", max) for r in rs], "%.1f")
        t.add("GET after: body KiB", [g(r, "after_bytes", lambda x: x / 1024) for r in rs], "%.0f")
        t.add("final status", [("%s %d/%d" % (r["final"]["status"], r["final"]["sites_done"],
                                              r["final"]["sites_total"])) if g(r, "final") else "-"
                               for r in rs], "%s")
        t.add("coordinator CPU s (submit to the end)", [g(r, "coord_cpu") for r in rs], "%.2f")
        t.add("coordinator peak RSS MiB", [g(r, "hwm", lambda x: mib(x["coordinator"])) for r in rs],
              "%.1f")
        t.add("redis peak RSS MiB", [g(r, "hwm", lambda x: mib(x["redis"])) for r in rs], "%.1f")
        t.add("worker1 peak RSS MiB", [g(r, "hwm", lambda x: mib(x["worker1"])) for r in rs], "%.1f")
        t.print()
        for b, r in zip(builds, rs):
            if "slowlog" in r:
                print("  %s: Redis SLOWLOG (times since the submit's start%s): %s"
                      % (b.label, "; the cancel was sent at +%.1f s" % r["cancel_at"]
                         if "cancel_at" in r else "", fmt_slowlog(r["slowlog"], r["t0_unix"])))
        for b, r in zip(builds, rs):
            if r["submit_wall"] is None:
                print("  %s: submit ABOVE the 10 s target: FAILED after %.1f s (%s); %s"
                      % (b.label, r["submit_s"], r["submit_error"],
                         "the coordinator created audit %d anyway, timed above"
                         % r["found_after_failure"] if r.get("found_after_failure") else
                         "no audit was created, so no status timing"))
            else:
                print("  %s: submit %s the 10 s target (%.2f s)"
                      % (b.label, "WITHIN" if r["submit_wall"] < 10 else "ABOVE", r["submit_wall"]))
            if "during" in r:
                worst = max(max(r["during"]), max(r["after"]))
                print("  %s: status call %s the 50 ms target (worst of %d: %.1f ms, median during "
                      "%.1f ms, after %.1f ms)"
                      % (b.label, "WITHIN" if worst < 50 else "ABOVE", 2 * ARGS.status_calls,
                         worst, statistics.median(r["during"]), statistics.median(r["after"])))


# ---------------------------------------------------------------------------------------------

ARGS = None


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rev", help="also measure this revision (built in %s), e.g. 04b3203" % BASE_DIR)
    ap.add_argument("--base-bin", help="measure this prebuilt shoal binary as the base instead of "
                    "building --rev (a copy of target/dist/shoal taken before a change: "
                    "before/after without a second target folder)")
    ap.add_argument("--bin-dir", default=fleet.BIN_DIR,
                    help="where the current shoal and shoal-testsite are (default target/dist, "
                    "the profile users get in images and packages)")
    ap.add_argument("--hosts", type=int, default=200, help="farm hosts, site0.test ... (default 200)")
    ap.add_argument("--pages", type=int, default=50, help="pages per host (default 50)")
    ap.add_argument("--links", type=int, default=5, help="links per page (default 5)")
    ap.add_argument("--gap-ms", type=int, default=0, help="gap between request starts per host (0)")
    ap.add_argument("--in-flight", type=int, default=4, help="requests in flight per host (4)")
    ap.add_argument("--ip-in-flight", type=int, default=16,
                    help="requests in flight per IP (16; every farm host is 127.0.0.1)")
    ap.add_argument("--audit-concurrency", type=int, default=64, help="shoal audit --concurrency")
    ap.add_argument("--worker-concurrency", type=int, default=32, help="shoal worker --concurrency")
    ap.add_argument("--runs", type=int, default=3,
                    help="runs of parts A and B per build, medians printed (default 3)")
    ap.add_argument("--workers", default="1,2", help="worker counts of part B (default 1,2)")
    ap.add_argument("--scale-sites", type=int, default=40000,
                    help="largest shoal audit --file run of part C (default 40000)")
    ap.add_argument("--scale-steps", default="10000,20000",
                    help="smaller runs to show linearity (default 10000,20000; '' for none)")
    ap.add_argument("--submit-sites", type=int, default=100000,
                    help="sites submitted to the coordinator in part C (default 100000)")
    ap.add_argument("--scale-workers", type=int, default=1, help="workers for that audit (1)")
    ap.add_argument("--scale-wait-s", type=int, default=60,
                    help="how long that audit may run before it is cancelled (default 60)")
    ap.add_argument("--scale-limit-s", type=int, default=120,
                    help="bound of each shoal audit --file run (stopped with SIGTERM after it, "
                         "the sites done by then printed; default 120), and x5 of the submit")
    ap.add_argument("--status-calls", type=int, default=20, help="timed GETs during and after (20)")
    ap.add_argument("--top", type=int, default=14, help="commandstats entries printed (14)")
    ap.add_argument("--skip-audit", action="store_true", help="skip part A")
    ap.add_argument("--skip-distributed", action="store_true", help="skip part B")
    ap.add_argument("--skip-scale", action="store_true", help="skip part C")
    ap.add_argument("--timeout-s", type=int, default=600,
                    help="bound of every run and wait (default 600 s); the base build gets 3600 s")
    ap.add_argument("--keep", help="keep every log and database under this directory")
    args = ARGS = ap.parse_args()
    fleet.SHOAL = os.path.join(args.bin_dir, "shoal")
    fleet.TESTSITE = os.path.join(args.bin_dir, "shoal-testsite")
    t_start = time.monotonic()
    redis_ver = fleet.prerequisites()
    base_dir = args.keep or tempfile.mkdtemp(prefix="shoal-cpu-")
    os.makedirs(base_dir, exist_ok=True)
    bins = os.path.join(base_dir, "bin")
    os.makedirs(bins, exist_ok=True)

    builds = []
    if args.rev and args.base_bin:
        raise SystemExit("--rev and --base-bin: give one base, not two")
    if args.rev:
        full, base_shoal = build_base(args.rev, 3600)
        builds.append(Build("base", snapshot(base_shoal, bins, "shoal-base"), full))
    elif args.base_bin:
        if not os.access(args.base_bin, os.X_OK):
            raise SystemExit("--base-bin %s: not an executable file" % args.base_bin)
        builds.append(Build("base", snapshot(args.base_bin, bins, "shoal-base"), "prebuilt"))
    cur_shoal = snapshot(fleet.SHOAL, bins, "shoal-current")
    fleet.TESTSITE = snapshot(fleet.TESTSITE, bins, "shoal-testsite")  # the farm, both builds
    head = git("rev-parse", "HEAD")
    dirty = [l for l in git("status", "--porcelain", "--untracked-files=no").splitlines()
             if not l[3:].startswith("bench/")]
    builds.append(Build("current", cur_shoal, head))
    head_time = int(git("log", "-1", "--format=%ct") or 0)
    stale = os.path.getmtime(fleet.SHOAL) < head_time

    print("machine: %d cores (nproc), load average %s, redis-server %s"
          % (os.cpu_count(), " ".join("%.2f" % x for x in os.getloadavg()), redis_ver))
    ref0 = fleet.reference_loop()
    print("reference loop at the start (python3, 20M iterations): %.2f s" % ref0)
    for b in builds:
        src = ("prebuilt %s" % args.base_bin if b.rev == "prebuilt" else
               "worktree %s at %s" % (BASE_DIR, b.rev[:10]) if b.label == "base" else
               "%s, %s at %s%s, binary built %s" % (os.path.relpath(fleet.SHOAL, ROOT), ROOT, b.rev[:10],
                                                 " + %d changed file(s) not committed" % len(dirty)
                                                 if dirty else "",
                                                 time.strftime("%Y-%m-%d %H:%M:%S",
                                                               time.localtime(os.path.getmtime(fleet.SHOAL))))
               + (" BEFORE its HEAD was committed: rebuild for HEAD's figures" if stale else ""))
        print("%s: shoal sha256 %s (%s)" % (b.label, sha256_short(b.shoal), src))
    print("farm: current shoal-testsite sha256 %s for every run; %d hosts x %d pages, %d links "
          "per page" % (sha256_short(fleet.TESTSITE), args.hosts, args.pages, args.links))
    print("run directory: %s" % base_dir, flush=True)

    failures = []
    all_logs = []
    a_content = None
    try:
        if not args.skip_audit:
            runs = {b.label: [] for b in builds}
            for i in range(args.runs):
                for b in builds:
                    print("... A: shoal audit, %s, run %d" % (b.label, i + 1), flush=True)
                    x = part_a(args, b, os.path.join(base_dir, "a-%s-%d" % (b.label, i + 1)))
                    runs[b.label].append(x)
                    all_logs += x["logs"]
            res = {k: merge_runs(v) for k, v in runs.items()}
            print()
            print_a(builds, res)
            a_content = res["current"]["runs"][0]["content"]
            if len(builds) == 2 and not compare_dbs("A (shoal audit), run 1 of each",
                                                    res["base"]["runs"][0]["content"],
                                                    a_content):
                failures.append("A: databases differ")
            for b in builds:
                if not same_runs("A, %s" % b.label, res[b.label]):
                    failures.append("A, %s: runs differ" % b.label)
            for b in builds:
                for i, x in enumerate(res[b.label]["runs"]):
                    if x["pages"] != args.hosts * args.pages:
                        print("!! A, %s, run %d stored %d pages, expected %d"
                              % (b.label, i + 1, x["pages"], args.hosts * args.pages))
                        failures.append("A: pages missing")
            print(flush=True)
        if not args.skip_distributed:
            for w in [int(x) for x in args.workers.split(",") if x.strip()]:
                runs = {b.label: [] for b in builds}
                for i in range(args.runs):
                    for b in builds:
                        print("... B: %d worker(s), %s, run %d" % (w, b.label, i + 1), flush=True)
                        x = part_b(args, b, w, os.path.join(base_dir, "b%d-%s-%d"
                                                            % (w, b.label, i + 1)))
                        runs[b.label].append(x)
                        all_logs += x["logs"]
                res = {k: merge_runs(v) for k, v in runs.items()}
                print_b(builds, res, w)
                if len(builds) == 2 and not compare_dbs("B (%d worker(s)), run 1 of each" % w,
                                                        res["base"]["runs"][0]["content"],
                                                        res["current"]["runs"][0]["content"]):
                    failures.append("B %d worker(s): databases differ" % w)
                for b in builds:
                    if not same_runs("B (%d worker(s)), %s" % (w, b.label), res[b.label]):
                        failures.append("B %d worker(s), %s: runs differ" % (w, b.label))
                if a_content is not None and not compare_dbs(
                        "A against B (%d worker(s)), current build, run 1" % w, a_content,
                        res["current"]["runs"][0]["content"], names=("shoal audit", "distributed")):
                    failures.append("A and B %d worker(s): databases differ" % w)
            print(flush=True)
        if not args.skip_scale:
            steps = sorted({int(x) for x in args.scale_steps.split(",") if x.strip()}
                           | {args.scale_sites})
            scale = {b.label: {} for b in builds}
            for n in steps:
                for b in builds:
                    print("... C1: shoal audit --file of %d sites, %s" % (n, b.label), flush=True)
                    d = os.path.join(base_dir, "c1-%d-%s" % (n, b.label))
                    scale[b.label][n] = part_c_audit(args, b, n, d)
                    all_logs += scale[b.label][n]["logs"]
            submits = {}
            for b in builds:
                print("... C2: %d sites submitted, %s" % (args.submit_sites, b.label), flush=True)
                submits[b.label] = part_c_submit(args, b, os.path.join(base_dir, "c2-" + b.label))
                all_logs += submits[b.label]["logs"]
            print_c(builds, scale, submits)
            big = args.scale_sites
            if len(builds) == 2 and not any(scale[b.label][big]["timed_out"] for b in builds):
                if not compare_dbs("C1 (%d sites)" % big,
                                   db_content(scale["base"][big]["db"], 0),
                                   db_content(scale["current"][big]["db"], 0)):
                    failures.append("C1: databases differ")
        print()
        ref1 = fleet.reference_loop()
        print("reference loop at the end: %.2f s (start %.2f s); load average %s"
              % (ref1, ref0, " ".join("%.2f" % x for x in os.getloadavg())))
        if failures:
            print("RESULT: FAIL: " + "; ".join(failures))
            return 1
        print("RESULT: %s" % ("base and current results agree" if len(builds) == 2 else "done"))
        return 0
    finally:
        fleet.print_logs(all_logs, base_dir, args.keep, t_start)


if __name__ == "__main__":
    fleet.script(main)
