#!/usr/bin/env bash
# Fuzzes the parsers of what websites send: robots.txt, sitemaps, HTML extraction, URL
# normalisation, Retry-After, and response headers (the targets in fuzz/fuzz_targets/). Each target
# runs for a fixed number of inputs, with a time cap, and the script prints per target the
# executions, the crashes and the time. Not part of CI (minutes of CPU); run it by hand:
#
#   bash bench/fuzz.sh                 # every target, 200,000 runs each, at most 600 s each
#   FUZZ_RUNS=1000000 FUZZ_MAX_TIME=900 bash bench/fuzz.sh url robots
#
# Settings (environment): FUZZ_RUNS (runs per target, default 200000), FUZZ_MAX_TIME (seconds per
# target at most, default 600), FUZZ_MAX_LEN (largest input in bytes, default 65536), FUZZ_ARGS
# (more libFuzzer flags). The corpus grows in fuzz/corpus/TARGET (git-ignored) and is reused by the
# next run; the repository's test fixtures (robots.txt files, sitemaps, HTML pages) and
# fuzz/seeds/TARGET are read as seeds. A crash leaves its input in fuzz/artifacts/TARGET/; reproduce
# it with `fuzz/target/x86_64-unknown-linux-gnu/release/TARGET FILE`, fix the bug, and add the input
# as a regression test in the owning crate's tests (not only as an artifact).
#
# Exit status: 0 when no target crashed, 1 when one did, 2 when the fuzz build failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/fuzz"

# cargo fuzz compiles the targets with flags only a nightly rustc accepts (-Zsanitizer=address and
# the sanitizer-coverage options libFuzzer needs). Shoal's machines have the stable toolchain only,
# and none can be downloaded; RUSTC_BOOTSTRAP=1 makes the stable compiler accept those flags. It is
# set for this script's build only, which has its own target folder (fuzz/target) and lock file, so
# the main workspace's build never sees these flags or this folder.
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="$root/fuzz/target"
export CARGO_TERM_COLOR=never

runs=${FUZZ_RUNS:-200000}
max_time=${FUZZ_MAX_TIME:-600}
max_len=${FUZZ_MAX_LEN:-65536}
read -r -a extra <<<"${FUZZ_ARGS:-}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: cargo-fuzz is missing: cargo install cargo-fuzz --locked" >&2
  exit 2
fi

# Start from the main workspace's versions, so the fuzzed code is the code Shoal ships.
[ -f Cargo.lock ] || cp "$root/Cargo.lock" Cargo.lock

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list)
fi

# Seeds per target besides fuzz/seeds/TARGET: the repository's own fixtures.
seeds_of() {
  case "$1" in
    robots) echo "$root/shared/tests/fixtures/robots $root/test-support/data/robots" ;;
    sitemap) echo "$root/worker/tests/fixtures/sitemap" ;;
    extract) echo "$root/worker/tests/fixtures/html" ;;
    *) echo "" ;;
  esac
}

logs="$CARGO_TARGET_DIR/fuzz-logs"
mkdir -p "$logs"
t0=$SECONDS
# cargo fuzz's default build: optimised, with debug assertions and overflow checks (an overflow is
# a crash worth finding), under the address sanitizer.
echo "== fuzz.sh: building ${targets[*]} (optimised, debug assertions, address sanitizer; log $logs/build.log)" >&2
: >"$logs/build.log"
for t in "${targets[@]}"; do
  if ! cargo fuzz build "$t" >>"$logs/build.log" 2>&1; then
    tail -n 30 "$logs/build.log" >&2
    echo "fuzz.sh: the fuzz build of $t failed" >&2
    exit 2
  fi
done
echo "== fuzz.sh: built in $((SECONDS - t0)) s" >&2

bin_dir="$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release"
failed=0
report=()
for t in "${targets[@]}"; do
  bin="$bin_dir/$t"
  [ -x "$bin" ] || { echo "fuzz.sh: no binary for target $t at $bin" >&2; exit 2; }
  mkdir -p "corpus/$t" "artifacts/$t"
  dirs=("corpus/$t")
  [ -d "seeds/$t" ] && dirs+=("seeds/$t")
  for s in $(seeds_of "$t"); do
    [ -d "$s" ] && dirs+=("$s")
  done
  before=$(find "artifacts/$t" -type f | wc -l)
  log="$logs/$t.log"
  echo "== fuzz.sh: $t: up to $runs runs or $max_time s (log $log)" >&2
  start=$SECONDS
  set +e
  "$bin" "${dirs[@]}" -runs="$runs" -max_total_time="$max_time" -max_len="$max_len" -timeout=20 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="artifacts/$t/" "${extra[@]}" >"$log" 2>&1
  status=$?
  set -e
  took=$((SECONDS - start))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$' || true)
  [ -n "$execs" ] || execs=$(grep -o '^Done [0-9]* runs' "$log" | tail -n 1 | grep -o '[0-9]*' || true)
  crashes=$(($(find "artifacts/$t" -type f | wc -l) - before))
  if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then
    crashes=1 # a crash libFuzzer could not save: read the log
  fi
  [ "$crashes" -eq 0 ] || failed=1
  report+=("$(printf '%-12s %12s %8s %7s s' "$t" "${execs:-?}" "$crashes" "$took")")
done

echo
echo "fuzz results (runs per target: $runs, time cap per target: $max_time s, max input: $max_len bytes)"
printf '%-12s %12s %8s %9s\n' target executions crashes time
printf '%s\n' "${report[@]}"
if [ "$failed" -ne 0 ]; then
  echo "crash inputs are in fuzz/artifacts/TARGET/; logs in $logs" >&2
fi
exit "$failed"
