#!/usr/bin/env bash
# Stages the CUDA build for a device call: the llm170 built here (build-cuda/, stripped, in .devbin/bundle.tar.xz)
# and the shared libraries the GPU machine lacks (libmicrohttpd, jansson, pcre2: shared/GPU.md) into .devbin/
# (git-ignored), which the call then carries: run(carry: [".devbin"], command: "scripts/gpu-check.sh ...").
# Empties .devbin/ and .devstage/ (the raw binaries, kept here) first.
set -eu
build=${1:-build-cuda}
rm -rf .devbin .devstage && mkdir -p .devbin/lib .devstage
cp "$build/llm170" .devstage/
for lib in libmicrohttpd.so.12 libjansson.so.4 libpcre2-8.so.0; do
  cp -L "$(ldd "$build/llm170" | awk -v l=$lib '$1 == l {print $3}')" .devbin/lib/
done
# the tree that travels is capped at 64 MiB, of which the tracked files take ~53 MB, and the binary is
# 35 MB (sm_80 + sm_90a) or 22 MB (a build with -DLLM170_CUDA_ARCHS=90a-real, enough for the H200): it
# travels stripped, in one xz bundle with any planted binaries staged after it (scripts/gpu-bundle.sh)
strip .devstage/llm170
scripts/gpu-bundle.sh
