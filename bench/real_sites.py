#!/usr/bin/env python3
"""Real sites (issue 12 item 9): Shoal against documentation trees from Debian's packages.

Each tree (valgrind's DocBook manual; pip's, Sphinx's, requests' and CPython's Sphinx manuals;
libxslt's site) is fetched with `apt-get download` and unpacked with `dpkg-deb -x` into a
temporary folder, served as a site of its own by Debian's nginx on 127.0.0.1 (one `server` block
per host name, one port, a private config and access log), and audited by one `shoal audit` with
its default limits. The pages Shoal fetched (nginx's access log, and the audit database) are
compared with a link graph computed here from the files, independently of Shoal's code:

  recall       reachable pages (within the depth and page limits) that Shoal fetched: >= 99 %
  unexpected   requests that are neither robots.txt, a standard probe (SPEC section 2), a
               reachable page nor a resource those pages load: zero

Only 127.0.0.1 is used (--no-dns: no name is looked up, so no link to another site leaves the
machine); every process started is stopped at the end; every wait is bounded. Run from the
repository root after `cargo build --release -p shoal`:

    python3 bench/real_sites.py [--keep DIR] [--no-external] [--timeout-s 1800] [--max-depth N] [--max-pages N]
"""
import argparse
import os
import posixpath
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.robotparser
from collections import Counter, deque
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import unquote, urljoin, urlsplit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHOAL = os.path.join(ROOT, "target", "release", "shoal")
DEFAULT_MAX_PAGES = 500  # Shoal's defaults (SPEC section 4)
DEFAULT_MAX_DEPTH = 5
AGENT = "ShoalBot"


@dataclass
class Site:
    host: str
    package: str
    tree: str  # the document root inside the package
    generator: str
    docroot: str = ""
    source: str = ""  # where the files came from, printed
    skipped: str = ""  # why the site is not served, printed


SITES = [
    Site("valgrind.test", "valgrind", "usr/share/doc/valgrind/html", "DocBook XSL"),
    Site("pip.test", "python3-pip", "usr/share/doc/python3-pip/html", "Sphinx"),
    Site("sphinx.test", "sphinx-doc", "usr/share/doc/sphinx-doc/html", "Sphinx (its own manual)"),
    Site("requests.test", "python-requests-doc", "usr/share/doc/python-requests-doc/html",
         "Sphinx, alabaster theme"),
    Site("libxslt.test", "libxslt1-dev", "usr/share/doc/libxslt1-dev/html",
         "libxslt's site XSLT, DocBook, Amaya"),
    Site("python.test", "python3.11-doc", "usr/share/doc/python3.11/html",
         "Sphinx (CPython's manual)"),
]

# Content types by extension, as Debian's /etc/nginx/mime.types has them (written into the
# config, and read here to know which files are HTML). Anything else: application/octet-stream.
TYPES = {
    "html": "text/html", "htm": "text/html", "shtml": "text/html", "xhtml": "application/xhtml+xml",
    "css": "text/css", "js": "application/javascript", "json": "application/json", "xml": "text/xml",
    "txt": "text/plain", "png": "image/png", "gif": "image/gif", "jpg": "image/jpeg",
    "jpeg": "image/jpeg", "svg": "image/svg+xml", "svgz": "image/svg+xml", "ico": "image/x-icon",
    "webp": "image/webp", "woff": "font/woff", "woff2": "font/woff2",
    "eot": "application/vnd.ms-fontobject", "pdf": "application/pdf", "zip": "application/zip",
}
HTML_TYPES = ("text/html", "application/xhtml+xml")

# ---------------------------------------------------------------------------------------------
# Which links a browser follows or loads (written from HTML's and HTML 4's link types, not from
# Shoal's code; bench/README.md lists where it differs from Shoal's table on purpose).

# <link rel> naming another page: HTML (next, prev, help, license, author), HTML 4.01 section
# 6.12 (start, contents, index, glossary, copyright, chapter, section, subsection, appendix,
# bookmark) and the older ones DocBook and gtk-doc still emit (up, home, top, first, last,
# previous, toc, begin, end).
PAGE_RELS = {
    "next", "prev", "previous", "help", "license", "author", "start", "contents", "index",
    "glossary", "copyright", "chapter", "section", "subsection", "appendix", "bookmark", "up",
    "home", "top", "first", "last", "toc", "begin", "end",
}
# <link rel> a browser loads with the page.
RESOURCE_RELS = {"stylesheet", "icon", "mask-icon", "preload", "modulepreload", "prefetch", "manifest"}
# Elements whose content a browser with scripting on does not parse as markup, or that are inert.
INERT = {"noscript", "template", "title", "textarea"}
PROBES = ("/robots.txt", "/llms.txt", "/.well-known/security.txt")
SOFT_404_PREFIX = "/shoal-soft-404-check-"


def rel_role(tokens):
    """page, resource or none for a <link>'s rel tokens."""
    if any(t in RESOURCE_RELS or t.startswith("apple-touch-icon") for t in tokens):
        return "resource"
    if "canonical" in tokens:
        return "page"  # SPEC: canonical targets are checked; Shoal's docs: crawled as a page
    if "alternate" in tokens or "search" in tokens:
        return "none"
    if any(t in PAGE_RELS for t in tokens):
        return "page"
    return "none"  # dns-prefetch, preconnect, pingback, EditURI, rev=made without rel ...


# ---------------------------------------------------------------------------------------------
# URLs, resolved and normalised the way a browser (WHATWG URL) and Shoal's normal form do.

C0_SPACE = "".join(chr(i) for i in range(0x21))
UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def encode(s, extra):
    out = []
    for ch in s:
        o = ord(ch)
        if o < 0x21 or o > 0x7E or ch in extra:
            out.append("".join("%%%02X" % b for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "".join(out)


def pct_normal(s):
    def one(m):
        c = chr(int(m.group(1), 16))
        return c if c in UNRESERVED else "%" + m.group(1).upper()
    return re.sub(r"%([0-9A-Fa-f]{2})", one, s)


def remove_dot_segments(path):
    out = []
    for seg in path.split("/")[1:]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    if path.split("/")[-1] in (".", ".."):
        out.append("")
    return "/" + "/".join(out)


def normalize(url):
    """The comparable form of an absolute http(s) URL, or None."""
    try:
        p = urlsplit(url)
        port = p.port
    except ValueError:
        return None
    scheme = p.scheme.lower()
    if scheme not in ("http", "https") or not p.hostname:
        return None
    if port == {"http": 80, "https": 443}[scheme]:
        port = None
    host = p.hostname if ":" not in p.hostname else "[%s]" % p.hostname
    path = pct_normal(encode(remove_dot_segments(p.path or "/"), '"<>`{}'))
    has_query = "?" in url.split("#", 1)[0]
    query = "?" + pct_normal(encode(p.query, "\"<>'")) if has_query else ""
    return "%s://%s%s%s%s" % (scheme, host, ":%d" % port if port else "", path, query)


def resolve(base, raw):
    """An attribute value resolved against the document's base, fragment dropped; None when it
    is not an http(s) URL."""
    s = raw.strip(C0_SPACE).replace("\t", "").replace("\n", "").replace("\r", "")
    m = SCHEME_RE.match(s)
    if m and m.group(1).lower() not in ("http", "https"):
        return None
    cut = min([i for i in (s.find("?"), s.find("#")) if i >= 0] or [len(s)])
    s = s[:cut].replace("\\", "/") + s[cut:]  # in http(s) URLs a backslash is a slash
    try:
        return normalize(urljoin(base, s))
    except ValueError:
        return None


CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]*)\1\s*\)|@import\s+(['"])([^'"]*)\3""", re.I)


def css_urls(text):
    return [m.group(2) if m.group(2) is not None else m.group(4) for m in CSS_URL.finditer(text)]


# ---------------------------------------------------------------------------------------------
# HTML parsing with Python's html.parser.

class Extract(HTMLParser):
    """Links of one document: (raw value, role, how, nofollow); role is page, resource,
    optional (a browser may load it: srcset, CSS url(), background=, poster ...) or none."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.base = None
        self.links = []
        self.page_nofollow = False
        self.inert = 0
        self.in_style = False

    def add(self, raw, role, how, nofollow=False):
        if raw is not None and (raw.strip() or role == "page" and how.startswith("<a")):
            self.links.append((raw, role, how, nofollow))

    def handle_starttag(self, tag, attrs):
        self.element(tag, attrs)
        if tag in INERT:
            self.inert += 1
        elif tag == "style" and not self.inert:
            self.in_style = True

    def handle_startendtag(self, tag, attrs):
        self.element(tag, attrs)

    def handle_endtag(self, tag):
        if tag in INERT and self.inert:
            self.inert -= 1
        elif tag == "style":
            self.in_style = False

    def handle_data(self, data):
        if self.in_style:
            for u in css_urls(data):
                self.add(u, "optional", "<style> url()")

    def element(self, tag, attrs):
        if self.inert:
            return
        a = {}
        for k, v in attrs:
            a.setdefault(k, v if v is not None else "")
        rel = a.get("rel", "").lower().split()
        nofollow = "nofollow" in rel
        if tag == "base" and self.base is None and "href" in a:
            self.base = a["href"]
        elif tag in ("a", "area") and "href" in a:
            self.add(a["href"], "page", "<%s href>" % tag, nofollow)
        elif tag == "link" and "href" in a:
            role = rel_role(rel)
            how = '<link rel="%s">' % " ".join(rel) if rel else "<link %s>" % (
                'rev="%s"' % a["rev"] if "rev" in a else "without rel")
            if a["href"].strip() or role == "none":
                self.links.append((a["href"], role, how, nofollow))
        elif tag in ("iframe", "frame"):
            self.add(a.get("src"), "page", "<%s src>" % tag)
        elif tag in ("img", "script", "video", "audio") or tag == "source":
            self.add(a.get("src"), "resource", "<%s src>" % tag)
        elif tag in ("embed", "track") or (tag == "input" and a.get("type", "").lower() == "image"):
            self.add(a.get("src"), "optional", "<%s src>" % tag)
        elif tag == "object":
            self.add(a.get("data"), "optional", "<object data>")
        elif tag == "meta":
            self.meta(a)
        for attr in ("srcset", "imagesrcset"):
            for cand in a.get(attr, "").split(","):
                if cand.strip():
                    self.add(cand.split()[0], "optional", "<%s %s>" % (tag, attr))
        if tag == "video":
            self.add(a.get("poster"), "optional", "<video poster>")
        if "background" in a:
            self.add(a["background"], "optional", "<%s background>" % tag)
        for u in css_urls(a.get("style", "")):
            self.add(u, "optional", "style= url()")

    def meta(self, a):
        name = a.get("name", "").strip().lower()
        if name in ("robots", AGENT.lower()):
            words = re.split(r"[\s,]+", a.get("content", "").lower())
            self.page_nofollow |= "nofollow" in words or "none" in words
        if a.get("http-equiv", "").strip().lower() == "refresh":
            m = re.search(r"url\s*=\s*['\"]?([^'\"]+)", a.get("content", ""), re.I)
            if m:
                self.add(m.group(1).strip(), "page", "<meta http-equiv=refresh>")


def decode(data):
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", "replace")
    head = data[:2048].decode("ascii", "replace")
    m = (re.search(r"<meta[^>]+charset\s*=\s*[\"']?([\w.-]+)", head, re.I)
         or re.search(r"<\?xml[^>]+encoding\s*=\s*[\"']([\w.-]+)", head, re.I))
    try:
        return data.decode(m.group(1) if m else "utf-8")
    except (LookupError, UnicodeDecodeError):
        return data.decode("cp1252", "replace")


# ---------------------------------------------------------------------------------------------
# The site as nginx serves it, and the breadth-first walk.

@dataclass
class Page:
    links: list  # (url, role, how, nofollow) with url resolved
    nofollow: bool


class Tree:
    def __init__(self, site, port):
        self.site, self.port = site, port
        self.origin = "http://%s:%d" % (site.host, port)
        self.start = self.origin + "/"
        self.pages = {}
        self.robots = None
        path = os.path.join(site.docroot, "robots.txt")
        if os.path.isfile(path):
            self.robots = urllib.robotparser.RobotFileParser()
            with open(path, encoding="utf-8", errors="replace") as f:
                self.robots.parse(f.read().splitlines())

    def in_site(self, url):
        return urlsplit(url).hostname == self.site.host

    def allowed(self, url):
        return self.robots is None or self.robots.can_fetch(AGENT, url)

    def respond(self, url):
        """What nginx answers: ("file", path, type), ("redirect", url), ("status", code)."""
        p = urlsplit(url)
        if p.scheme != "http" or p.hostname != self.site.host or (p.port or 80) != self.port:
            return ("status", None)  # not this server: Shoal could not reach it here either
        path = unquote(p.path)
        fs = os.path.join(self.site.docroot, path.lstrip("/"))
        if path.endswith("/"):
            index = os.path.join(fs, "index.html")
            if os.path.isfile(index):
                return ("file", index, "text/html")
            return ("status", 403 if os.path.isdir(fs) else 404)
        if os.path.isdir(fs):
            return ("redirect", normalize(url.split("?", 1)[0] + "/" + ("?" + p.query if p.query else "")))
        if os.path.isfile(fs):
            ext = fs.rsplit(".", 1)[-1].lower() if "." in os.path.basename(fs) else ""
            return ("file", fs, TYPES.get(ext, "application/octet-stream"))
        return ("status", 404)

    def redirects(self, url):
        """The URLs of url's redirect chain after url itself (at most 10 hops)."""
        out = []
        for _ in range(10):
            r = self.respond(url)
            if r[0] != "redirect" or r[1] in out:
                break
            url = r[1]
            out.append(url)
        return out

    def page(self, url):
        """The links of url if it answers HTML, else None."""
        if url not in self.pages:
            r = self.respond(url)
            if r[0] != "file" or r[2] not in HTML_TYPES:
                self.pages[url] = None
            else:
                with open(r[1], "rb") as f:
                    ex = Extract()
                    ex.feed(decode(f.read()))
                    ex.close()
                base = url
                if ex.base is not None:
                    b = resolve(url, ex.base)
                    base = b or url
                links = []
                for raw, role, how, nofollow in ex.links:
                    target = resolve(base, raw)
                    if target is not None:
                        links.append((target, role, how, nofollow))
                self.pages[url] = Page(links, ex.page_nofollow)
        return self.pages[url]

    def css(self, url, seen):
        """Resources a stylesheet loads (url(), @import), two @import levels deep."""
        out = set()
        todo = [(url, 0)]
        while todo:
            u, level = todo.pop()
            r = self.respond(u)
            if r[0] != "file" or r[2] != "text/css" or u in seen or level > 2:
                continue
            seen.add(u)
            with open(r[1], "rb") as f:
                for raw in css_urls(f.read().decode("utf-8", "replace")):
                    t = resolve(u, raw)
                    if t and self.in_site(t):
                        out.add(t)
                        todo.append((t, level + 1))
        return out


@dataclass
class Walk:
    depth: dict  # reachable page -> depth (start page 0)
    parents: dict  # page -> [(from, how)] from pages one level up
    resources: set  # what the reachable pages load (img, script, stylesheet, icon, media ...)
    optional: set  # what they may load (srcset, CSS url(), background=, poster, embed ...)
    page_limit_hit: bool = False
    deeper: set = field(default_factory=set)  # pages left out by the depth limit


def walk(tree, max_depth, max_pages):
    w = Walk({tree.start: 0}, {tree.start: []}, set(), set())
    queue = deque([tree.start])

    def offer(url, d, via):
        if url in w.depth:
            if w.depth[url] == d and via and via not in w.parents[url]:
                w.parents[url].append(via)
            return
        if not tree.in_site(url) or not tree.allowed(url):
            return
        if d > max_depth:
            w.deeper.add(url)
            return
        if len(w.depth) >= max_pages:
            w.page_limit_hit = True
            return
        w.depth[url] = d
        w.parents[url] = [via] if via else []
        queue.append(url)

    while queue:
        url = queue.popleft()
        d = w.depth[url]
        r = tree.respond(url)
        if r[0] == "redirect":
            offer(r[1], d, (url, "redirect"))
            continue
        page = tree.page(url)
        if page is None:
            continue
        for target, role, how, nofollow in page.links:
            if not tree.in_site(target):
                continue
            if role == "page":
                if not (nofollow or page.nofollow):
                    offer(target, d + 1, (url, how))
            elif role == "resource":
                w.resources.add(target)
                if tree.page(target) is not None:  # a resource that answers HTML is a page
                    offer(target, d + 1, (url, how + " answering HTML"))
            elif role == "optional":
                w.optional.add(target)
    seen = set()
    for u in list(w.resources | w.optional):
        w.optional |= tree.css(u, seen)
    for u in list(w.depth) + list(w.resources) + list(w.optional):
        w.optional.update(tree.redirects(u))
    w.deeper -= set(w.depth)
    return w


def references(tree, pages):
    """target -> [(from, role, how, nofollow)] over the given pages."""
    refs = {}
    for url in pages:
        page = tree.page(url)
        for target, role, how, nofollow in (page.links if page else []):
            refs.setdefault(target, []).append((url, role, how, nofollow or (page.nofollow and role == "page")))
    return refs


# ---------------------------------------------------------------------------------------------
# Packages, nginx, Shoal.

def run(args, timeout, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, **kw)


def deb_field(deb, name):
    r = run(["dpkg-deb", "-f", deb, name], timeout=60)
    return r.stdout.strip() if r.returncode == 0 else ""


def apt_download(name, folder):
    """The .deb apt-get download brought, or None."""
    before = set(os.listdir(folder))
    try:
        r = run(["apt-get", "download", name], timeout=300, cwd=folder)
    except (OSError, subprocess.TimeoutExpired):
        return None
    new = sorted(f for f in set(os.listdir(folder)) - before if f.endswith(".deb"))
    return os.path.join(folder, new[0]) if r.returncode == 0 and new else None


def fetch_trees(work, sites):
    """Downloads and unpacks each site's package, plus the libjs-* packages it depends on: Debian
    replaces the doc trees' JavaScript by symlinks into them (/usr/share/javascript)."""
    debs, root = os.path.join(work, "debs"), os.path.join(work, "root")
    os.makedirs(debs)
    os.makedirs(root)
    versions = {}
    todo = sorted({s.package for s in sites})
    for _ in range(3):  # libjs packages depend on at most two more levels of libjs packages
        more = []
        for name in todo:
            if name in versions:
                continue
            deb = apt_download(name, debs)
            versions[name] = deb_field(deb, "Version") if deb else None
            if deb is None or run(["dpkg-deb", "-x", deb, root], timeout=300).returncode != 0:
                versions[name] = None
                continue
            for alt in deb_field(deb, "Depends").split(","):
                dep = alt.split("|")[0].split("(")[0].strip().split(":")[0]
                if dep.startswith("libjs-"):
                    more.append(dep)
        todo = more
    pinned = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p) and os.readlink(p).startswith("/"):
                target = os.readlink(p)
                os.unlink(p)
                os.symlink(os.path.relpath(root + target, dirpath), p)
                pinned += 1
    for s in sites:
        here, installed = os.path.join(root, s.tree), "/" + s.tree
        if versions.get(s.package) and os.path.isdir(here):
            s.docroot, s.source = here, "apt-get download %s %s" % (s.package, versions[s.package])
        elif os.path.isdir(installed):
            s.docroot = installed
            s.source = "INSTALLED COPY %s (apt-get download %s failed)" % (installed, s.package)
        else:
            s.skipped = "package %s could not be fetched and is not installed" % s.package
            continue
        files = [f for _, _, fs in os.walk(s.docroot) for f in fs]
        if not any(f.endswith((".html", ".htm")) for f in files):
            exts = Counter(os.path.splitext(f)[1] or f for f in files)
            s.skipped = "%s has no HTML: %d files (%s); Debian ships the sources, not the built site" % (
                s.tree, len(files), ", ".join("%d %s" % (n, e) for e, n in exts.most_common(5)))
    return versions, sorted(n for n, v in versions.items() if v and n.startswith("libjs-")), pinned


def find_nginx(work):
    """nginx from PATH, else Debian's nginx unpacked into the work folder (apt-get download; its
    postinst is not run, so no system-wide service is started), else apt-get install."""
    for p in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if p and os.access(p, os.X_OK):
            return p, "installed (%s)" % p, None
    folder = os.path.join(work, "nginx-deb")
    os.makedirs(folder)
    deb = apt_download("nginx", folder)
    if deb and run(["dpkg-deb", "-x", deb, folder], timeout=120).returncode == 0:
        p = os.path.join(folder, "usr", "sbin", "nginx")
        if os.access(p, os.X_OK) and run([p, "-v"], timeout=30).returncode == 0:
            return p, "Debian's nginx %s, unpacked into the temporary folder" % deb_field(deb, "Version"), None
    had_pid = os.path.exists("/run/nginx.pid")
    r = run(["apt-get", "install", "-y", "--no-install-recommends", "nginx"], timeout=900,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    p = shutil.which("nginx") or "/usr/sbin/nginx"
    if r.returncode != 0 or not os.access(p, os.X_OK):
        raise SystemExit("no nginx: apt-get install nginx failed:\n" + r.stderr[-2000:])
    service = None
    if not had_pid and os.path.exists("/run/nginx.pid"):  # started by the package's postinst
        with open("/run/nginx.pid") as f:
            service = int(f.read().strip() or 0) or None
    return p, "installed now with apt-get install nginx", service


def nginx_conf(folder, port, sites):
    types = "\n".join("        %s %s;" % (t, " ".join(e for e, tt in TYPES.items() if tt == t))
                      for t in sorted(set(TYPES.values())))
    servers = "".join("""
    server {
        listen 127.0.0.1:%d;
        server_name %s;
        root %s;
        index index.html;
    }""" % (port, s.host, s.docroot) for s in sites)
    t = os.path.join(folder, "temp")
    return """pid %(f)s/nginx.pid;
worker_processes 2;
events { worker_connections 512; }
http {
    types {
%(types)s
    }
    default_type application/octet-stream;
    log_format shoal '$msec $request_method $host $request_uri $status';
    access_log %(f)s/access.log shoal;
    client_body_temp_path %(t)s/body;
    proxy_temp_path %(t)s/proxy;
    fastcgi_temp_path %(t)s/fastcgi;
    uwsgi_temp_path %(t)s/uwsgi;
    scgi_temp_path %(t)s/scgi;
    sendfile on;
    keepalive_timeout 30s;
    server {
        listen 127.0.0.1:%(port)d default_server;
        server_name _;
        return 421;
    }%(servers)s
}
""" % {"f": folder, "t": t, "types": types, "port": port, "servers": servers}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(binary, folder, port, sites):
    os.makedirs(os.path.join(folder, "temp"))
    conf = os.path.join(folder, "nginx.conf")
    with open(conf, "w") as f:
        f.write(nginx_conf(folder, port, sites))
    err = open(os.path.join(folder, "error.log"), "a")
    p = subprocess.Popen([binary, "-p", folder, "-c", conf, "-e", os.path.join(folder, "error.log"),
                          "-g", "daemon off;"], stdout=err, stderr=err, start_new_session=True)
    err.close()
    deadline = time.monotonic() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p
        except OSError:
            if p.poll() is not None or time.monotonic() > deadline:
                stop(p)
                with open(os.path.join(folder, "error.log")) as f:
                    raise SystemExit("nginx did not start:\n" + f.read()[-2000:])
            time.sleep(0.05)


def stop(p):
    """Stops a process this script started, and its process group (nginx's workers)."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=15)
    try:
        os.killpg(p.pid, signal.SIGKILL)  # the group is ours: start_new_session=True
    except (ProcessLookupError, PermissionError):
        pass


def run_shoal(trees, db, extra, timeout_s, work):
    args = [SHOAL, "audit", *[t.start for t in trees], "--db", db, "--allow-private", "--no-dns",
            "--no-progress"]
    for t in trees:
        args += ["--resolve", "%s=127.0.0.1" % t.site.host]
    args += extra
    t0, epoch = time.monotonic(), time.time()
    with open(os.path.join(work, "shoal.out"), "w") as out, open(os.path.join(work, "shoal.err"), "w") as err:
        r = subprocess.run(args, stdout=out, stderr=err, timeout=timeout_s,
                           env={**os.environ, "SHOAL_LOG": "warn"})
    wall = time.monotonic() - t0
    with open(os.path.join(work, "shoal.err")) as f:
        errors = [line.rstrip() for line in f if re.search(r"\b(WARN|ERROR)\b", line)]
    return r.returncode, wall, args, errors, epoch


def read_access_log(path):
    """[(msec, method, host, uri, status)] in the order nginx wrote them."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5:
                out.append((float(parts[0]), parts[1], parts[2], parts[3], parts[4]))
    return out


@dataclass
class DbSite:
    pages: set = field(default_factory=set)  # URLs stored with kind page
    rows: dict = field(default_factory=dict)  # url -> (kind, status, error)
    links: dict = field(default_factory=dict)  # to_url -> [(from_url, kind, nofollow)]
    limits: list = field(default_factory=list)  # (code, detail) of the *_limit_reached findings
    done_s: float = None  # the site's end, seconds after the audit's start


def db_view(db, trees):
    """start URL -> DbSite, read from the audit database."""
    out = {}
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=30)
    try:
        created = con.execute("SELECT MIN(created_at_ms) FROM audits").fetchone()[0] or 0
        sites = {normalize(u): (i, done) for i, u, done in con.execute("SELECT id, start_url, done_at_ms FROM sites")}
        for t in trees:
            if t.start not in sites:
                continue
            sid, done = sites[t.start]
            d = DbSite(done_s=(done - created) / 1000 if done else None)
            for u, k, st, err in con.execute("SELECT url, kind, status, error FROM pages WHERE site_id = ?", (sid,)):
                d.rows[normalize(u) or u] = (k, st, err)
            d.pages = {u for u, row in d.rows.items() if row[0] == "page"}
            for f, to, k, nf in con.execute(
                    "SELECT from_url, to_url, kind, nofollow FROM links WHERE site_id = ?", (sid,)):
                d.links.setdefault(normalize(to) or to, []).append((normalize(f), k, nf))
            d.limits = con.execute("SELECT code, detail FROM findings WHERE site_id = ? AND code LIKE "
                                   "'%_limit_reached'", (sid,)).fetchall()
            out[t.start] = d
    finally:
        con.close()
    return out


# ---------------------------------------------------------------------------------------------
# Comparison.

@dataclass
class Result:
    tree: Tree
    lim: Walk
    full: Walk
    html_files: int
    unreached: list  # HTML files of the tree that no page reachable from / links to
    requests: list = field(default_factory=list)  # (msec, method, uri, status, url, class)
    fetched: set = field(default_factory=set)  # reachable pages Shoal GOT (access log)
    db_pages: set = field(default_factory=set)
    missing: list = field(default_factory=list)
    unexpected: list = field(default_factory=list)
    unchecked: list = field(default_factory=list)  # resources of reachable pages never requested
    db: object = None


def html_files(tree, full):
    """The tree's HTML file count, and the files no page reachable from / leads to."""
    reached = {os.path.realpath(r[1]) for r in map(tree.respond, full.depth) if r[0] == "file"}
    files = sorted(os.path.relpath(os.path.join(d, f), tree.site.docroot)
                   for d, _, fs in os.walk(tree.site.docroot) for f in fs if f.endswith((".html", ".htm")))
    return len(files), [f for f in files if os.path.realpath(os.path.join(tree.site.docroot, f)) not in reached]


def classify(tree, lim, uri):
    url = normalize(tree.origin + uri) if uri.startswith("/") else None
    path = urlsplit(url).path if url else uri
    if path == "/robots.txt":
        return url, "robots"
    if path in PROBES or path.startswith(SOFT_404_PREFIX):
        return url, "probe"
    if url in lim.depth:
        return url, "page"
    if url in lim.resources or url in lim.optional:
        return url, "resource"
    return url, "unexpected"


def compare(res, entries, dbv):
    t, lim = res.tree, res.lim
    for ms, method, host, uri, status in entries:
        url, cls = classify(t, lim, uri)
        res.requests.append((ms, method, uri, status, url, cls))
        if cls == "page" and method == "GET":
            res.fetched.add(url)
    res.db = dbv.get(t.start, DbSite())
    res.db_pages, rows, links = res.db.pages, res.db.rows, res.db.links
    methods = {}
    for _, method, uri, status, url, _ in res.requests:
        methods.setdefault(url, []).append("%s %s" % (method, status))
    for url in sorted(set(lim.depth) - res.fetched, key=lambda u: (lim.depth[u], u)):
        via = "; ".join("%s on %s%s" % (how, short(t, f), "" if f in res.fetched else " (NOT fetched)")
                        for f, how in lim.parents[url][:3]) or "start page"
        seen = "requested as %s" % ", ".join(methods[url]) if url in methods else "never requested"
        row = rows.get(url)
        stored = "stored as kind=%s status=%s error=%s" % row if row else "not in the pages table"
        kinds = sorted({"%s%s" % (k, " nofollow" if nf else "") for _, k, nf in links.get(url, [])})
        recorded = "links recorded as %s" % ", ".join(kinds) if kinds else "no link to it recorded"
        res.missing.append((url, "depth %d, linked by %s; %s; %s; %s" % (
            lim.depth[url], via, seen, stored, recorded)))
    requested = {q[4] for q in res.requests}
    for url in sorted(lim.resources - requested - set(lim.depth)):
        kinds = sorted({k for _, k, _ in links.get(url, [])})
        res.unchecked.append((url, "links recorded as %s; %s" % (", ".join(kinds) or "nothing", (
            "stored as kind=%s status=%s error=%s" % rows[url]) if url in rows else "not in the pages table")))
    refs = references(t, res.full.depth)
    for ms, method, uri, status, url, cls in res.requests:
        if cls == "unexpected":
            res.unexpected.append((method, uri, status, why_unexpected(t, res, url, refs)))


def short(tree, url):
    return url[len(tree.origin):] if url and url.startswith(tree.origin) else url


def why_unexpected(t, res, url, refs):
    if url is None or not t.in_site(url) and url.startswith("http"):
        return "not a URL of this site"
    if url in res.full.depth:
        return "a page of the tree at depth %d, beyond --max-depth %d" % (
            res.full.depth[url], max(res.lim.depth.values()))
    rs = refs.get(url, [])
    if not rs:
        return "no page of the tree links to it"
    kinds = Counter((how, role, nf) for _, role, how, nf in rs)
    desc = ", ".join("%s%s%s on %d page(s)" % (how, " (loads nothing)" if role == "none" else "",
                                               " nofollow" if nf else "", n)
                     for (how, role, nf), n in kinds.most_common(4))
    return "linked only as %s, e.g. %s" % (desc, short(t, rs[0][0]))


def pct(a, b):
    return 100.0 * a / b if b else 100.0


def print_table(rows, header):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  " + "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))))


def report_sites(results, sites):
    print("\n== the trees ==")
    for s in sites:
        if s.skipped:
            print("  %-14s SKIPPED: %s" % (s.host, s.skipped))
    rows = []
    for r in results:
        s, full, lim = r.tree.site, r.full, r.lim
        rows.append((s.host, s.generator, r.html_files, len(full.depth), max(full.depth.values()),
                     len(lim.depth), len(lim.deeper), len(lim.resources), len(lim.optional),
                     "yes" if r.tree.robots else "none"))
    print_table(rows, ("site", "generator", "html files", "reachable", "max depth", "within limits",
                       "deeper", "resources", "may load", "robots.txt"))
    for r in results:
        print("  %-14s %s -> %s" % (r.tree.site.host, r.tree.site.source, r.tree.site.tree))
    print("  reachable: pages reachable from / without limits (404s and non-HTML targets of links"
          " count: they are requested); within limits: depth <= --max-depth and the page limit;"
          " deeper: left out by the depth limit; resources: what those pages load; may load:"
          " srcset, CSS url(), background=, redirect targets and the like, allowed but not expected")
    if not any(r.tree.robots for r in results):
        print("  robots.txt: none of the trees has one (nginx answers 404: everything allowed)")
    for r in results:
        refs = references(r.tree, r.full.depth)
        shown = []
        for path in r.unreached[:6]:
            how = sorted({h for _, _, h, _ in refs.get(normalize(r.tree.origin + "/" + path), [])})
            shown.append("%s (%s)" % (path, "only " + ", ".join(how) if how else "no link"))
        print("  %-14s HTML files no link leads to: %d%s" % (r.tree.site.host, len(r.unreached),
                                                         ": " + ", ".join(shown) if shown else ""))
    for r in results:
        rels = Counter(how for p in r.tree.pages.values() if p for _, _, how, _ in p.links
                       if how.startswith("<link"))
        roles = {how: role for p in r.tree.pages.values() if p for _, role, how, _ in p.links}
        print("  %-14s <link> elements: %s" % (r.tree.site.host, ", ".join(
            "%s x%d (%s)" % (h, n, roles[h]) for h, n in sorted(rels.items())) or "none"))


def report_results(results, wall, args_printed, shoal_rc, shoal_errors, entries, unknown):
    print("\n== shoal audit ==")
    print("  " + " ".join(args_printed))
    print("  exit %d, wall %.1f s, %d warning/error lines on stderr" % (shoal_rc, wall, len(shoal_errors)))
    for line in shoal_errors[:10]:
        print("    " + line[:200])
    methods = Counter(e[1] for e in entries)
    print("  nginx saw %d requests: %s" % (len(entries), ", ".join(
        "%s %d" % kv for kv in sorted(methods.items()))))
    rows = []
    for r in results:
        reach = len(r.lim.depth)
        by_m = Counter(q[1] for q in r.requests)
        cls = Counter(q[5] for q in r.requests)
        first = r.requests[0][2] if r.requests else "-"  # nginx's log order
        res_hit = len({q[4] for q in r.requests if q[5] == "resource"} & r.lim.resources)
        rows.append((r.tree.site.host, reach, len(r.fetched), "%.1f %%" % pct(len(r.fetched), reach),
                     "%.1f %%" % pct(len(r.db_pages & set(r.lim.depth)), reach), len(r.missing),
                     len(r.unexpected), len(r.requests), by_m.get("GET", 0), by_m.get("HEAD", 0),
                     cls.get("probe", 0), "%d/%d" % (res_hit, len(r.lim.resources)),
                     "yes" if first == "/robots.txt" else "NO (%s)" % first))
    print_table(rows, ("site", "reachable", "fetched", "recall", "recall (db)", "missing", "unexpected",
                       "requests", "GET", "HEAD", "probes", "resources", "robots.txt first"))
    print("  fetched: reachable pages with a GET in nginx's log; recall (db): reachable pages in the"
          " audit database's pages table with kind=page; resources: distinct resources of the"
          " reachable pages requested / expected")
    for r in results:
        host = r.tree.site.host
        if r.missing:
            print("\n  %s: %d reachable pages not fetched (first 20):" % (host, len(r.missing)))
            for url, why in r.missing[:20]:
                print("    %s\n      %s" % (short(r.tree, url), why))
        if r.unexpected:
            print("\n  %s: %d requests a browser would not make (first 20):" % (host, len(r.unexpected)))
            for method, uri, status, why in r.unexpected[:20]:
                print("    %s %s -> %s\n      %s" % (method, uri, status, why))
        twice = Counter((q[1], q[4]) for q in r.requests)
        again = [(m, short(r.tree, u), n) for (m, u), n in twice.items() if n > 1]
        if again:
            print("\n  %s: %d URLs requested more than once with the same method (shown, not a target):"
                  % (host, len(again)))
            for m, u, n in sorted(again)[:10]:
                print("    %s %s x%d" % (m, u, n))
    if unknown:
        print("\n  requests for host names that are no site here (nginx answered 421): %d" % len(unknown))
        for e in unknown[:20]:
            print("    %s %s %s" % (e[1], e[2], e[3]))


def report_timing(results, epoch):
    print("\n  per site, not targets: when its last request reached nginx and when the audit database"
          " marked it done (seconds after shoal started), its link checks of other sites (none leaves"
          " the machine: --no-dns) and the budget findings")
    rows = []
    for r in results:
        kinds = Counter(row[0] for row in r.db.rows.values())
        errors = Counter(row[2] for row in r.db.rows.values() if row[0] == "external")
        last = max(q[0] for q in r.requests) - epoch if r.requests else 0
        rows.append((r.tree.site.host, "%.1f" % last, "%.1f" % r.db.done_s if r.db.done_s else "-",
                     kinds.get("external", 0), ", ".join("%s %d" % kv for kv in errors.most_common(3)) or "-",
                     kinds.get("resource", 0), "; ".join("%s: %s" % f for f in r.db.limits) or "-"))
    print_table(rows, ("site", "last request", "done (db)", "external checks", "their errors",
                       "resource checks", "limit findings"))
    for r in results:
        if r.unchecked:
            print("\n  %s: %d resources of reachable pages never requested (shown, not a target; first 10):"
                  % (r.tree.site.host, len(r.unchecked)))
            for url, why in r.unchecked[:10]:
                print("    %s\n      %s" % (short(r.tree, url), why))


def targets(results, unknown):
    print("\n== targets ==")
    ok = True
    for r in results:
        host, reach = r.tree.site.host, len(r.lim.depth)
        if r.lim.page_limit_hit:
            inside = r.fetched <= set(r.full.depth)
            line = ("page limit binds: the breadth-first set is not unique; fetched %d, all inside "
                    "the depth-reachable set: %s" % (len(r.fetched), "yes" if inside else "NO"))
            good = inside
        else:
            rec = pct(len(r.fetched), reach)
            good = rec >= 99.0
            line = "recall %.1f %% (%d of %d reachable pages fetched), target >= 99 %%" % (
                rec, len(r.fetched), reach)
        ok &= good
        print("  %-4s %-14s %s" % ("PASS" if good else "FAIL", host, line))
        good = not r.unexpected
        ok &= good
        print("  %-4s %-14s %d requests a browser would not make, target 0" % (
            "PASS" if good else "FAIL", host, len(r.unexpected)))
    good = not unknown
    ok &= good
    print("  %-4s %-14s %d requests for unknown host names, target 0" % ("PASS" if good else "FAIL", "all", len(unknown)))
    print("\n%s" % ("PASS" if ok else "FAIL"))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-depth", type=int, default=None, help="passed to shoal (default: Shoal's 5)")
    ap.add_argument("--max-pages", type=int, default=None,
                    help="passed to shoal (default: Shoal's 500, raised to the largest tree if smaller)")
    ap.add_argument("--no-external", action="store_true",
                    help="pass --no-external to shoal (no link checks of other sites: a shorter run)")
    ap.add_argument("--timeout-s", type=int, default=1800, help="bound on the audit's wall time")
    ap.add_argument("--keep", metavar="DIR", help="keep the work folder (trees, access log, database) here")
    ap.add_argument("--graph-only", action="store_true", help="fetch the trees, print their link graphs, stop")
    args = ap.parse_args()
    if not os.path.exists(SHOAL):
        raise SystemExit("%s missing: cargo build --release -p shoal" % SHOAL)
    t_start = time.monotonic()
    work = args.keep or tempfile.mkdtemp(prefix="shoal-real-sites-")
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o755)  # nginx's workers run as nobody when started by root
    procs, service = [], None
    try:
        print("machine: %d CPUs; shoal %s" % (os.cpu_count(), run([SHOAL, "--version"], 30).stdout.strip()))
        sites = [Site(**{k: getattr(s, k) for k in ("host", "package", "tree", "generator")}) for s in SITES]
        versions, extras, pinned = fetch_trees(work, sites)
        print("packages: %s" % ", ".join("%s %s" % (n, v or "NOT FETCHED") for n, v in sorted(versions.items())))
        print("  %s unpacked too (the doc trees' JavaScript symlinks into them); %d absolute symlinks"
              " pointed into the unpacked tree" % (", ".join(extras) or "no libjs package", pinned))
        nginx, how, service = find_nginx(work)
        print("nginx: %s" % how)
        served = [s for s in sites if not s.skipped]
        if not served:
            raise SystemExit("no tree to serve")
        port = free_port()
        max_depth = args.max_depth if args.max_depth is not None else DEFAULT_MAX_DEPTH
        unlimited = 10 ** 9
        trees = [Tree(s, port) for s in served]
        fulls = [walk(t, unlimited, unlimited) for t in trees]
        deep = [walk(t, max_depth, unlimited) for t in trees]
        extra = []
        if args.max_depth is not None:
            extra += ["--max-depth", str(args.max_depth)]
        if args.no_external:
            extra.append("--no-external")
        max_pages = args.max_pages
        if max_pages is None:
            biggest = max(len(w.depth) for w in deep)
            max_pages = DEFAULT_MAX_PAGES
            if biggest > DEFAULT_MAX_PAGES:
                max_pages = biggest
                print("a tree has %d pages within depth %d, more than Shoal's default page limit"
                      " (%d): --max-pages %d for this run" % (biggest, max_depth, DEFAULT_MAX_PAGES, biggest))
                extra += ["--max-pages", str(max_pages)]
        else:
            extra += ["--max-pages", str(max_pages)]
        lims = [walk(t, max_depth, max_pages) for t in trees]
        results = []
        for t, full, lim in zip(trees, fulls, lims):
            results.append(Result(t, lim, full, *html_files(t, full)))
        report_sites(results, sites)
        print("  limits: depth %d (start page 0), %d pages per site" % (max_depth, max_pages))
        if args.graph_only:
            return 0
        ngdir = os.path.join(work, "nginx")
        os.makedirs(ngdir, exist_ok=True)
        procs.append(start_nginx(nginx, ngdir, port, served))
        db = os.path.join(work, "audit.db")
        rc, wall, argv, errors, epoch = run_shoal(trees, db, extra, args.timeout_s, work)
        time.sleep(0.2)
        stop(procs.pop())
        entries = read_access_log(os.path.join(ngdir, "access.log"))
        by_host = {t.site.host: [] for t in trees}
        unknown = []
        for e in entries:
            (by_host[e[2]] if e[2] in by_host else unknown).append(e)
        dbv = db_view(db, trees) if os.path.exists(db) else {}
        for r in results:
            compare(r, by_host[r.tree.site.host], dbv)
        shown = [a if not a.startswith(work) else "$WORK" + a[len(work):] for a in argv]
        report_results(results, wall, [os.path.relpath(SHOAL, ROOT)] + shown[1:], rc, errors, entries, unknown)
        report_timing(results, epoch)
        ok = targets(results, unknown) and rc == 0
        if rc != 0:
            print("FAIL: shoal exited %d" % rc)
        print("benchmark wall time %.0f s (audit %.0f s); work folder %s" % (
            time.monotonic() - t_start, wall, work if args.keep else "removed"))
        return 0 if ok else 1
    finally:
        for p in procs:
            stop(p)
        if service:
            try:
                os.kill(service, signal.SIGQUIT)  # the service apt-get's postinst started for us
            except ProcessLookupError:
                pass
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
