#!/usr/bin/env bash
# The test command: installs what is missing, builds (Release, build/), runs every CTest test.
# Extra arguments go to ctest (e.g. -R gguf).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
