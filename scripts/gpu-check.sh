#!/usr/bin/env bash
# What one device call runs (docs/cuda.md): the CUDA conformance table, compute-sanitizer memcheck on the
# check run, then the benchmark table. Expects the binary built on the developer machine in .devbin/
# (llm170 plus the .so files it needs, see scripts/gpu-stage.sh) and $OUT from the device tool; writes
# logs under $OUT and prints a short table last. Usage: scripts/gpu-check.sh [check|memcheck|bench]...
set -u
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
bin() { LD_LIBRARY_PATH="$PWD/.devbin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" .devbin/llm170 "$@"; }
steps=${*:-check memcheck bench}
rc=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
for s in $steps; do
  case $s in
    check) bin cuda-check > "$OUT/check.txt" 2>&1 || rc=1 ;;
    memcheck) LD_LIBRARY_PATH="$PWD/.devbin/lib" compute-sanitizer --tool memcheck --leak-check no \
                .devbin/llm170 cuda-check > "$OUT/memcheck.txt" 2>&1 || rc=1 ;;
    bench) bin cuda-check --bench --filter "${BENCH_FILTER:-bench}" > "$OUT/bench.txt" 2>&1 || rc=1 ;;
    *) echo "gpu-check: unknown step $s"; rc=2 ;;
  esac
done
# the short table, last
for f in check memcheck bench; do
  [ -f "$OUT/$f.txt" ] || continue
  echo "== $f"; grep -E "FAIL|ERR|ERROR SUMMARY|cuda-check:" "$OUT/$f.txt" | head -40
done
[ -f "$OUT/bench.txt" ] && grep -E "^gemv" "$OUT/bench.txt" | awk '{print $1, $2, $3, $4, $5, $(NF-2), $(NF-1), $NF}' | head -60
exit $rc
