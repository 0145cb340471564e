#!/usr/bin/env python3
"""Do two builds of Shoal find the same things? For refactors that must keep behaviour.

Runs `shoal audit` of an OLD and a NEW binary, one after the other, against the same sites on
loopback, and compares the audit databases: every URL with its kind, status, error, depth and how it
was found, every link, every finding (code, URL, detail). Timings (response_ms, fetched_at) are not
compared. Prints the counts and the differences; exits 1 if there are any.

The sites:
  - a farm of generated sites served by `shoal-testsite` (the test web server's own binary);
  - real-world HTML: Debian's documentation trees under /usr/share/doc (made by generators nobody
    here wrote: Sphinx, DocBook, Doxygen, ...), served by Python's http.server, when present.

Usage (from the repository root):
    python3 bench/same_results.py --old OLD/shoal --new target/debug/shoal \
        --testsite target/debug/shoal-testsite [--hosts 20 --pages 40] [--docs DIR ...]
To build an older revision beside the working tree:
    git worktree add /tmp/shoal-old REV && (cd /tmp/shoal-old && \
        CARGO_TARGET_DIR=/tmp/shoal-old/target cargo build -p <its binary package>)
Only 127.0.0.1 is contacted; every process is bounded in time.
"""

import argparse
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

DEFAULT_DOCS = [
    "/usr/share/doc/python3-pip/html",
    "/usr/share/doc/valgrind/html",
    "/usr/share/doc/libxslt1-dev/html",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_testsite(binary, hosts, pages):
    p = subprocess.Popen(
        [binary, "--hosts", str(hosts), "--pages", str(pages), "--max-seconds", "900"],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = p.stdout.readline().strip()
    if not line.startswith("listening "):
        p.kill()
        raise SystemExit("shoal-testsite did not start: %r" % line)
    return p, int(line.rsplit(":", 1)[1])


def start_docs(directory):
    port = free_port()
    p = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", directory],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return p, port
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise SystemExit("http.server did not start on %d" % port)


def audit(binary, db, starts, resolves, timeout_s):
    # --no-dns: only the --resolve names exist, so nothing but loopback is ever contacted (links to
    # real sites in the documentation fail as `dns` without a query).
    cmd = [binary, "audit", "--db", db, "--no-progress", "--allow-private", "--no-dns", "--gap-ms", "0",
           "--max-pages", "300"]
    for r in resolves:
        cmd += ["--resolve", r]
    cmd += starts
    t0 = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                         env={**os.environ, "SHOAL_LOG": "warn"})
    if out.returncode != 0:
        raise SystemExit("%s exited %d:\n%s" % (binary, out.returncode, out.stderr[-3000:]))
    return time.time() - t0


def contents(db):
    c = sqlite3.connect(db)
    q = lambda sql: set(c.execute(sql).fetchall())
    pages = q("SELECT s.start_url, p.url, p.kind, p.status, p.error, p.redirect_to, p.depth, p.found_via, "
              "p.found_from, p.content_type, p.bytes, p.title FROM pages p JOIN sites s ON s.id = p.site_id")
    links = q("SELECT s.start_url, l.from_url, l.to_url, l.kind FROM links l JOIN sites s ON s.id = l.site_id")
    findings = q("SELECT s.start_url, f.code, f.url, f.detail FROM findings f JOIN sites s ON s.id = f.site_id")
    c.close()
    return {"pages": pages, "links": links, "findings": findings}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--testsite", required=True)
    ap.add_argument("--hosts", type=int, default=20)
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--docs", nargs="*", default=None, help="documentation trees to serve (default: some of Debian's)")
    ap.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args()
    docs = [d for d in (args.docs if args.docs is not None else DEFAULT_DOCS) if os.path.isdir(d)]

    procs = []
    try:
        site, port = start_testsite(args.testsite, args.hosts, args.pages)
        procs.append(site)
        starts = ["http://site%d.test:%d/" % (i, port) for i in range(args.hosts)]
        resolves = ["site%d.test=127.0.0.1" % i for i in range(args.hosts)]
        for i, d in enumerate(docs):
            p, dport = start_docs(d)
            procs.append(p)
            starts.append("http://docs%d.test:%d/" % (i, dport))
            resolves.append("docs%d.test=127.0.0.1" % i)
        with tempfile.TemporaryDirectory() as tmp:
            results = {}
            for name, binary in (("old", args.old), ("new", args.new)):
                db = os.path.join(tmp, name + ".db")
                took = audit(binary, db, starts, resolves, args.timeout)
                results[name] = contents(db)
                print("%s: %s  %.1f s  %s" % (name, binary, took,
                      "  ".join("%s %d" % (k, len(v)) for k, v in results[name].items())))
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()

    print("sites: %d generated x %d pages, %d documentation trees: %s" % (args.hosts, args.pages, len(docs),
          ", ".join(docs) or "none"))
    differ = 0
    for table in ("pages", "links", "findings"):
        old, new = results["old"][table], results["new"][table]
        only_old, only_new = sorted(old - new, key=repr), sorted(new - old, key=repr)
        print("%s: %d same, %d only old, %d only new" % (table, len(old & new), len(only_old), len(only_new)))
        for row in only_old[:10]:
            print("  - old", row)
        for row in only_new[:10]:
            print("  + new", row)
        differ += len(only_old) + len(only_new)
    print("RESULT: %s" % ("same pages, links and findings" if differ == 0 else "%d rows differ" % differ))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
