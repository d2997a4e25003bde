#!/usr/bin/env bash
# What one device call runs (docs/cuda.md): the CUDA conformance table, compute-sanitizer memcheck on the
# check run, then the benchmark table. Expects the binary built on the developer machine in .devbin/
# (in bundle.tar.xz, with the .so files it needs: scripts/gpu-stage.sh) and $OUT from the device tool; writes
# logs under $OUT and prints a short table last. Usage: scripts/gpu-check.sh [check|memcheck|bench]...
set -u
. scripts/gpu-devbin.sh # OUT, the staged binaries unpacked, B (the staged llm170 with its libraries)
steps=${*:-check memcheck bench}
rc=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
for s in $steps; do
  case $s in
    check) "${B[@]}" cuda-check > "$OUT/check.txt" 2>&1 || rc=1 ;;
    memcheck) LD_LIBRARY_PATH="$PWD/.devbin/lib" timeout "${MEMCHECK_TIMEOUT:-300}" compute-sanitizer --tool memcheck \
                --leak-check no .devbin/llm170 cuda-check --filter "${MEMCHECK_FILTER:- }" > "$OUT/memcheck.txt" 2>&1 || rc=1 ;;
    bench) "${B[@]}" cuda-check --bench ${BENCH_FILTER:+--filter "$BENCH_FILTER"} > "$OUT/bench.txt" 2>&1 || rc=1 ;;
    *) echo "gpu-check: unknown step $s"; rc=2 ;;
  esac
done
# the short table, last
for f in check memcheck bench; do
  [ -f "$OUT/$f.txt" ] || continue
  echo "== $f"; grep -E "FAIL|ERR|ERROR SUMMARY|cuda-check:" "$OUT/$f.txt" | head -40
done
[ -f "$OUT/bench.txt" ] && grep -E "^(gemv +[a-z0-9_]+ K(4096|14336|896) |attn_decode|gdn_step|rms_norm_q8)" "$OUT/bench.txt" | cut -c1-118
exit $rc
