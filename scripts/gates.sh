#!/usr/bin/env bash
# Gates that keep the crate layout (docs/design.md): run by .ci/run after fmt and clippy.
#  1. No Rust file over 800 lines outside tests, and no Lua file of the Redis frontier's library
#     (frontier-redis/src/lua/) over 800 either (a file that long holds more than one idea).
#  2. The core crate `shared` has no runtime, network client, Redis or SQLite under it, and reads
#     neither the clock nor files.
#  3. `anyhow` and `clap` are used by the `shoal` binary only (the test-support crate `tests`, whose
#     test web server is a command of its own, is exempt).
#  4. Lower layers do not depend on higher ones (Cargo forbids cycles; this forbids the wrong
#     direction): shared < frontier-redis < worker, shared < store < report; coordinator < server <
#     shoal.
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
for pkg in shoal-shared shoal-metrics shoal-frontier-redis shoal-worker shoal-store shoal-report shoal-coordinator shoal-server; do
    for bad in anyhow clap; do
        if deps "$pkg" | grep -qx "$bad"; then say "$pkg depends on $bad (only the shoal binary may)"; fi
    done
done

# 4. Layers: each package may use only the Shoal crates below it.
allowed() {
    case "$1" in
        shoal-shared | shoal-metrics) echo "" ;;
        shoal-frontier-redis) echo "shoal-shared" ;;
        shoal-worker) echo "shoal-shared shoal-metrics shoal-frontier-redis" ;;
        shoal-store) echo "shoal-shared" ;;
        shoal-report) echo "shoal-shared shoal-store" ;;
        shoal-coordinator) echo "shoal-shared shoal-metrics shoal-store shoal-worker" ;;
        shoal-server) echo "shoal-shared shoal-metrics shoal-store shoal-report shoal-coordinator" ;;
    esac
}
for pkg in shoal-shared shoal-metrics shoal-frontier-redis shoal-worker shoal-store shoal-report shoal-coordinator shoal-server; do
    ok=" $(allowed "$pkg") "
    for d in $(deps "$pkg" | grep -E '^shoal' || true); do
        case "$ok" in *" $d "*) ;; *) say "$pkg depends on $d (a layer above it or beside it)" ;; esac
    done
done

if [ "$fail" -ne 0 ]; then exit 1; fi
echo "gates: ok (file lengths, pure core, anyhow/clap only in the binary, layer order)"
