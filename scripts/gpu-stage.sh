#!/usr/bin/env bash
# Stages the CUDA build for a device call: the llm170 built here (build-cuda/) and the shared libraries
# the GPU machine lacks (libmicrohttpd, jansson, pcre2: shared/GPU.md) into .devbin/ (git-excluded),
# which the call then carries: run(carry: [".devbin"], command: "scripts/gpu-check.sh ...").
set -eu
build=${1:-build-cuda}
rm -rf .devbin && mkdir -p .devbin/lib
cp "$build/llm170" .devbin/
for lib in libmicrohttpd.so.12 libjansson.so.4 libpcre2-8.so.0; do
  cp -L "$(ldd "$build/llm170" | awk -v l=$lib '$1 == l {print $3}')" .devbin/lib/
done
# the tree that travels is capped at 64 MiB and the fatbin (sm_80 + sm_90, decode and prefill) is ~30 MB:
# it travels gzipped (~7 MB); scripts/gpu-check.sh unpacks it
gzip -9 .devbin/llm170
du -sh .devbin
