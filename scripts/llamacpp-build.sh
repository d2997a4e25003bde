#!/usr/bin/env bash
# Builds llama.cpp (the outside reference we compare against) from the source tree that the
# llama-cpp-python sdist on PyPI ships. Nothing of it is committed: it lands in .cache/llamacpp/
# (git-ignored). Prints the bin folder on its last line.
#   scripts/llamacpp-build.sh [--cuda] [TARGET...]   (CUDA: sm_90, for the GPU machine)
# TARGETs default to llama-bench llama-cli llama-perplexity llama-server llama-tokenize test-quantize-perf;
# the golden files of tests/crosscheck need only llama-perplexity and llama-server.
set -euo pipefail
version=${LLAMACPP_PY_VERSION:-0.3.36}
root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/.cache/llamacpp"
mkdir -p "$cache"
cd "$cache"
if [ ! -d "src-$version" ]; then
  # only this package as source (--no-binary :all: would also build pip's build backends from source)
  pip download --quiet --no-binary llama-cpp-python --no-deps -d dl "llama-cpp-python==$version" >&2
  mkdir -p "src-$version"
  tar -xzf dl/llama_cpp_python-"$version".tar.gz -C "src-$version" --strip-components=1
fi
src="$cache/src-$version/vendor/llama.cpp"
[ -f "$src/CMakeLists.txt" ] || { echo "llama.cpp source not found in the sdist at $src" >&2; exit 1; }
flags=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=OFF
       -DLLAMA_BUILD_SERVER=ON -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF
       -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF) # no web UI: its build would try to download assets
build="$cache/build-$version-cpu"
if [ "${1:-}" = "--cuda" ]; then
  flags+=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90)
  build="$cache/build-$version-cuda"
  shift
fi
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(llama-bench llama-cli llama-perplexity llama-server llama-tokenize test-quantize-perf)
cmake -S "$src" -B "$build" "${flags[@]}" >&2
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >&2
echo "$build/bin"
