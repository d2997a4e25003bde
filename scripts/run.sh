#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs `llm170 ARGS` (default: help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
[ $# -eq 0 ] && set -- help
exec build/llm170 "$@"
