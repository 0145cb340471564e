#!/usr/bin/env bash
# Gates that keep the crate layout (docs/design.md): run by .ci/run after fmt and clippy.
#  1. No Rust file over 800 lines outside tests, and no Lua file of the Redis frontier's library
#     (frontier-redis/src/lua/) over 800 either (a file that long holds more than one idea).
#  2. The core crate `shared` has no runtime, network client, Redis or SQLite under it, and reads
#     neither the clock nor files.
#  3. `anyhow` and `clap` are used by the `shoal` binary only (the end-to-end crate `tests`, whose
#     test web server is a command of its own, is exempt).
#  4. Lower layers do not depend on higher ones (Cargo forbids cycles; this forbids the wrong
#     direction): shared < frontier-redis, shared < worker (which knows only the Frontier trait: the
#     binary wires it to Redis), shared < store < report; coordinator < server <
#     shoal; report < mcp < server, shoal (the MCP server reads the store through the report's rules;
#     the coordinator serves its tools at /mcp).
#  5. The test-support crate is a leaf (no Shoal crate under it), and no `#[path]` attribute reaches
#     outside its own crate: a file two crates need lives in a crate both can depend on.
#  6. No import circle between the files of a crate (scripts/import_circles.py): Cargo forbids
#     them between crates, this inside one.
# The owned-task and bounded-read rules are clippy's (clippy.toml, `disallowed-methods`).
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
say() { printf 'gate: %s\n' "$*" >&2; fail=1; }

# 1. File length.
while IFS= read -r f; do
    [ -f "$f" ] || continue
    n=$(wc -l <"$f")
    if [ "$n" -gt 800 ]; then say "$f has $n lines (at most 800 outside tests)"; fi
done < <(
    git ls-files '*.rs' | grep -v -E '(^|/)tests/|^fuzz/|/examples/|/benches/'
    git ls-files 'frontier-redis/src/lua/*.lua'
)

# The dependency gates below read `cargo tree --offline`; when it cannot run (dependencies not yet
# fetched) they would see no dependencies and pass, so that is an error of its own.
if ! cargo tree -q --offline --workspace -e normal,dev >/dev/null; then
    say "cargo tree --offline failed (run cargo fetch or a build first); the dependency gates cannot run"
    exit 1
fi

# Direct normal (non-dev) dependencies of a package, one name per line.
deps() { cargo tree -q --offline -p "$1" -e normal --depth 1 --prefix none | tail -n +2 | awk '{print $1}' | sort -u; }
# Every normal dependency of a package, at any depth.
all_deps() { cargo tree -q --offline -p "$1" -e normal --prefix none | awk '{print $1}' | sort -u; }

# 2. The pure core (its tests too: the conformance suite that needs a runtime lives in `tests`).
for bad in tokio reqwest redis rusqlite hyper axum; do
    if all_deps shoal-shared | grep -qx "$bad"; then say "shoal-shared depends on $bad (it must stay free of I/O)"; fi
    if cargo tree -q --offline -p shoal-shared -e dev --depth 1 --prefix none | awk '{print $1}' | grep -qx "$bad"; then
        say "shoal-shared's tests depend on $bad"
    fi
done

# ... and no clock read or file, socket or process access in its source: time is passed in.
if grep -rnE 'SystemTime::now|Instant::now|std::fs::|std::net::Tcp|std::process::|std::env::' shared/src; then
    say "shoal-shared reads the clock or does I/O (above)"
fi

# 3. anyhow and clap in the binary only.
for pkg in shoal-shared shoal-metrics shoal-frontier-redis shoal-worker shoal-store shoal-report shoal-coordinator shoal-server shoal-mcp; do
    for bad in anyhow clap; do
        if deps "$pkg" | grep -qx "$bad"; then say "$pkg depends on $bad (only the shoal binary may)"; fi
    done
done

# 4. Layers: each package may use only the Shoal crates below it.
allowed() {
    case "$1" in
        shoal-shared | shoal-metrics | shoal-test-support) echo "" ;;
        shoal-frontier-redis) echo "shoal-shared" ;;
        shoal-worker) echo "shoal-shared shoal-metrics" ;;
        shoal-store) echo "shoal-shared" ;;
        shoal-report) echo "shoal-shared shoal-store" ;;
        shoal-coordinator) echo "shoal-shared shoal-metrics shoal-store shoal-worker" ;;
        shoal-server) echo "shoal-shared shoal-metrics shoal-store shoal-report shoal-coordinator shoal-mcp" ;;
        shoal-mcp) echo "shoal-shared shoal-store shoal-report" ;;
    esac
}
for pkg in shoal-shared shoal-metrics shoal-frontier-redis shoal-worker shoal-store shoal-report shoal-coordinator shoal-server shoal-mcp shoal-test-support; do
    ok=" $(allowed "$pkg") "
    for d in $(deps "$pkg" | grep -E '^shoal' || true); do
        case "$ok" in *" $d "*) ;; *) say "$pkg depends on $d (a layer above it or beside it)" ;; esac
    done
done

# 5. `#[path = "..."]` stays inside its crate: the path, joined to the including file's folder, must
#    not leave the crate's root (the folder of the nearest Cargo.toml above the file).
while IFS= read -r hit; do
    f=${hit%%:*}
    target=$(printf '%s\n' "$hit" | sed -E 's/.*#\[path *= *"([^"]*)"\].*/\1/')
    root=$(dirname "$f")
    while [ ! -f "$root/Cargo.toml" ] && [ "$root" != "." ]; do root=$(dirname "$root"); done
    resolved=$(realpath -m "$(dirname "$f")/$target")
    case "$resolved/" in
        "$(realpath -m "$root")/"*) ;;
        *) say "$f includes $target by #[path], outside its crate ($root): depend on a crate that has it" ;;
    esac
done < <(git ls-files '*.rs' | xargs grep -snE '#\[path *=' /dev/null || true)

# 6. Import circles inside a crate.
if ! python3 scripts/import_circles.py >&2; then say "import circles inside a crate (above): move what both sides need below them"; fi

if [ "$fail" -ne 0 ]; then exit 1; fi
echo "gates: ok (file lengths, pure core, anyhow/clap only in the binary, layer order, #[path] inside its crate, no import circles)"
