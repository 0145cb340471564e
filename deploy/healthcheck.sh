#!/usr/bin/env bash
# Health check of the Shoal COORDINATOR: GET /healthz on its own listen port (no token needed).
# Installed in the image as /usr/local/bin/shoal-healthcheck; used by compose.yaml. Workers have no
# HTTP port, so there is nothing for this script to check on them (a /metrics endpoint may come).
#
# Needs only bash (its /dev/tcp) and coreutils' timeout: the runtime image has no curl or wget.
#
# Usage: shoal-healthcheck [PORT]    (default: the port of SHOAL_LISTEN, else 8750)
# Exit status: 0 healthy, 1 not.
set -euo pipefail

listen="${SHOAL_LISTEN:-127.0.0.1:8750}"
port="${1:-${listen##*:}}"
case "$port" in
  '' | *[!0-9]*) echo "shoal-healthcheck: bad port '$port'" >&2; exit 1 ;;
esac

# The API may listen on 0.0.0.0 or a specific address; loopback reaches the former. If SHOAL_LISTEN
# names a specific IPv4 address, ask that one.
host="127.0.0.1"
addr="${listen%:*}"
case "$addr" in
  0.0.0.0 | '' | '[::]' | '*') ;;
  \[*\]) host="${addr#[}"; host="${host%]}" ;;
  *) host="$addr" ;;
esac

# shellcheck disable=SC2016  # $1/$2 expand in the inner bash, not here
if out="$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/$1/$2"
    printf "GET /healthz HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n" >&3
    cat <&3
  ' _ "$host" "$port" 2>/dev/null)"; then
  status_line="${out%%$'\r'*}"
  case "$status_line" in
    "HTTP/1."[01]" 200"*)
      echo "healthy: $status_line"
      exit 0
      ;;
  esac
  echo "unhealthy: ${status_line:-no answer}" >&2
  exit 1
fi
echo "unhealthy: no connection to $host:$port" >&2
exit 1
