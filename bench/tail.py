#!/usr/bin/env python3
"""Issue 43 part 1's figure, the tail: does `shoal audit` end when the slowest host's politeness
bound says so, or does something wait after the last page?

The farm is bench/cpu.py part A's (shoal-testsite: --hosts sites of --pages pages, --links links a
page, gap 0 (--gap-ms), --in-flight 4 per host, --ip-in-flight 16), with every site under one
registrable domain (site0.provider.test ...; `--domain provider.test --dns`, every name looked up
through the farm's own DNS server with --dns-server, so the domain checks run as in
bench/domain_checks.py) and the first --delay-hosts (20) hosts serving a robots.txt with
`Crawl-delay: --crawl-delay-s` (1). Per run, from the test server's request log (times in ms
since the server started, moved to the audit process's clock by the summary's origin_unix_ms):

  - the slowest host's politeness bound: max over the hosts of (its requests, robots.txt
    included) x (its gap: its Crawl-delay, or --gap-ms);
  - when the last request the server saw started, and when the last page request did;
  - the process's wall time, and wall / bound (target: at most 1.05);
  - the requests after the slowest host's last one (their hosts and paths: what the tail is made
    of), and the DNS questions the farm's server answered.

With --base-bin the same runs with that binary first (alternating with the current one, --runs
each), the same farm (the current shoal-testsite for both); the audit databases are compared per
site as cpu.py does (pages and findings); any difference is printed and the exit status is 1.

Only 127.0.0.1 is used; every run is bounded by --timeout-s; every process is stopped in a
`finally`. Run from the repository root after `cargo build --profile dist -p shoal -p shoal-tests`:
    python3 bench/tail.py [--base-bin /tmp/shoal-base] [--runs 1] [--keep DIR]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import Counter, defaultdict

import fleet
from cpu import compare_dbs, db_content, db_summary, run_child
from fleet import Procs, read_log, stop_server

DOMAIN = "provider.test"


def audit(args, shoal, d):
    os.makedirs(d, exist_ok=True)
    procs = Procs(d)
    db = os.path.join(d, "audit.db")
    log = os.path.join(d, "requests.jsonl")
    hosts = ["site%d.%s" % (i, DOMAIN) for i in range(args.hosts)]
    try:
        p = procs.start("testsite", [args.testsite, "--hosts", str(args.hosts), "--pages", str(args.pages),
                                     "--links", str(args.links), "--domain", DOMAIN, "--dns",
                                     "--crawl-delay-hosts", str(args.delay_hosts),
                                     "--crawl-delay-s", str(args.crawl_delay_s), "--log-json", log,
                                     "--max-seconds", str(args.timeout_s + 120)],
                        stdout=subprocess.PIPE)
        web = p.stdout.readline().strip()
        dns = p.stdout.readline().strip()
        if not web.startswith("listening ") or not dns.startswith("dns "):
            raise SystemExit("test server did not start: %r %r" % (web, dns))
        port = int(web.rsplit(":", 1)[1])
        urls = ["http://%s:%d/" % (h, port) for h in hosts]
        cmd = [shoal, "audit", *urls, "--db", db, "--allow-private", "--no-progress",
               "--dns-server", dns.split(" ", 1)[1], "--ip-in-flight", str(args.ip_in_flight),
               "--max-pages", str(args.pages), "--max-depth", "50", "--gap-ms", str(args.gap_ms),
               "--in-flight", str(args.in_flight)]
        t0_ms = time.time() * 1000
        res = run_child(cmd, os.path.join(d, "shoal-audit.log"), args.timeout_s, {"SHOAL_LOG": args.log})
        summary = stop_server(procs)
    finally:
        procs.stop_all()
    if res["rc"] != 0:
        raise SystemExit("shoal audit failed with %d%s; see %s" % (
            res["rc"], " (timed out)" if res["timed_out"] else "", os.path.join(d, "shoal-audit.log")))
    shift = float(summary["origin_unix_ms"]) - t0_ms  # server ms -> ms since the audit started
    reqs = sorted(read_log(log), key=lambda r: r["start_ms"])
    for r in reqs:
        r["t"] = (r["start_ms"] + shift) / 1000
    per_host = Counter(r["host"] for r in reqs)
    delayed = {"site%d.%s" % (i, DOMAIN) for i in range(args.delay_hosts)}

    def gap_s(h):
        return args.crawl_delay_s if h in delayed else args.gap_ms / 1000

    slowest = max(per_host, key=lambda h: per_host[h] * gap_s(h))
    res["bound"] = per_host[slowest] * gap_s(slowest)
    res["slowest"], res["slowest_requests"] = slowest, per_host[slowest]
    res["requests"] = len(reqs)
    res["last"] = reqs[-1]["t"] if reqs else 0
    pages = [r for r in reqs if r["path"] != "/robots.txt" and "." not in r["path"].rsplit("/", 1)[-1]]
    res["last_page"] = pages[-1]["t"] if pages else 0
    slow_last = max(r["t"] for r in reqs if r["host"] == slowest)
    tail = [r for r in reqs if r["t"] > slow_last]
    res["tail"] = Counter((r["host"] if r["host"] in delayed else "other host", r["path"]) for r in tail)
    res["tail_n"] = len(tail)
    res["dns_questions"] = int(summary.get("dns_questions", 0))
    res.update(db_summary(db))
    res["content"] = db_content(db, port)
    return res


def show(label, i, r):
    print("%-8s run %d: wall %7.2f s  bound %6.1f s (%s: %d requests x its gap)  wall/bound %.3f  "
          "last request at %.2f s, last page request at %.2f s, wall - last request %.2f s; "
          "requests %d, pages %d, findings %d, dns questions %d"
          % (label, i + 1, r["wall"], r["bound"], r["slowest"], r["slowest_requests"],
             r["wall"] / max(r["bound"], 1e-9), r["last"], r["last_page"], r["wall"] - r["last"],
             r["requests"], r["pages"], r["findings"], r["dns_questions"]), flush=True)
    if r["tail_n"]:
        print("          %d request(s) after the slowest host's last: %s" % (r["tail_n"], ", ".join(
            "%s %s x%d" % (h, p, n) for (h, p), n in r["tail"].most_common(8))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--pages", type=int, default=50)
    ap.add_argument("--links", type=int, default=5)
    ap.add_argument("--in-flight", type=int, default=4)
    ap.add_argument("--gap-ms", type=int, default=0)
    ap.add_argument("--ip-in-flight", type=int, default=16)
    ap.add_argument("--delay-hosts", type=int, default=20, help="hosts with a Crawl-delay (20)")
    ap.add_argument("--crawl-delay-s", type=int, default=1, help="their Crawl-delay (1)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--timeout-s", type=int, default=600)
    ap.add_argument("--log", default="warn", help="SHOAL_LOG of the audits (warn)")
    ap.add_argument("--bin-dir", default=fleet.BIN_DIR,
                    help="where shoal and shoal-testsite are, copied first (the dist build's, as every benchmark)")
    ap.add_argument("--base-bin", help="a prebuilt shoal binary measured as the base")
    ap.add_argument("--keep", help="keep the logs and databases under this directory")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="shoal-tail-")
    os.makedirs(work, exist_ok=True)
    for name in ("shoal", "shoal-testsite"):
        shutil.copy2(os.path.join(args.bin_dir, name), os.path.join(work, name))
    args.testsite = os.path.join(work, "shoal-testsite")
    builds = []
    if args.base_bin:
        shutil.copy2(args.base_bin, os.path.join(work, "shoal-base"))
        builds.append(("base", os.path.join(work, "shoal-base")))
    builds.append(("current", os.path.join(work, "shoal")))
    print("farm: %d hosts x %d pages under %s, gap %d ms, in flight %d, %d hosts with Crawl-delay %d s; "
          "load %s; work dir %s" % (args.hosts, args.pages, DOMAIN, args.gap_ms, args.in_flight,
                                    args.delay_hosts, args.crawl_delay_s,
                                    " ".join("%.2f" % x for x in os.getloadavg()), work), flush=True)
    results = defaultdict(list)
    for i in range(args.runs):
        for label, shoal in builds:
            r = audit(args, shoal, os.path.join(work, "%s-%d" % (label, i)))
            results[label].append(r)
            show(label, i, r)
    ok = True
    for label, _ in builds:
        rs = results[label]
        print("%-8s median: wall %.2f s, bound %.1f s, wall/bound %.3f (target <= 1.05), "
              "last request %.2f s" % (label, statistics.median(r["wall"] for r in rs),
                                       statistics.median(r["bound"] for r in rs),
                                       statistics.median(r["wall"] / max(r["bound"], 1e-9) for r in rs),
                                       statistics.median(r["last"] for r in rs)))
        for j in range(1, len(rs)):
            ok &= compare_dbs("%s run %d against run 1" % (label, j + 1), rs[0]["content"], rs[j]["content"],
                              names=("run 1", "run %d" % (j + 1)), quiet=True)
    if args.base_bin:
        ok &= compare_dbs("base against current", results["base"][0]["content"],
                          results["current"][0]["content"])
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    fleet.script(main)
