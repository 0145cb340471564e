#!/usr/bin/env python3
"""Issue 38's figures, the rendered crawl: a generated JavaScript site (shoal-testsite --app-shell:
--pages pages, --links links a page, every page an empty shell whose bundle /app.js writes its
heading, text and links) audited by `shoal audit` with `--render never` and with
`--render always`, one after the other on one machine. Per run:

  - pages found (pages rows with status 200) and pages rendered;
  - requests the server saw, per page found, and those Chromium made (its user agent), per page
    rendered: the bundle is cacheable, so after the first page a render costs its document alone;
  - the bundle's requests by Chromium (1: the site's cache is kept between its pages);
  - wall time, CPU (user + sys of `shoal audit` and the processes it waited for: Chromium's
    renderers are not all among them, so this is Shoal's CPU and part of Chromium's at most) and
    both per rendered page; the render time the audit recorded per page;
  - peak RSS of `shoal audit` itself (ru_maxrss) and of Chromium's processes together (the sum of
    their VmRSS, sampled every 200 ms: processes whose command line names a profile folder
    `shoal-chromium-…`).

Only 127.0.0.1 is used (`--resolve site0.test=127.0.0.1`); every run is bounded by --timeout-s and
every process is stopped in a `finally`. The page loads of one host are at least 1 s apart
(RENDER_MIN_GAP), so `always` takes about --pages x (1 s + a load) seconds. Run from the
repository root after `cargo build --profile dist -p shoal -p shoal-tests` (or give --bin-dir):
    python3 bench/render.py [--pages 200] [--links 5] [--bin-dir target/dist] [--keep DIR]
"""
import argparse
import os
import shutil
import sqlite3
import subprocess
import tempfile
import threading
import time

import fleet
from cpu import run_child
from fleet import Procs, read_log, stop_server

PROFILE = "shoal-chromium-"
HOST = "site0.test"


class ChromiumRss:
    """Samples the summed RSS of Chromium's processes (those whose command line names a profile
    folder of Shoal's) every 200 ms in a thread, keeping the peak."""

    def __init__(self):
        self.peak_kib = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def sample(self):
        total = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if PROFILE.encode() not in f.read():
                        continue
                with open("/proc/%s/status" % pid) as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1])
            except OSError:
                continue
        return total

    def run(self):
        while not self.stop.wait(0.2):
            self.peak_kib = max(self.peak_kib, self.sample())

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)


def one(args, mode, d):
    os.makedirs(d, exist_ok=True)
    procs = Procs(d)
    db = os.path.join(d, "audit.db")
    log = os.path.join(d, "requests.jsonl")
    try:
        p = procs.start("testsite", [fleet.TESTSITE, "--hosts", "1", "--pages", str(args.pages), "--links",
                                     str(args.links), "--app-shell", "--log-json", log,
                                     "--max-seconds", str(args.timeout_s + 120)], stdout=subprocess.PIPE)
        web = p.stdout.readline().strip()
        if not web.startswith("listening "):
            raise SystemExit("test server did not start: %r" % web)
        port = int(web.rsplit(":", 1)[1])
        cmd = [fleet.SHOAL, "audit", "http://%s:%d/" % (HOST, port), "--db", db, "--allow-private",
               "--no-progress", "--no-dns", "--resolve", "%s=127.0.0.1" % HOST, "--max-pages",
               str(args.pages), "--max-depth", "50", "--gap-ms", str(args.gap_ms), "--render", mode,
               "--render-budget", str(args.pages)]
        with ChromiumRss() as rss:
            res = run_child(cmd, os.path.join(d, "shoal-audit.log"), args.timeout_s)
        res["chromium_peak_kib"] = rss.peak_kib
        stop_server(procs)
    finally:
        procs.stop_all()
    if res["rc"] != 0:
        raise SystemExit("shoal audit failed with %d%s; see %s" % (
            res["rc"], " (timed out)" if res["timed_out"] else "", os.path.join(d, "shoal-audit.log")))
    reqs = read_log(log)
    browser = [r for r in reqs if "Chrome" in (r.get("user_agent") or "")]
    res["requests"], res["browser_requests"] = len(reqs), len(browser)
    res["bundle_by_browser"] = sum(1 for r in browser if r["path"] == "/app.js")
    # Page loads: Chromium's requests of the pages themselves (not the bundle, robots.txt or the
    # favicon), in order; the least time between two starts, against RENDER_MIN_GAP (1 s).
    loads = sorted(r["start_ms"] for r in browser if r["path"] == "/" or r["path"].startswith("/p/"))
    res["min_load_gap_ms"] = min((b - a for a, b in zip(loads, loads[1:])), default=None)
    res["robots_first"] = bool(reqs) and min(reqs, key=lambda r: r["start_ms"])["path"] == "/robots.txt"
    with sqlite3.connect(db) as c:
        res["pages"] = c.execute("SELECT COUNT(*) FROM pages WHERE kind = 'page' AND status = 200").fetchone()[0]
        row = c.execute("SELECT COUNT(*), COALESCE(SUM(render_ms), 0), COALESCE(SUM(requests), 0) FROM rendered_pages "
                        "WHERE queued = 0 AND error IS NULL").fetchone()
        res["rendered"], res["render_ms"], res["render_requests"] = row
        res["failed"] = c.execute("SELECT COUNT(*) FROM rendered_pages WHERE error IS NOT NULL").fetchone()[0]
    return res


def show(mode, r):
    n = max(r["rendered"], 1)
    print("--render %-6s pages found %4d, rendered %4d (failed %d); requests %5d (%.2f per page found); "
          "Chromium's %4d (%.2f per rendered page; the bundle %d time(s)); recorded by the renders %d" % (
              mode, r["pages"], r["rendered"], r["failed"], r["requests"], r["requests"] / max(r["pages"], 1),
              r["browser_requests"], r["browser_requests"] / n, r["bundle_by_browser"], r["render_requests"]))
    print("               wall %.1f s, CPU %.2f s (user %.2f, sys %.2f)%s; render time %.0f ms per rendered page; "
          "peak RSS: shoal %.1f MiB, Chromium %.1f MiB" % (
              r["wall"], r["cpu"], r["user"], r["sys"],
              ", per rendered page: wall %.2f s, CPU %.3f s" % (r["wall"] / n, r["cpu"] / n) if r["rendered"] else "",
              r["render_ms"] / n, r["maxrss_kib"] / 1024, r["chromium_peak_kib"] / 1024), flush=True)
    if r["rendered"]:
        gap = r["min_load_gap_ms"]
        print("               least time between two page loads %s ms (at least 1000); robots.txt first: %s" % (
            "-" if gap is None else "%.0f" % gap, r["robots_first"]), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--links", type=int, default=5)
    ap.add_argument("--gap-ms", type=int, default=0, help="the host's gap (renders: at least 1 s apart anyway)")
    ap.add_argument("--bin-dir", default=fleet.BIN_DIR, help="where shoal and shoal-testsite are (default target/dist)")
    ap.add_argument("--timeout-s", type=int, default=1800)
    ap.add_argument("--keep", help="keep databases and logs in this folder")
    args = ap.parse_args()
    fleet.SHOAL = os.path.join(args.bin_dir, "shoal")
    fleet.TESTSITE = os.path.join(args.bin_dir, "shoal-testsite")
    for b in (fleet.SHOAL, fleet.TESTSITE):
        if not os.path.exists(b):
            raise SystemExit("%s is missing: cargo build --profile dist -p shoal -p shoal-tests" % b)
    root = args.keep or tempfile.mkdtemp(prefix="shoal-render-bench-")
    try:
        with open("/proc/loadavg") as f:
            print("load average before: %s; reference loop (python3, 20M iterations): %.2f s" % (
                f.read().split(" ", 3)[:3], fleet.reference_loop()))
        out = {}
        for mode in ("never", "always"):
            out[mode] = one(args, mode, os.path.join(root, mode))
            show(mode, out[mode])
        never, always = out["never"], out["always"]
        print("pages found: always %d, never %d (%.0fx)" % (always["pages"], never["pages"],
                                                           always["pages"] / max(never["pages"], 1)))
        if always["pages"] < args.pages:
            raise SystemExit("the rendered crawl found %d of %d pages" % (always["pages"], args.pages))
        if always["min_load_gap_ms"] is not None and always["min_load_gap_ms"] < 1000:
            raise SystemExit("two page loads %d ms apart" % always["min_load_gap_ms"])
        if not always["robots_first"] or always["bundle_by_browser"] != 1:
            raise SystemExit("robots.txt first: %s; the bundle fetched %d times" % (
                always["robots_first"], always["bundle_by_browser"]))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
