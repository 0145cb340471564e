#!/usr/bin/env python3
"""Issue 40's figure for the domain checks: the wall time of `shoal audit` of bench/cpu.py's farm
(shoal-testsite: --hosts sites of --pages pages, gap 0 (--gap-ms), --in-flight 4 per host,
--ip-in-flight 16)
with every site on one registrable domain (site0.provider.test, site1.provider.test, ...), with
the domain checks (DNS, mail, RDAP) on, against the same audit with --no-dns-checks. Target: at
most 1.1x.

Every name is looked up through the farm's own DNS server (shoal-testsite --dns, on 127.0.0.1),
which serves the provider's zone: every host at 127.0.0.1, two name servers, the null MX (so no
mail server is talked to), SPF, DMARC without reports (so `dmarc_reports_missing`, a finding of the
domain's, which every site must carry), CAA, DNSKEY. The registry (IANA's bootstrap host) is in no
zone it serves, so the RDAP check fails at its lookup without a packet leaving the machine.
--runs runs of each, alternating (checks on first); medians and every run printed, with the DNS
questions the farm's server answered per run (one check of the domain, one CAA question per site
plus the hosts' lookups) and the sites' domain findings from the audit database.

Only 127.0.0.1 is used; every run is bounded by --timeout-s; every process is stopped in a
`finally`. Run from the repository root after `cargo build --profile dist -p shoal -p shoal-tests`
(or with --bin-dir target/release or target/debug for another build, labelled as such):
    python3 bench/domain_checks.py [--hosts 200] [--pages 50] [--runs 3]
"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import tempfile

import fleet
from cpu import run_child
from fleet import Procs, stop_server

DOMAIN = "provider.test"


def audit(args, d, label, checks):
    os.makedirs(d, exist_ok=True)
    procs = Procs(d)
    db = os.path.join(d, "audit.db")
    hosts = ["site%d.%s" % (i, DOMAIN) for i in range(args.hosts)]
    try:
        p = procs.start("testsite", [args.testsite, "--hosts", str(args.hosts), "--pages", str(args.pages),
                                     "--links", str(args.links), "--domain", DOMAIN, "--dns",
                                     "--max-seconds", str(args.timeout_s + 120)],
                        stdout=subprocess.PIPE)
        web = p.stdout.readline().strip()
        dns = p.stdout.readline().strip()
        if not web.startswith("listening ") or not dns.startswith("dns "):
            raise SystemExit("test server did not start: %r %r" % (web, dns))
        port = int(web.rsplit(":", 1)[1])
        urls = ["http://%s:%d/" % (h, port) for h in hosts]
        cmd = [args.shoal, "audit", *urls, "--db", db, "--allow-private", "--no-progress",
               "--dns-server", dns.split(" ", 1)[1], "--ip-in-flight", str(args.ip_in_flight),
               "--max-pages", str(args.pages), "--max-depth", "50", "--gap-ms", str(args.gap_ms),
               "--in-flight", str(args.in_flight)]
        if not checks:
            cmd.append("--no-dns-checks")
        res = run_child(cmd, os.path.join(d, "shoal-audit.log"), args.timeout_s, {"SHOAL_LOG": "warn"})
        summary = stop_server(procs)
    finally:
        procs.stop_all()
    if res["rc"] != 0:
        raise SystemExit("shoal audit (%s) failed with %d; see %s" % (label, res["rc"], d))
    conn = sqlite3.connect(db)
    try:
        res["sites"] = conn.execute("SELECT COUNT(*) FROM sites").fetchone()[0]
        res["pages"] = conn.execute("SELECT COUNT(*) FROM pages WHERE kind = 'page'").fetchone()[0]
        # A finding of the domain's: found once, carried by every site.
        res["sites_with_domain_finding"] = conn.execute(
            "SELECT COUNT(DISTINCT site_id) FROM findings WHERE code = 'dmarc_reports_missing'").fetchone()[0]
    finally:
        conn.close()
    res["requests"] = int(summary.get("requests", 0))
    res["dns_questions"] = int(summary.get("dns_questions", 0))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--pages", type=int, default=50)
    ap.add_argument("--links", type=int, default=5)
    ap.add_argument("--in-flight", type=int, default=4)
    ap.add_argument("--gap-ms", type=int, default=0,
                    help="the sites' gap (cpu.py's farm: 0; Shoal's default is 300, where the issue measured)")
    ap.add_argument("--ip-in-flight", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout-s", type=int, default=900)
    ap.add_argument("--bin-dir", default=fleet.BIN_DIR,
                    help="where shoal and shoal-testsite are (copied first, so a rebuild changes nothing)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="shoal-domain-checks-")
    for name in ("shoal", "shoal-testsite"):
        src = os.path.join(args.bin_dir, name)
        dst = os.path.join(work, name)
        subprocess.run(["cp", src, dst], check=True)
    args.shoal, args.testsite = os.path.join(work, "shoal"), os.path.join(work, "shoal-testsite")
    print("binaries from %s; %d sites x %d pages under %s, gap %d ms; %d runs each; work dir %s"
          % (args.bin_dir, args.hosts, args.pages, DOMAIN, args.gap_ms, args.runs, work), flush=True)
    results = {True: [], False: []}
    for i in range(args.runs):
        for checks in (True, False):
            label = "checks" if checks else "no-dns-checks"
            r = audit(args, os.path.join(work, "%s-%d" % (label, i)), label, checks)
            results[checks].append(r)
            print("run %d %-14s wall %7.2f s  cpu %6.2f s  requests %6d  pages %6d  sites %d  "
                  "dns questions %5d  sites with the domain's dmarc finding %d"
                  % (i + 1, label, r["wall"], r["cpu"], r["requests"], r["pages"], r["sites"],
                     r["dns_questions"], r["sites_with_domain_finding"]), flush=True)
    on = statistics.median(r["wall"] for r in results[True])
    off = statistics.median(r["wall"] for r in results[False])
    print("median wall: checks %.2f s, --no-dns-checks %.2f s, ratio %.3f (target <= 1.1)" % (on, off, on / off))


if __name__ == "__main__":
    main()
