#!/usr/bin/env python3
"""Shoal engine benchmark (issue 2 figures): `shoal audit` against the local test server.

Prints:
  1. one site of 200 pages, gap 100 ms, 4 in flight: wall time against the politeness limit
     (200 page starts + robots.txt, 100 ms apart = 20.0 s), as a ratio;
  2. 20 sites x 200 pages, gap 0: pages per second and CPU milliseconds per page (user+sys of
     the shoal process), plus the server's view of politeness (max in flight per host).

Only 127.0.0.1 is used. Every run is bounded (--max-seconds on the server, a timeout on shoal).
Run from the repository root after `cargo build --profile dist -p shoal -p shoal-tests` (the
profile of the image and the packages: CPU per page is what users run):
    python3 bench/engine.py [--runs N]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHOAL = os.path.join(ROOT, "target", "dist", "shoal")
TESTSITE = os.path.join(ROOT, "target", "dist", "shoal-testsite")


def start_server(hosts, pages, links, log_path, delay_ms=0):
    p = subprocess.Popen(
        [TESTSITE, "--hosts", str(hosts), "--pages", str(pages), "--links", str(links),
         "--delay-ms", str(delay_ms), "--max-seconds", "600", "--log-json", log_path],
        stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    if not line.startswith("listening "):
        p.kill()
        raise SystemExit("test server did not start: %r" % line)
    port = int(line.rsplit(":", 1)[1])
    return p, port


def stop_server(p):
    p.terminate()
    try:
        p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()


def run_shoal(urls, hosts, port, extra, db):
    args = [SHOAL, "audit", *urls, "--db", db, "--allow-private", "--no-dns", "--no-progress"]
    for h in hosts:
        args += ["--resolve", "%s=127.0.0.1" % h]
    args += extra
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600,
                       env={**os.environ, "SHOAL_LOG": "warn"})
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit("shoal failed (%d): %s" % (r.returncode, r.stderr[-2000:]))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def read_log(path):
    reqs = []
    with open(path) as f:
        for line in f:
            if line.strip():
                reqs.append(json.loads(line))
    return reqs


def politeness(reqs):
    """Max in flight and min gap between starts, per host, from the server's log."""
    by_host = defaultdict(list)
    for r in reqs:
        by_host[r["host"]].append(r)
    out = {}
    for host, rs in by_host.items():
        rs.sort(key=lambda r: r["start_ms"])
        events = []
        for r in rs:
            end = r.get("end_ms")
            events.append((r["start_ms"], 1))
            events.append((end if end is not None else float("inf"), -1))
        events.sort(key=lambda e: (e[0], e[1]))
        cur = peak = 0
        for _, d in events:
            cur += d
            peak = max(peak, cur)
        starts = [r["start_ms"] for r in rs]
        gaps = [b - a for a, b in zip(starts, starts[1:])]
        out[host] = (len(rs), peak, min(gaps) if gaps else None)
    return out


def figure_one(runs):
    print("== 1. one site, 200 pages, gap 100 ms, 4 in flight ==")
    limit = 200 * 0.1  # 201 requests (robots.txt + 200 pages) have 200 gaps of 100 ms
    for i in range(runs):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "log.jsonl")
            srv, port = start_server(1, 200, 5, log)
            try:
                wall, cpu = run_shoal(["http://site0.test:%d/" % port], ["site0.test"], port,
                                      ["--gap-ms", "100", "--in-flight", "4"], os.path.join(d, "a.db"))
            finally:
                stop_server(srv)
            pol = politeness(read_log(log))
            n, peak, gap = pol["site0.test"]
            print("run %d: %d requests, wall %.2f s = %.3f x the 20.0 s politeness limit "
                  "(%+.1f %%); server saw max %d in flight, min gap %.1f ms"
                  % (i + 1, n, wall, wall / limit, (wall / limit - 1) * 100, peak, gap))


def figure_two(runs, sites=20, pages=200):
    print("== 2. %d sites x %d pages, gap 0 (default 4 in flight per host, 8 per IP) ==" % (sites, pages))
    hosts = ["site%d.test" % i for i in range(sites)]
    for i in range(runs):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "log.jsonl")
            srv, port = start_server(sites, pages, 5, log)
            try:
                urls = ["http://%s:%d/" % (h, port) for h in hosts]
                wall, cpu = run_shoal(urls, hosts, port, ["--gap-ms", "0", "--ip-in-flight", "16"],
                                      os.path.join(d, "a.db"))
            finally:
                stop_server(srv)
            reqs = read_log(log)
            pol = politeness(reqs)
            total_pages = sites * pages
            worst = max(p[1] for p in pol.values())
            print("run %d: %d pages in %.2f s = %.0f pages/s; shoal CPU %.2f s = %.2f ms/page; "
                  "%d requests seen by the server, max %d in flight per host"
                  % (i + 1, total_pages, wall, total_pages / wall, cpu, cpu * 1000 / total_pages,
                     len(reqs), worst))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    for b in (SHOAL, TESTSITE):
        if not os.path.exists(b):
            raise SystemExit("%s missing: cargo build --profile dist -p shoal -p shoal-tests" % b)
    print("machine: %d CPUs; figures are noisy on shared machines, compare ratios" % os.cpu_count())
    figure_one(args.runs)
    figure_two(args.runs)


if __name__ == "__main__":
    sys.exit(main())
