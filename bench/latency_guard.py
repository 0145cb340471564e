#!/usr/bin/env python3
"""The latency guard's cost and effect (issue 17 figures).

1. Cost on healthy hosts: `shoal audit` of `--hosts` (10) x `--pages` (60) generated sites of
   `shoal-testsite` answering after `--delay-ms` (20), at Shoal's default pace, with the guard on
   and with `--no-latency-guard`, `--runs` (3) times each, alternating: the median wall time of
   each and their ratio (target: the guard costs at most 3 %). The guard never steps on a healthy
   host, so any difference is the bookkeeping (one more script per completion on Redis; nothing
   measurable in-process).
2. Effect on a server that degrades under load: one host served by one worker and a queue
   (`--single-worker-host`, `--service-ms` 500 per request) audited with the guard on and off: the
   host's median response time (arrival to last byte, from the server's own request log) against
   its idle baseline (its first request, robots.txt, met an empty queue), the most requests in
   flight, and the audit's wall time.
3. Issue 41, the one-at-a-time server: one host served by one worker in `--one-service-ms` (120) a
   request, `--slow-pages` (40) pages, audited with `--gap-ms 0 --in-flight 4`, guard on and off:
   the server's median response time (arrival to end, queue included; target <= 0.30 s).
4. Issue 41, the first seconds on a shared server: `--shared-hosts` (50) small sites
   (`--shared-pages` 5) served by one worker and one queue (`--shared-service-ms` 50) at one IP,
   guard on and off: the most of our requests in flight at the server during the audit's first
   5 s, and the median response time then, against the server at rest (its fastest answer).

Only 127.0.0.1 is used; every process is bounded in time (--max-seconds on the server, --timeout
on `shoal audit`) and stopped in a `finally`. Run from the repository root after
`cargo build --profile dist -p shoal -p shoal-tests`:
    python3 bench/latency_guard.py [--runs N] [--hosts N] [--pages N] [--delay-ms MS] [--bin-dir DIR]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet  # noqa: E402  (beside this file)


def audit(d, port, hosts, pages, guard, name, timeout=600, extra=()):
    """One `shoal audit` of `hosts` on the test server (`extra`: more flags); its wall time in
    seconds."""
    db = os.path.join(d, name + ".db")
    args = [fleet.SHOAL, "audit", "--db", db, "--allow-private", "--no-dns", "--no-progress",
            "--no-external", "--max-pages", str(pages)]
    for h in hosts:
        args += ["--resolve", "%s=127.0.0.1" % h]
    if not guard:
        args.append("--no-latency-guard")
    args += list(extra)
    args += ["http://%s:%d/" % (h, port) for h in hosts]
    t0 = time.monotonic()
    with open(os.path.join(d, name + ".log"), "ab") as log:
        r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL,
                           timeout=timeout)
    took = time.monotonic() - t0
    if r.returncode not in (0, 1):
        raise SystemExit("shoal audit exited %d (log: %s)" % (r.returncode, log.name))
    return took


def in_flight_peak(reqs):
    events = sorted([(r["start_ms"], 1) for r in reqs] + [(r["end_ms"], -1) for r in reqs if r["end_ms"]],
                    key=lambda e: (e[0], e[1]))
    now = peak = 0
    for _, d in events:
        now += d
        peak = max(peak, now)
    return peak


def healthy(d, args):
    hosts = ["site%d.test" % i for i in range(args.hosts)]
    times = {True: [], False: []}
    for run in range(args.runs):
        for guard in (True, False) if run % 2 == 0 else (False, True):
            procs = fleet.Procs(d)
            try:
                log = os.path.join(d, "healthy-%d-%s.jsonl" % (run, guard))
                port = fleet.start_server(procs, args.hosts, args.pages, 5, log, delay_ms=args.delay_ms)
                times[guard].append(audit(d, port, hosts, args.pages, guard, "healthy-%d-%s" % (run, guard)))
                fleet.stop_server(procs)
            finally:
                procs.stop_all()
            print("  run %d, guard %-3s: %.2f s" % (run + 1, "on" if guard else "off", times[guard][-1]))
    on, off = statistics.median(times[True]), statistics.median(times[False])
    print("healthy hosts (%d x %d pages, %d ms answers): median wall time guard on %.2f s, off %.2f s, "
          "on/off %.3f (target <= 1.03)" % (args.hosts, args.pages, args.delay_ms, on, off, on / off))


def degrading(d, args):
    host = "site0.test"
    for guard in (True, False):
        procs = fleet.Procs(d)
        try:
            log = os.path.join(d, "degrading-%s.jsonl" % guard)
            port = fleet.start_server(procs, 1, args.slow_pages, 3, log,
                                      extra=("--single-worker-host", host, "--service-ms", str(args.service_ms)))
            took = audit(d, port, [host], args.slow_pages, guard, "degrading-%s" % guard)
            fleet.stop_server(procs)
        finally:
            procs.stop_all()
        reqs = [r for r in fleet.read_log(log) if r["host"] == host and r["end_ms"] is not None]
        durations = [r["end_ms"] - r["start_ms"] for r in reqs]
        base = durations[0] if durations else 0
        med = statistics.median(durations) if durations else 0
        print("degrading host (one worker, %d ms a request), guard %-3s: median %.0f ms vs idle baseline %.0f ms "
              "(%.1fx), %d requests, at most %d in flight, audit %.1f s"
              % (args.service_ms, "on" if guard else "off", med, base, med / base if base else 0,
                 len(reqs), in_flight_peak(reqs), took))


def one_at_a_time(d, args):
    host = "site0.test"
    for guard in (True, False):
        procs = fleet.Procs(d)
        try:
            log = os.path.join(d, "one-%s.jsonl" % guard)
            port = fleet.start_server(procs, 1, args.slow_pages, 3, log,
                                      extra=("--single-worker-host", host, "--service-ms", str(args.one_service_ms)))
            took = audit(d, port, [host], args.slow_pages, guard, "one-%s" % guard,
                         extra=("--gap-ms", "0", "--in-flight", "4"))
            fleet.stop_server(procs)
        finally:
            procs.stop_all()
        reqs = [r for r in fleet.read_log(log) if r["host"] == host and r["end_ms"] is not None]
        durations = [r["end_ms"] - r["start_ms"] for r in reqs]
        med = statistics.median(durations) if durations else 0
        print("one-at-a-time server (%d ms a request), --gap-ms 0 --in-flight 4, guard %-3s: server median %.0f ms "
              "(target <= 300 ms), %d requests, at most %d in flight, audit %.1f s"
              % (args.one_service_ms, "on" if guard else "off", med, len(reqs), in_flight_peak(reqs), took))


def first_seconds(d, args):
    hosts = ["site%d.test" % i for i in range(args.shared_hosts)]
    for guard in (True, False):
        procs = fleet.Procs(d)
        try:
            log = os.path.join(d, "shared-%s.jsonl" % guard)
            port = fleet.start_server(procs, args.shared_hosts, args.shared_pages, 2, log,
                                      extra=("--shared-worker", "--service-ms", str(args.shared_service_ms)))
            took = audit(d, port, hosts, args.shared_pages, guard, "shared-%s" % guard)
            fleet.stop_server(procs)
        finally:
            procs.stop_all()
        reqs = [r for r in fleet.read_log(log) if r["end_ms"] is not None]
        t0 = min(r["start_ms"] for r in reqs)
        first = [r for r in reqs if r["start_ms"] - t0 < 5000]
        durations = [r["end_ms"] - r["start_ms"] for r in first]
        rest = min(r["end_ms"] - r["start_ms"] for r in reqs)
        med = statistics.median(durations) if durations else 0
        print("shared server (%d hosts, one worker, %d ms a request), first 5 s, guard %-3s: at most %d in flight, "
              "median %.0f ms vs %.0f ms at rest (%.1fx), %d requests then; audit %.1f s, %d requests"
              % (args.shared_hosts, args.shared_service_ms, "on" if guard else "off", in_flight_peak(first), med,
                 rest, med / rest if rest else 0, len(first), took, len(reqs)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=10)
    ap.add_argument("--pages", type=int, default=60)
    ap.add_argument("--delay-ms", type=int, default=20)
    ap.add_argument("--slow-pages", type=int, default=40)
    ap.add_argument("--service-ms", type=int, default=500)
    ap.add_argument("--one-service-ms", type=int, default=120)
    ap.add_argument("--shared-hosts", type=int, default=50)
    ap.add_argument("--shared-pages", type=int, default=5)
    ap.add_argument("--shared-service-ms", type=int, default=50)
    ap.add_argument("--only", choices=("healthy", "degrading", "one", "shared"),
                    help="run one part only (default: all)")
    ap.add_argument("--bin-dir", help="where shoal and shoal-testsite are (default: target/dist)")
    args = ap.parse_args()
    if args.bin_dir:
        fleet.SHOAL = os.path.join(args.bin_dir, "shoal")
        fleet.TESTSITE = os.path.join(args.bin_dir, "shoal-testsite")
    for b in (fleet.SHOAL, fleet.TESTSITE):
        if not os.path.exists(b):
            raise SystemExit("%s missing: %s" % (b, fleet.BUILD))
    print("machine: reference loop %.2f s" % fleet.reference_loop())
    with tempfile.TemporaryDirectory(prefix="shoal-latency-") as d:
        parts = {"healthy": healthy, "degrading": degrading, "one": one_at_a_time, "shared": first_seconds}
        for name, part in parts.items():
            if args.only in (None, name):
                part(d, args)
    return 0


if __name__ == "__main__":
    fleet.script(main)
