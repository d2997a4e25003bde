#!/usr/bin/env bash
# Builds the libFuzzer target fuzz_gguf (clang, ASan+UBSan) and runs it for SECONDS (default 300) on one
# core: scripts/fuzz.sh [SECONDS]
#   seeds:    fuzz/corpus/gguf/ (committed; remake with fuzz/make_corpus.sh), copied into the git-ignored
#             working corpus fuzz/corpus-work/gguf/, which keeps growing across runs
#   crashes:  fuzz/crashes/ (git-ignored); reproduce one with build-fuzz/fuzz/fuzz_gguf FILE, then add it
#             as a regression test in tests/gguf/ named after the bug
# The last lines of the output are libFuzzer's final stats (executions, exec/s, coverage).
set -euo pipefail
secs=${1:-300}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
CC=clang cmake -S . -B build-fuzz -DLLM170_FUZZ=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-fuzz -j2 --target fuzz_gguf
mkdir -p fuzz/corpus-work/gguf fuzz/crashes
cp -n fuzz/corpus/gguf/* fuzz/corpus-work/gguf/
# UBSan findings stop the run like crashes do (the build lets them recover by default).
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
exec build-fuzz/fuzz/fuzz_gguf fuzz/corpus-work/gguf \
    -max_total_time="$secs" -dict=fuzz/gguf.dict -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix=fuzz/crashes/ -print_final_stats=1
