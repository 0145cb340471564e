#!/usr/bin/env bash
# Runs Shoal's whole test suite: unit, integration, end-to-end (real HTTP servers on 127.0.0.1),
# Redis-backed tests (a private redis-server per test), headless-Chromium tests of the HTML report
# and the dashboard, the robots.txt conformance corpus through the `shoal robots` CLI, and the
# deployment files' linter. Installs what it needs on a Debian machine.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
# Headless Chromium renders the HTML report and the dashboard in their tests.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

if [ ! -f ../shared/robots-conformance/cases.jsonl ]; then
  echo "error: ../shared/robots-conformance/cases.jsonl not found (the shared/ folder beside the repo)" >&2
  exit 1
fi

bash deploy/lint.sh
cargo test --workspace --no-fail-fast "$@"
