#!/usr/bin/env bash
# The test command: installs what is missing, builds (Release, build/), runs every CTest test.
# Extra arguments go to ctest (e.g. -R gguf).
# What the tests need beyond Debian packages (scripts/install-deps.sh): the official openai and anthropic
# SDKs (tests/server/test_sdk.py), pinned in tests/server/requirements.txt and installed into a
# project-local venv, .cache/venv-test (never into the system's Python), which cli_server.sh uses.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
venv=.cache/venv-test
req=tests/server/requirements.txt
if ! cmp -s "$req" "$venv/requirements.txt"; then
  echo "setting up $venv: $(grep -v '^#' "$req" | xargs)" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
  cp "$req" "$venv/requirements.txt" # the stamp: the venv holds exactly these pins
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
