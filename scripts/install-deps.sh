#!/usr/bin/env bash
# Installs the Debian packages a fresh machine lacks for building and testing llm170 (nothing else).
# Safe to run again: it asks apt only for what is missing.
set -euo pipefail
# python3-venv: scripts/test.sh keeps the tests' Python packages in a venv (.cache/venv-test)
need=(build-essential cmake pkg-config libpcre2-dev libmicrohttpd-dev libjansson-dev python3-venv)
[ "${1:-}" = "--ci" ] && need+=(clang cppcheck)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
