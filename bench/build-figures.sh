#!/usr/bin/env bash
# Issue 8's figures, from a fresh clone in an empty folder with an empty target folder (crates
# already downloaded is fine, as for a user who ran `cargo fetch`):
#   - wall time of the README's first command (the `release` profile's build, then an audit of a
#     local page),
#   - the release binary's size,
#   - the 5 crates that took longest to build (`cargo build --timings`),
#   - with --dist: the same for `cargo build --profile dist -p shoal` (fat LTO: what the image and
#     the packages pay; after the release build, in the same clone, sharing nothing with it),
#   - with --tests: wall time of the README's test command (scripts/test.sh),
#   - with --ci: wall time of .ci/run (which runs the test command in a clone of its own).
# Usage: bench/build-figures.sh [--rev REV] [--dist] [--tests] [--ci]   (REV defaults to HEAD)
# Every step runs one after the other on this machine; compare figures taken in one sitting.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rev=HEAD dist=0 tests=0 ci=0
while [ $# -gt 0 ]; do
  case $1 in
    --rev) rev=$2; shift 2 ;;
    --tests) tests=1; shift ;;
    --dist) dist=1; shift ;;
    --ci) ci=1; shift ;;
    *) echo "usage: $0 [--rev REV] [--dist] [--tests] [--ci]" >&2; exit 2 ;;
  esac
done

secs() { # START_NS END_NS: seconds between them, one decimal
  local ms=$((($2 - $1) / 1000000))
  printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

work=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
git clone -q --no-hardlinks "$repo" "$work/shoal"
git -C "$work/shoal" checkout -q "$rev"
cd "$work/shoal"
unset CARGO_TARGET_DIR
echo "revision: $(git rev-parse --short HEAD)  machine: $(nproc) cores, $(rustc --version)"

# A fixed reference loop, so figures from different days can be put side by side.
ref_start=$(date +%s%N)
python3 -c 'n=0
for i in range(20_000_000): n += i*i % 7
' >/dev/null
echo "reference loop (python3, 20M iterations): $(secs $ref_start $(date +%s%N)) s"

# The binary's package: `shoal` since the crates were split by layer, `shoal-coordinator` before.
pkg=shoal
if [ ! -f shoal/Cargo.toml ]; then pkg=shoal-coordinator; fi
t0=$(date +%s%N)
cargo build --release -p "$pkg" --timings >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
t1=$(date +%s%N)
echo "release build (README command 1, part 1): $(secs $t0 $t1) s"
size=$(stat -c %s target/release/shoal)
echo "binary: target/release/shoal $((size / 1024 / 1024)) MiB ($size bytes)"

# Part 2 of the first command, against a page on loopback (no internet here).
mkdir -p "$work/site"
printf '<!doctype html><html lang="en"><head><title>Local page</title></head><body><a href="/b.html">b</a></body></html>' >"$work/site/index.html"
printf '<!doctype html><html lang="en"><head><title>Page b</title></head><body>b</body></html>' >"$work/site/b.html"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$work/site" >/dev/null 2>&1 &
server_pid=$!
sleep 1
t0=$(date +%s%N)
target/release/shoal audit "http://127.0.0.1:$port/" --allow-private --no-progress --db "$work/a.db" \
  --report json --out "$work/report.json" >/dev/null 2>&1 || true
t1=$(date +%s%N)
echo "audit of a 2-page local site (README command 1, part 2): $(secs $t0 $t1) s"

top5() { # the newest cargo --timings report: the 5 units that took longest
  local timing
  timing=$(ls -t target/cargo-timings/cargo-timing-*.html | head -1)
  python3 - "$timing" <<'PY'
import json, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
data = json.loads(re.search(r"const UNIT_DATA = (\[.*?\]);\n", text, re.S).group(1))
units = sorted(data, key=lambda u: -u["duration"])
print("top 5 units by build time (cargo --timings):")
for u in units[:5]:
    target = (" " + u["target"].strip()) if u["target"].strip() else ""
    print(f"  {u['duration']:7.1f} s  {u['name']} {u['version']}{target}")
print(f"units: {len(data)}; total unit time {sum(u['duration'] for u in data):.0f} s")
PY
}

top5

if [ "$dist" = 1 ]; then
  t0=$(date +%s%N)
  cargo build --profile dist -p "$pkg" --timings >"$work/build-dist.log" 2>&1 || { tail -30 "$work/build-dist.log"; exit 1; }
  t1=$(date +%s%N)
  echo "dist build (cargo build --profile dist -p $pkg: the image's and the packages'): $(secs $t0 $t1) s"
  size=$(stat -c %s target/dist/shoal)
  echo "binary: target/dist/shoal $((size / 1024 / 1024)) MiB ($size bytes)"
  top5
fi

if [ "$tests" = 1 ]; then
  t0=$(date +%s%N)
  bash scripts/test.sh >"$work/test.log" 2>&1 || { tail -40 "$work/test.log"; echo "test command FAILED"; }
  t1=$(date +%s%N)
  echo "scripts/test.sh (README command 2, after the release build): $(secs $t0 $t1) s"
  grep -E "^test result:" "$work/test.log" | awk '{p+=$4; f+=$6; i+=$8} END {print "tests: " p " passed, " f " failed, " i " ignored"}'
fi
if [ "$ci" = 1 ]; then
  rm -rf target
  t0=$(date +%s%N)
  CI=true bash .ci/run >"$work/ci.log" 2>&1 || { tail -40 "$work/ci.log"; echo ".ci/run FAILED"; }
  t1=$(date +%s%N)
  echo ".ci/run from an empty target folder: $(secs $t0 $t1) s"
  grep -E "^== ci: .* took" "$work/ci.log" || true
fi
