#!/usr/bin/env bash
# Issue 40's retention figure: the audit database's size after weekly audits with the
# coordinator's `--retain-audits N` against without. Writes the audits through the store's API
# as the coordinator does (pages with links and headers, findings, each site's analysis) and,
# after each audit, runs the same retention pass the engine runs (store/examples/retention_size.rs).
#
#   bench/retention.sh [weeks] [sites] [pages] [keep]     (defaults 10 200 80 2)
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run -q -p shoal-store --example retention_size -- "${1:-10}" "${2:-200}" "${3:-80}" "${4:-2}"
