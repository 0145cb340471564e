#!/usr/bin/env python3
"""Shoal soak benchmark (issue 11 figures): the same sites audited many times in a row by one
long-running deployment, to show that its state ends and its memory stays flat.

One private `redis-server` (unix socket in a temporary directory), one `shoal coordinator`, 2
`shoal worker`s (each with its own User-Agent, so the server's log tells them apart) and the test
server with --sites generated sites (site0.test ...) of --pages pages each. The same sites are
audited --audits times back to back (`shoal submit --file sites.txt --wait`, then the next), each
at the configured pace (--gap-ms between request starts, --in-flight per host). site0.test answers
its first --throttle-first requests other than robots.txt with 429 (Retry-After: 1), so only audit
1 sees a 429 and puts the host in slow mode (1 in flight, 3 s gap).

Printed, first: the machine (cores, a fixed reference loop's time, how busy it was). Then one row
per audit, taken right after the audit ended (its `seen`/`site` records forgotten): the wall time
(the coordinator's created_at..finished_at from `shoal status ID --json`), pages stored, Redis
`used_memory` and the number of keys in the namespace (SCAN; the private server holds nothing
else, DBSIZE agrees), each process's resident memory (VmRSS from /proc/PID/status: both workers,
the coordinator), and how busy the machine was during the audit (other processes: cores taken by
load this benchmark did not start). Then one more audit during which worker 2 is frozen (SIGSTOP)
once it holds leases, its leases are read from Redis, and it is killed (SIGKILL). Then, after
--linger-s (65 s: a host's pace record lingers 60 s after its last use by design), the keys once
more. Last, the targets with PASS or FAIL:

  a. audit 2 of the 429 site runs at its configured pace: from the server's request log, the gaps
     between request starts to site0.test during audit 2 (median, max, min) against --gap-ms, the
     most requests in flight and the 429s; slow mode would show as 3 s gaps and 1 in flight.
     PASS: no 429, in flight <= --in-flight, median gap <= 1.5 x --gap-ms, max gap < 3 s.
  b. Redis used_memory and keys after the last audit within 5 % of after audit 5.
  c. each worker's RSS after the last audit within 20 % of after audit 5.
  d. the killed worker's URLs: every URL it held a lease on is requested again (by the other
     worker's User-Agent) within 20 s of the kill, and the audit stores as many pages, site by
     site, as the last undisturbed one. Also the longest stall of any host across the kill.
When keys grow, the namespace's key families (`shoal:v1:{NS}:<family>:...`) are compared.

Only 127.0.0.1 and unix sockets are used. Every loop is bounded in count and time (--timeout per
audit, --max-seconds on the test server), and every process is stopped on exit, Ctrl-C or failure.
With the defaults (50 audits of 20 sites x 25 pages at 200 ms) a run takes about 10 minutes on an
idle 2-core machine; audit 1 is the long one (site0.test in slow mode).
Run from the repository root after `cargo build --profile dist -p shoal -p shoal-tests`:
    python3 bench/soak.py [--audits 50] [--sites 20] [--pages 25] [--gap-ms 200]
"""
import argparse
import os
import re
import signal
import statistics
import tempfile
import time
from collections import Counter
from urllib.parse import urlsplit

import fleet
from fleet import (Procs, audit_view, machine_jiffies, peak_and_violations,
                   proc_cpu, read_log, rss_kib, start_redis, stop_server, submit, wait_for)

NS = "soak"
PREFIX = "shoal:v1:{%s}" % NS
THROTTLED = "site0.test"
SLOW_GAP_MS = 3000  # slow mode's gap (SPEC section 4)
WORKERS = 2
VICTIM = 2  # worker2 is killed in the last phase; worker1 survives
REF_AUDIT = 5  # the audit the last one is compared with


def user_agent(i):
    return "ShoalBot/soak-w%d (+https://example.invalid/shoalbot)" % i


# ---------------------------------------------------------------------------------------------
# Readings

def key_families(r):
    """Over the namespace, per family: keys, keys with an expiry, bytes (MEMORY USAGE ... SAMPLES
    0), and a Counter of the keys' id shapes (digits as N)."""
    fam, ttl, size, shapes = Counter(), Counter(), Counter(), {}
    for k in r.scan(PREFIX + ":*"):
        f, _, rest = k.decode(errors="replace")[len(PREFIX) + 1:].partition(":")
        f = f or "?"
        fam[f] += 1
        size[f] += r(b"MEMORY", b"USAGE", k, b"SAMPLES", b"0") or 0
        if rest:
            shapes.setdefault(f, Counter())[re.sub(r"\d+", "N", rest)] += 1
        if r(b"PTTL", k) > 0:
            ttl[f] += 1
    return fam, ttl, size, shapes


def url_in_task(blob):
    """The `url` field of a task blob (rmp with named fields: the key `url` as a fixstr, then the
    value as a fixstr, str8 or str16)."""
    i = blob.find(b"\xa3url")
    if i < 0 or i + 4 >= len(blob):
        return None
    j, t = i + 4, blob[i + 4]
    if 0xa0 <= t <= 0xbf:
        n, j = t & 0x1f, j + 1
    elif t == 0xd9:
        n, j = blob[j + 1], j + 2
    elif t == 0xda:
        n, j = int.from_bytes(blob[j + 1:j + 3], "big"), j + 3
    else:
        return None
    return blob[j:j + n].decode(errors="replace")


class Reading:
    """Redis memory and keys, the processes' RSS and CPU, and the machine's jiffies, now."""

    def __init__(self, r, procs):
        self.t = time.time()
        self.used = int(r.info("memory")["used_memory"])
        self.dbsize = r(b"DBSIZE")
        self.fam, self.ttl, self.size, self.shapes = key_families(r)
        self.xlen = r(b"XLEN", PREFIX + ":events")
        self.keys = sum(self.fam.values())
        self.rss = {n: rss_kib(procs.pid(n)) for n in ("worker1", "worker2", "coordinator", "redis")}
        self.busy, self.jiffies = machine_jiffies()
        self.cpu = {n: proc_cpu(procs.pid(n)) for n, _ in procs.logs()}  # None once gone
        self.bench_cpu = sum(os.times()[:2])


def busy_between(a, b, ncpu):
    """(machine busy fraction, cores our processes used, cores other processes used)."""
    busy = (b.busy - a.busy) / max(b.jiffies - a.jiffies, 1)
    wall = max(b.t - a.t, 1e-3)
    ours = sum(b.cpu[n] - a.cpu[n] for n in b.cpu
               if b.cpu[n] is not None and a.cpu.get(n) is not None) / wall
    bench = (b.bench_cpu - a.bench_cpu) / wall
    return busy, ours, max(busy * ncpu - ours - bench, 0.0)


def mib(kib):
    return "-" if kib is None else "%.1f" % (kib / 1024)


def wait_forgotten(r, audit, limit=10):
    """Waits (at most `limit` s) until the coordinator has dropped the ended audit's records
    (forget.lua: `auditsites:` and `seen:` go last); False if they are still there."""
    keys = ["%s:auditsites:%d" % (PREFIX, audit), "%s:seen:%d" % (PREFIX, audit)]
    try:
        wait_for(lambda: r(b"EXISTS", *keys) == 0, limit, "forget", step=0.05)
        return True
    except SystemExit:
        return False


def leases_of(r, worker):
    """{lease id: (url, host, deadline ms)} of the leases `worker` holds now."""
    out = {}
    for lid in r(b"ZRANGE", PREFIX + ":leases", 0, -1) or []:
        w, blob, host, deadline = r(b"HMGET", "%s:lease:%s" % (PREFIX, lid.decode()), b"worker",
                                    b"blob", b"host", b"deadline")
        if w == worker.encode():
            out[lid.decode()] = (url_in_task(blob or b""), (host or b"").decode(),
                                 int(deadline or 0))
    return out


# ---------------------------------------------------------------------------------------------
# The server's request log

class ServerLog:
    def __init__(self, path, origin_unix_ms):
        self.reqs = read_log(path)
        self.origin = origin_unix_ms
        for q in self.reqs:
            q["t"] = self.origin + q["start_ms"]  # ms since the epoch, as the coordinator's times
        self.reqs.sort(key=lambda q: q["t"])

    def window(self, t0, t1, host=None):
        return [q for q in self.reqs if t0 <= q["t"] <= t1 and (host is None or q["host"] == host)]


def pace_of(reqs, in_flight):
    starts = [q["t"] for q in reqs]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    peak, _ = peak_and_violations(reqs, in_flight)
    return {"requests": len(reqs), "gaps": gaps, "peak": peak,
            "median": statistics.median(gaps) if gaps else None,
            "max": max(gaps) if gaps else None, "min": min(gaps) if gaps else None,
            "n429": sum(1 for q in reqs if q.get("status") == 429),
            "span": (starts[-1] - starts[0]) / 1000 if len(starts) > 1 else 0.0}


def fmt_pace(p):
    if p["median"] is None:
        return "%d requests" % p["requests"]
    return ("%d requests in %.1f s, gaps between starts: median %.0f ms, max %.0f ms, min %.0f ms; "
            "most in flight %d; %d answered 429"
            % (p["requests"], p["span"], p["median"], p["max"], p["min"], p["peak"], p["n429"]))


def within(new, ref, pct):
    change = (new - ref) * 100 / ref if ref else float("inf")
    return abs(change) <= pct, change


def verdict(ok):
    return "PASS" if ok else "FAIL"


# ---------------------------------------------------------------------------------------------
# The run

def audit_options(args):
    return ["--max-pages", str(args.pages), "--max-depth", "50", "--gap-ms", str(args.gap_ms),
            "--in-flight", str(args.in_flight)]


def finish_audit(r, cport, audit, procs):
    """The ended audit's view, once its records are forgotten, and a Reading right after."""
    view = audit_view(cport, audit)
    forgotten = wait_forgotten(r, audit)
    return view, forgotten, Reading(r, procs)


def print_row(label, view, forgotten, rd, busy):
    wall = (view["finished_at_ms"] - view["created_at_ms"]) / 1000 if view.get("finished_at_ms") else float("nan")
    b, _, others = busy
    flag = "" if view["status"] == "done" else " status %s" % view["status"]
    flag += "" if forgotten else " (records not yet forgotten)"
    if rd.dbsize != rd.keys:
        flag += " (DBSIZE %d)" % rd.dbsize
    print("%6s | %7.1f | %5d | %11d | %4d | %7s | %7s | %7s | %4.0f%% | %5.2f%s"
          % (label, wall, view["pages"], rd.used, rd.keys, mib(rd.rss["worker1"]),
             mib(rd.rss["worker2"]), mib(rd.rss["coordinator"]), b * 100, others, flag), flush=True)


def kill_phase(args, r, procs, cport, urls):
    """One more audit; worker 2 frozen once it holds leases (after --kill-after-s), its leases
    read, then killed. Returns the audit's view and what the victim held."""
    audit, _ = submit(procs, cport, urls, audit_options(args), False, args.timeout)
    t_submit = time.monotonic()
    victim = procs.proc("worker%d" % VICTIM)
    held, t_kill = {}, None
    end = t_submit + min(args.timeout, 120)
    while time.monotonic() < end and t_kill is None:
        if time.monotonic() - t_submit >= args.kill_after_s and leases_of(r, "w%d" % VICTIM):
            victim.send_signal(signal.SIGSTOP)  # frozen: its leases can no longer change
            held = leases_of(r, "w%d" % VICTIM)
            if held:
                victim.send_signal(signal.SIGKILL)
                t_kill = time.time() * 1000
                victim.wait(timeout=10)
            else:
                victim.send_signal(signal.SIGCONT)
        if audit_view(cport, audit)["status"] != "running":
            break
        time.sleep(0.005)

    def ended():
        v = audit_view(cport, audit)
        return v if v["status"] != "running" else None
    return audit, wait_for(ended, args.timeout, "the kill audit to end", step=0.5), held, t_kill


def run(args, base, ncpu, out):
    """Everything that runs processes; fills `out` as it goes (also when it fails)."""
    procs = Procs(base)
    out["rows"] = []
    srv_log = os.path.join(base, "requests.jsonl")
    hosts = ["site%d.test" % i for i in range(args.sites)]
    try:
        sock, r = start_redis(procs)
        port = fleet.start_server(procs, args.sites, args.pages, args.links, srv_log,
                                  args.delay_ms, ["--throttle-host", THROTTLED,
                                                  "--throttle-first", str(args.throttle_first)],
                                  max_seconds=args.max_seconds)
        extra = ["--gap-ms", str(args.gap_ms), "--in-flight", str(args.in_flight)]
        if args.lease_ttl_s:
            extra += ["--lease-ttl-s", str(args.lease_ttl_s)]
        cport = fleet.start_coordinator(procs, sock, NS, extra)
        fleet.start_workers(procs, sock, NS, WORKERS, hosts, ["--concurrency", str(args.concurrency)],
                            user_agent=user_agent)
        urls = ["http://%s:%d/" % (h, port) for h in hosts]
        time.sleep(1)  # the workers settle into their idle polling
        out["before"] = prev = Reading(r, procs)
        print("before audit 1: used_memory %d B, %d keys (%s); RSS worker1 %s MiB, worker2 %s MiB, "
              "coordinator %s MiB"
              % (prev.used, prev.keys, fmt_fam(prev.fam), mib(prev.rss["worker1"]),
                 mib(prev.rss["worker2"]), mib(prev.rss["coordinator"])))
        print()
        print(" audit | wall s  | pages | used_memory | keys | w1 MiB  | w2 MiB  | coord   | busy  | "
              "other cores")
        for k in range(1, args.audits + 1):
            audit, _ = submit(procs, cport, urls, audit_options(args), True, args.timeout)
            view, forgotten, rd = finish_audit(r, cport, audit, procs)
            busy = busy_between(prev, rd, ncpu)
            out["rows"].append({"n": k, "audit": audit, "view": view, "reading": rd, "busy": busy})
            print_row(str(k), view, forgotten, rd, busy)
            prev = rd
        if not args.no_kill:
            audit, view, held, t_kill = kill_phase(args, r, procs, cport, urls)
            forgotten = wait_forgotten(r, audit)
            rd = Reading(r, procs)
            busy = busy_between(prev, rd, ncpu)
            print_row("kill", view, forgotten, rd, busy)
            out["kill"] = {"audit": audit, "view": view, "held": held, "t_kill": t_kill,
                           "reading": rd}
        if args.linger_s > 0:
            print("(waiting %d s for lingering keys to expire)" % args.linger_s, flush=True)
            time.sleep(args.linger_s)
        out["late"] = Reading(r, procs)
        out["summary"] = stop_server(procs)
        out["log"] = ServerLog(srv_log, int(out["summary"]["origin_unix_ms"]))
    finally:
        procs.stop_all()
        out["logs"] = procs.logs()


def fmt_fam(fam):
    return ", ".join("%s %d" % (f, n) for f, n in sorted(fam.items(), key=lambda x: (-x[1], x[0])))


def fmt_shapes(rd):
    return "; ".join("%s:%s" % (f, ", ".join("%s x%d" % (shape, n) for shape, n in c.most_common(4)))
                     for f, c in sorted(rd.shapes.items())) or "-"


def fam_diff(a, b):
    """Families whose key count differs between readings a and b."""
    fams = sorted(set(a.fam) | set(b.fam))
    return ", ".join("%s %d -> %d" % (f, a.fam.get(f, 0), b.fam.get(f, 0))
                     for f in fams if a.fam.get(f, 0) != b.fam.get(f, 0)) or "none"


# ---------------------------------------------------------------------------------------------
# Targets

def target_a(args, res):
    rows, log = res["rows"], res["log"]
    if len(rows) < 2:
        print("a. needs at least 2 audits: SKIPPED")
        return None
    v1, v2 = rows[0]["view"], rows[1]["view"]
    p1 = pace_of(log.window(v1["created_at_ms"], v1["finished_at_ms"], THROTTLED), args.in_flight)
    p2 = pace_of(log.window(v2["created_at_ms"], v2["finished_at_ms"], THROTTLED), args.in_flight)
    others = [pace_of(log.window(v2["created_at_ms"], v2["finished_at_ms"], h), args.in_flight)
              for h in ["site%d.test" % i for i in range(1, args.sites)]]
    ok = (p2["median"] is not None and p2["n429"] == 0 and p2["peak"] <= args.in_flight
          and p2["median"] <= 1.5 * args.gap_ms and p2["max"] < SLOW_GAP_MS)
    print("a. audit 2 of the 429 site at its configured pace (gap %d ms, %d in flight): %s"
          % (args.gap_ms, args.in_flight, verdict(ok)))
    print("   audit 1, %s: %s" % (THROTTLED, fmt_pace(p1)))
    print("   audit 2, %s: %s" % (THROTTLED, fmt_pace(p2)))
    meds = [p["median"] for p in others if p["median"] is not None]
    if meds:
        print("   audit 2, the other %d sites: median gap %.0f ms (median of theirs), max gap %.0f "
              "ms, most in flight %d, %.1f s each (median); %s took %.1f s"
              % (len(others), statistics.median(meds), max(p["max"] for p in others if p["max"]),
                 max(p["peak"] for p in others), statistics.median(p["span"] for p in others),
                 THROTTLED, p2["span"]))
    if p2["gaps"]:
        slow = sum(1 for g in p2["gaps"] if g >= SLOW_GAP_MS * 0.9)
        print("   gaps of %.1f s or more (slow-mode spacing) in audit 2: %d" % (SLOW_GAP_MS * 0.9 / 1000, slow))
    return ok


def target_bc(args, res):
    rows = res["rows"]
    if not rows:
        return None, None
    ref = rows[min(REF_AUDIT, len(rows)) - 1]
    last = rows[-1]
    judged = last["n"] > ref["n"]  # with --audits 5 or fewer there is nothing to compare
    a, b = ref["reading"], last["reading"]
    ok_m, dm = within(b.used, a.used, 5)
    ok_k, dk = within(b.keys, a.keys, 5)
    print("b. Redis after audit %d against after audit %d (within 5 %%): %s"
          % (last["n"], ref["n"], verdict(ok_m and ok_k) if judged else "- (needs more than %d audits)" % REF_AUDIT))
    print("   used_memory %d B -> %d B (%+.2f %%): %s; keys %d -> %d (%+.2f %%): %s"
          % (a.used, b.used, dm, verdict(ok_m), a.keys, b.keys, dk, verdict(ok_k)))
    print("   key families after audit %d: %s" % (ref["n"], fmt_fam(a.fam)))
    grew = ", ".join("%s %d -> %d B" % (f, a.size.get(f, 0), b.size.get(f, 0))
                     for f in sorted(set(a.size) | set(b.size)) if a.size.get(f, 0) != b.size.get(f, 0))
    print("   the keys themselves (MEMORY USAGE): %d -> %d B%s; events stream length %d -> %d"
          % (sum(a.size.values()), sum(b.size.values()), "; changed: " + grew if grew else "",
             a.xlen, b.xlen))
    if a.fam != b.fam:
        print("   families that changed: %s" % fam_diff(a, b))
        print("   key ids after audit %d: %s" % (ref["n"], fmt_shapes(a)))
        print("   key ids after audit %d: %s" % (last["n"], fmt_shapes(b)))
    used = [x["reading"].used for x in rows]
    keys = [x["reading"].keys for x in rows]
    print("   over all %d audits: used_memory min %d, max %d B; keys min %d, max %d"
          % (len(rows), min(used), max(used), min(keys), max(keys)))
    oks = []
    parts = []
    for w in ["worker%d" % (i + 1) for i in range(WORKERS)]:
        x, y = a.rss[w], b.rss[w]
        ok, d = within(y or 0, x or 0, 20)
        oks.append(ok)
        parts.append("%s %s -> %s MiB (%+.1f %%)" % (w, mib(x), mib(y), d))
    okc = all(oks)
    print("c. worker RSS after audit %d against after audit %d (within 20 %%): %s"
          % (last["n"], ref["n"], verdict(okc) if judged else "-"))
    print("   %s; coordinator %s -> %s MiB, redis-server %s -> %s MiB (not targets)"
          % ("; ".join(parts), mib(a.rss["coordinator"]), mib(b.rss["coordinator"]),
             mib(a.rss["redis"]), mib(b.rss["redis"])))
    for w in ["worker%d" % (i + 1) for i in range(WORKERS)] + ["coordinator"]:
        series = [x["reading"].rss[w] for x in rows if x["reading"].rss[w]]
        if series:
            print("   %s RSS over the audits: min %s, max %s MiB; after audits 1, %d, %d: %s, %s, %s"
                  % (w, mib(min(series)), mib(max(series)), ref["n"], last["n"], mib(series[0]),
                     mib(a.rss[w]), mib(b.rss[w])))
    return (ok_m and ok_k, okc) if judged else (None, None)


def target_d(args, res):
    kill = res.get("kill")
    if not kill:
        print("d. killed worker: SKIPPED (--no-kill)")
        return None
    log, view, held, t_kill = res["log"], kill["view"], kill["held"], kill["t_kill"]
    ref = res["rows"][-1]["view"] if res["rows"] else None
    if t_kill is None:
        print("d. killed worker: FAIL (worker %d never held a lease after %.1f s into the audit; "
              "not killed)" % (VICTIM, args.kill_after_s))
        return False
    reqs = log.window(view["created_at_ms"], view["finished_at_ms"])
    victim_ua, survivor_ua = user_agent(VICTIM), user_agent(1)
    delays, lines, ok_urls = [], [], True
    for lid, (url, host, deadline) in sorted(held.items(), key=lambda x: int(x[0])):
        if url is None:
            ok_urls = False
            lines.append("lease %s on %s: no URL in its task" % (lid, host))
            continue
        u = urlsplit(url)
        path = u.path + ("?" + u.query if u.query else "")
        same = [q for q in reqs if q["host"] == u.hostname and q["path"] == path]
        before = [q for q in same if q["t"] < t_kill]
        after = [q for q in same if q["t"] >= t_kill]
        was = ("the victim's request started %.0f ms before the kill, %s"
               % (t_kill - before[-1]["t"], "status %s" % before[-1]["status"]
                  if before[-1].get("end_ms") is not None else "unanswered")
               if before and before[-1].get("user_agent") == victim_ua else "not yet requested")
        if after:
            d = (after[0]["t"] - t_kill) / 1000
            delays.append(d)
            by = "worker 1" if after[0].get("user_agent") == survivor_ua else repr(after[0].get("user_agent"))
            ok_urls &= d <= 20 and after[0].get("user_agent") == survivor_ua
            lines.append("%s (lease %s, deadline %+.1f s from the kill; %s): requested again %.1f s "
                         "after the kill by %s" % (url, lid, (deadline - t_kill) / 1000, was, d, by))
        else:
            ok_urls = False
            lines.append("%s (lease %s; %s): NEVER requested again" % (url, lid, was))
    # Longest stall of any host across the kill: the gap between consecutive starts that spans it.
    stalls = []
    for h in sorted({q["host"] for q in reqs}):
        starts = [q["t"] for q in reqs if q["host"] == h]
        for a, b in zip(starts, starts[1:]):
            if b >= t_kill:
                stalls.append((b - a, h, a < t_kill))
    stall = max(stalls) if stalls else None
    pages_ok = view["status"] == "done" and ref is not None and view["pages"] == ref["pages"]
    per_site = {}
    if ref is not None:
        want = {s["start_url"]: s["pages"] for s in ref.get("sites", [])}
        per_site = {s["start_url"]: (s["pages"], want.get(s["start_url"])) for s in view.get("sites", [])
                    if s["pages"] != want.get(s["start_url"])}
        pages_ok &= not per_site
    ok = ok_urls and pages_ok and bool(held)
    print("d. worker %d SIGKILLed mid-audit: its URLs fetched by worker 1 within 20 s, nothing lost: %s"
          % (VICTIM, verdict(ok)))
    print("   killed %.1f s after the audit started, holding %d lease(s); every one requested again "
          "within %s s of the kill%s"
          % ((t_kill - view["created_at_ms"]) / 1000, len(held),
             "%.1f" % max(delays) if delays else "-",
             "" if ok_urls else " (NOT all, or not by worker 1, or later than 20 s)"))
    for line in lines:
        print("   - " + line)
    if stall:
        print("   longest stall of a host across the kill: %.1f s (%s%s)"
              % (stall[0] / 1000, stall[1], ", spanning the kill" if stall[2] else ""))
    print("   pages stored: %d (status %s), the last undisturbed audit %s: %s%s"
          % (view["pages"], view["status"], ref["pages"] if ref else "-", verdict(pages_ok),
             "" if not per_site else "; sites that differ: " + ", ".join(
                 "%s %s vs %s" % (u, a, b) for u, (a, b) in sorted(per_site.items()))))
    wall = (view["finished_at_ms"] - view["created_at_ms"]) / 1000
    if ref:
        print("   that audit took %.1f s; the last undisturbed one %.1f s"
              % (wall, (ref["finished_at_ms"] - ref["created_at_ms"]) / 1000))
    return ok


def repeats(args, res):
    """Requests per undisturbed audit and URLs requested more than once in one (a 429 retry of
    site0.test in audit 1 is one; a URL fetched twice because a lease was lost would be another)."""
    log = res["log"]
    per, extra = [], []
    for row in res["rows"]:
        v = row["view"]
        reqs = log.window(v["created_at_ms"], v["finished_at_ms"])
        per.append(len(reqs))
        seen = Counter((q["host"], q["path"]) for q in reqs)
        twice = sorted(k for k, n in seen.items() if n > 1)
        retried = [k for k in twice if any(q["status"] == 429 for q in reqs if (q["host"], q["path"]) == k)]
        other = [k for k in twice if k not in retried]
        if twice:
            extra.append("audit %d: %d URL(s) requested more than once (%d after a 429%s)"
                         % (row["n"], len(twice), len(retried),
                            "" if not other else "; others: " + ", ".join(h + p for h, p in other[:5])))
    if per:
        print("requests per audit: min %d, median %d, max %d; %s"
              % (min(per), statistics.median(per), max(per),
                 "; ".join(extra) if extra else "no URL requested twice in any audit"))


def late_keys(args, res):
    late, before = res["late"], res["before"]
    last = res.get("kill", {}).get("reading") or (res["rows"][-1]["reading"] if res["rows"] else before)
    print("keys right after the last audit: %d (%s); ids: %s"
          % (last.keys, fmt_fam(last.fam), fmt_shapes(last)))
    print("keys %d s later: %d, used_memory %d B (%s); with an expiry: %s"
          % (args.linger_s, late.keys, late.used, fmt_fam(late.fam), fmt_fam(late.ttl) or "none"))
    print("keys before audit 1: %d, used_memory %d B (%s); changed since: %s"
          % (before.keys, before.used, fmt_fam(before.fam), fam_diff(before, late)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--audits", type=int, default=50, help="audits in a row (default 50)")
    ap.add_argument("--sites", type=int, default=20, help="test sites, site0.test ... (default 20)")
    ap.add_argument("--pages", type=int, default=25, help="pages per site (default 25)")
    ap.add_argument("--links", type=int, default=4, help="links per page (default 4)")
    ap.add_argument("--gap-ms", type=int, default=200, help="gap between request starts per host (default 200)")
    ap.add_argument("--in-flight", type=int, default=4, help="requests in flight per host (default 4)")
    ap.add_argument("--delay-ms", type=int, default=0, help="test server latency per response (default 0)")
    ap.add_argument("--throttle-first", type=int, default=2,
                    help="requests of site0.test answered 429 (Retry-After: 1) at the start (default 2)")
    ap.add_argument("--concurrency", type=int, default=32, help="shoal worker --concurrency")
    ap.add_argument("--lease-ttl-s", type=int, help="coordinator --lease-ttl-s (default: Shoal's)")
    ap.add_argument("--kill-after-s", type=float, default=2.0,
                    help="seconds into the last audit before worker 2 is killed (default 2)")
    ap.add_argument("--no-kill", action="store_true", help="skip the killed-worker audit")
    ap.add_argument("--linger-s", type=int, default=65, help="wait before the late key count (default 65)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds one audit may take at most")
    ap.add_argument("--max-seconds", type=int, default=3600, help="test server's own time bound")
    ap.add_argument("--logs", help="keep every process's log and the request log under this directory")
    args = ap.parse_args()
    if args.audits < 1 or args.sites < 1 or args.pages < 1:
        raise SystemExit("--audits, --sites and --pages must be at least 1")
    if args.gap_ms >= SLOW_GAP_MS:
        raise SystemExit("--gap-ms must be below slow mode's %d ms for target a to mean anything" % SLOW_GAP_MS)
    ver = fleet.prerequisites()
    ncpu = os.cpu_count()
    base = args.logs or tempfile.mkdtemp(prefix="shoal-soak-")
    os.makedirs(base, exist_ok=True)
    t_start = time.monotonic()
    b0, j0 = machine_jiffies()
    ref = fleet.reference_loop()
    b1, j1 = machine_jiffies()
    print("machine: %d CPUs, redis-server %s; reference loop (python3, 20M iterations): %.2f s; "
          "machine %.0f%% busy meanwhile (the loop takes one core)"
          % (ncpu, ver, ref, (b1 - b0) * 100 / max(j1 - j0, 1)))
    print("soak: %d audits of %d sites x %d pages (%d links per page), gap %d ms, %d in flight per "
          "host, 2 workers; %s answers its first %d requests with 429 (Retry-After: 1)"
          % (args.audits, args.sites, args.pages, args.links, args.gap_ms, args.in_flight,
             THROTTLED, args.throttle_first), flush=True)
    res = {"logs": []}
    try:
        run(args, base, ncpu, res)
        if res["rows"]:
            last = (res.get("kill") or res["rows"][-1])["reading"]
            busy, ours, others = busy_between(res["before"], last, ncpu)
            print("whole run (audit 1 to the last): machine %.0f%% busy, our processes %.2f cores, "
                  "other processes %.2f cores" % (busy * 100, ours, others))
        print()
        repeats(args, res)
        late_keys(args, res)
        print()
        print("== targets ==")
        a = target_a(args, res)
        b, c = target_bc(args, res)
        d = target_d(args, res)
        print("summary: a %s, b %s, c %s, d %s"
              % tuple("-" if x is None else verdict(x) for x in (a, b, c, d)))
    finally:
        fleet.print_logs(res.get("logs", []), base, args.logs, t_start)


if __name__ == "__main__":
    fleet.script(main)
