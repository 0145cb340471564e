#!/usr/bin/env python3
"""Import circles between the source files of one crate (a layout gate, run by scripts/gates.sh).

A file imports another when it names an item of the other's module by a `crate::`, `super::` or
`self::` path, in a `use` (groups expanded) or in code. Two files that import each other, directly
or through others, are a circle: neither can be understood, tested or moved without the other, and
a change to either ripples round. Cargo forbids circles between crates; this keeps them out of a
crate too. Edges to the crate root (lib.rs re-exports everything) are not counted, nor a file's
`#[cfg(test)]` tail (tests reach into what they test).

Usage: import_circles.py [CRATE_DIR ...]   (default: every workspace crate with a src/ folder)
Prints each circle with the names that tie it; exits 1 when there is one.
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def modules(src):
    """Module path (tuple) -> file, for every .rs file under src/ (not src/bin)."""
    out = {}
    for dirpath, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d != "bin"]
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src)[:-3].split(os.sep)
            if rel in (["lib"], ["main"]):
                path = ()
            elif rel[-1] == "mod":
                path = tuple(rel[:-1])
            else:
                path = tuple(rel)
            out[path] = os.path.join(dirpath, f)
    return out


def strip(text):
    """The code without comments, strings and the #[cfg(test)] tail."""
    cut = re.search(r"^#\[cfg\(test\)\]", text, re.M)
    if cut:
        text = text[: cut.start()]
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return text


def expand(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e'] (aliases and globs dropped)."""
    tree = tree.strip()
    m = re.match(r"^(.*?)::\{(.*)\}$", tree, re.S)
    if not m:
        return [re.split(r"\s+as\s+", tree)[0].strip()]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if p.strip() and p.strip() != "self":
            out += [prefix + "::" + q for q in expand(p)]
        elif p.strip() == "self":
            out.append(prefix)
    return out


def resolve(here, path, mods):
    """The module a `crate::`/`super::`/`self::` path lands in, and the name taken from it."""
    segs = [s for s in path.split("::") if s]
    if not segs:
        return None
    if segs[0] == "crate":
        base, rest = (), segs[1:]
    elif segs[0] in ("super", "self"):
        base = here
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
        rest = segs
    else:
        return None
    mod = base
    for s in rest:
        if mod + (s,) in mods:
            mod = mod + (s,)
        else:
            break
    taken = rest[len(mod) - len(base)] if len(rest) > len(mod) - len(base) else mod[-1] if mod else ""
    return mod, taken


def edges(crate):
    src = os.path.join(crate, "src")
    mods = modules(src)
    out = {}
    for here, f in mods.items():
        with open(f, encoding="utf-8") as fh:
            code = strip(fh.read())
        paths = []
        for m in re.finditer(r"\buse\s+((?:crate|super|self)\b[^;]*);", code):
            paths += expand(re.sub(r"\s+", " ", m.group(1)))
        code_wo_use = re.sub(r"\buse\s+[^;]*;", "", code)
        paths += re.findall(r"\b(?:crate|super|self)(?:::" + IDENT + r")+", code_wo_use)
        for p in paths:
            r = resolve(here, p, mods)
            if not r:
                continue
            target, name = r
            if target == () or target == here:
                continue
            out.setdefault((here, target), set()).add(name)
    return mods, out


def circles(mods, out):
    """Strongly connected components of more than one file (Tarjan)."""
    graph = {m: [] for m in mods}
    for (a, b) in out:
        graph[a].append(b)
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return comps


def crates():
    for d in sorted(os.listdir(ROOT)):
        full = os.path.join(ROOT, d)
        if d not in ("target", "fuzz") and os.path.isfile(os.path.join(full, "Cargo.toml")) \
                and os.path.isdir(os.path.join(full, "src")):
            yield full


def main():
    found = 0
    for crate in [os.path.abspath(c) for c in sys.argv[1:]] or list(crates()):
        mods, out = edges(crate)
        for comp in circles(mods, out):
            found += 1
            names = [os.path.relpath(mods[m], ROOT) for m in comp]
            print("import circle of %d files in %s: %s" % (len(comp), os.path.relpath(crate, ROOT), ", ".join(names)))
            members = set(comp)
            for (a, b), taken in sorted(out.items()):
                if a in members and b in members:
                    print("  %s -> %s: %s" % (os.path.relpath(mods[a], ROOT), os.path.relpath(mods[b], ROOT),
                                              ", ".join(sorted(taken))))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
