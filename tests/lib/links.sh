#!/usr/bin/env bash
# The core library does not link the HTTP stack: libmicrohttpd and Jansson belong to llm170server (the
# CLI's serve command) only. Checks what CMake links the core with (LINKS: written at configure time from
# the targets' properties), and what the binaries built on the core need at run time (readelf NEEDED).
#   tests/lib/links.sh LINKS BINARY...   (the core-only example, libllm170.so when built)
set -euo pipefail
links=$1; shift
http='microhttpd|MHD|jansson|JANSSON'
status=0
if grep -v "^llm170server" "$links" | grep -E "$http"; then
  echo "FAIL: a core target links the HTTP stack (above, from $links)" >&2
  status=1
fi
for bin in "$@"; do
  needed=$(readelf -d "$bin")
  if grep NEEDED <<<"$needed" | grep -E "$http"; then
    echo "FAIL: $bin needs the HTTP stack at run time (above)" >&2
    status=1
  fi
done
# The check can see a dependency: the server library itself does name them.
if ! grep '^llm170server' "$links" | grep -E "$http" >/dev/null; then
  echo "FAIL: $links lacks llm170server's links" >&2
  exit 1
fi
[ $status -eq 0 ] && echo "ok: core targets and $# binaries built on the core link no HTTP library"
exit $status
