#!/usr/bin/env bash
# Runs Shoal's whole test suite: unit, integration, end-to-end (real HTTP servers on 127.0.0.1),
# Redis-backed tests (a private redis-server per test), headless-Chromium tests of the HTML report
# and the dashboard, the robots.txt conformance corpus through the `shoal robots` CLI, and the
# deployment files' linter. Installs what it needs on a Debian machine (redis-server, chromium,
# python3 for the deployment linter) and reads nothing outside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { # NAME CMD...: runs CMD and prints how long it took
  local name=$1 t0=$SECONDS
  shift
  echo "== test.sh: $name" >&2
  "$@"
  echo "== test.sh: $name took $((SECONDS - t0)) s" >&2
}

install_missing() {
  local need_apt=()
  command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
  command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
  # Headless Chromium renders the HTML report and the dashboard in their tests.
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
  if [ ${#need_apt[@]} -gt 0 ]; then
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}"
  fi
}

step "install what is missing" install_missing
step "deploy/lint.sh" bash deploy/lint.sh
step "cargo test" cargo test --workspace --no-fail-fast "$@"
