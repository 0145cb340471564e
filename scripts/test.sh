#!/usr/bin/env bash
# Runs Shoal's whole test suite: unit, integration, end-to-end (real HTTP servers on 127.0.0.1),
# Redis-backed tests (a private redis-server per test), headless-Chromium tests of the HTML report
# and the dashboard, the robots.txt conformance corpus through the `shoal robots` CLI, and the
# deployment files' linter. Installs what it needs on a Debian machine (redis-server, chromium,
# python3 for the deployment linter, openapi-spec-validator for the API document) and reads
# nothing outside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { # NAME CMD...: runs CMD, prints how long it took, and returns CMD's status
  local name=$1 t0=$SECONDS rc=0
  shift
  echo "== test.sh: $name" >&2
  "$@" || rc=$?
  echo "== test.sh: $name took $((SECONDS - t0)) s" >&2
  return "$rc"
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
  # The OpenAPI document's validator (server/tests/openapi.rs): openapi-spec-validator, which
  # Debian 12 does not package. Machines of this project's kind have it in their python3; where
  # it is missing, it goes into a venv under target/ (PyPI, once; about 10 s), which the test
  # finds there. Nothing is read from outside the repository when the tests run.
  if ! python3 -c 'import openapi_spec_validator' >/dev/null 2>&1 \
    && ! target/openapi-venv/bin/python3 -c 'import openapi_spec_validator' >/dev/null 2>&1; then
    # Debian's python3 makes venvs only with python3-venv (ensurepip) installed.
    if ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
      local sudo=""
      [ "$(id -u)" = 0 ] || sudo="sudo"
      $sudo apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv
    fi
    python3 -m venv target/openapi-venv
    target/openapi-venv/bin/pip install -q 'openapi-spec-validator==0.9.0'
  fi
}

# Chromium processes (not zombies) running now, one pid per line.
chromium_pids() {
  ps -eo pid=,stat=,comm= | awk '$3 == "chromium" && $2 !~ /^Z/ { print $1 }' | sort
}

# The suite starts Chromium many times (the browser check, the report's and the dashboard's
# rendering tests): none of it may outlive the tests. Chromium that ran before the tests is not
# ours; anything new still running 15 s after the last test is a leak, and fails the run.
no_chromium_left() {
  local before=$1 left=""
  for _ in $(seq 1 30); do
    left=$(comm -13 <(echo "$before") <(chromium_pids) | tr '\n' ' ')
    [ -z "${left// /}" ] && return 0
    sleep 0.5
  done
  echo "test.sh: Chromium processes left behind by the tests: $left" >&2
  ps -o pid,ppid,etime,args -p "${left// /,}" >&2 || true
  return 1
}

step "install what is missing" install_missing
step "deploy/lint.sh" bash deploy/lint.sh
before=$(chromium_pids)
status=0
step "cargo test" cargo test --workspace --no-fail-fast "$@" || status=$?
step "no Chromium left behind" no_chromium_left "$before" || status=1
exit "$status"
