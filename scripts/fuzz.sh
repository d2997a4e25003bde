#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for SECONDS (default 300) on one core,
# one after the other:  scripts/fuzz.sh [SECONDS] [TARGET...]
#   targets:  gguf (fuzz_gguf: the GGUF reader) and request (fuzz_request: the server's request parsing
#             and JSON handling); both by default
#   seeds:    fuzz/corpus/TARGET/ (committed; fuzz/make_corpus.sh remakes the gguf ones), copied into the
#             git-ignored working corpus fuzz/corpus-work/TARGET/, which keeps growing across runs
#   crashes:  fuzz/crashes/ (git-ignored), named TARGET-crash-...; reproduce one with
#             build-fuzz/fuzz/fuzz_TARGET FILE, then add it as a regression test named after the bug
# After each target, libFuzzer's final stats (executions, exec/s, coverage). Exits non-zero at the first
# target that finds a crash, a leak, a UBSan report or a timeout.
set -euo pipefail
secs=${1:-300}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(gguf request)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
set_opts() { # the per-target libFuzzer options, in $opts
  case "$1" in
    gguf) opts=(-dict=fuzz/gguf.dict -max_len=16384) ;;
    request) opts=(-dict=fuzz/request.dict -max_len=8192) ;;
    *) echo "fuzz.sh: unknown target '$1' (known: gguf request)" >&2; exit 2 ;;
  esac
}
for t in "${targets[@]}"; do set_opts "$t"; done
CC=clang cmake -S . -B build-fuzz -DLLM170_FUZZ=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-fuzz -j2 --target "${targets[@]/#/fuzz_}"
mkdir -p fuzz/crashes
# UBSan findings stop the run like crashes do (the build lets them recover by default).
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for t in "${targets[@]}"; do
  set_opts "$t"
  mkdir -p "fuzz/corpus-work/$t"
  cp -n "fuzz/corpus/$t"/* "fuzz/corpus-work/$t/"
  echo "== fuzz_$t, $secs s"
  "build-fuzz/fuzz/fuzz_$t" "fuzz/corpus-work/$t" -max_total_time="$secs" "${opts[@]}" -timeout=10 \
      -rss_limit_mb=2048 -artifact_prefix="fuzz/crashes/$t-" -print_final_stats=1
done
