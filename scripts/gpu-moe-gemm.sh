#!/usr/bin/env bash
# One device call for the grouped expert product (MoE prefill; kernels/gemm_q.cu cuda_moe_group +
# cuda_gemm_q_experts):
#   1. cuda-check's gemm_experts cases (the group table, every output against the GEMM's error model, half the
#      tokens alone = among all), then the same with --bench (the 35B-A3B's expert shapes timed);
#   2. each staged plant (scripts/gpu-stage-plant.sh build-sm90 moe-gemm-tile) must fail its filter's cases;
#   3. the conformance suite (cuda-check --filter backend) and the engine check (9 synth models, CPU vs GPU);
#   4. the qwen35moe 35B-A3B shape (synth q4_k_m): `bench -p 512 -n 128 -r 2` under each of VARIANTS (VAR=VALUE+
#      VAR=VALUE, or "default"), alternating (LLM170_CUDA_MOE_GEMM=0, every routed slot through the GEMV, was the
#      A/B switch of the 2026-12-04 measurement, since removed).
# Stage as scripts/gpu-e2e.sh (scripts/gpu-stage.sh build-sm90), carry .devbin, run: bash scripts/gpu-moe-gemm.sh
set -u
. scripts/gpu-devbin.sh
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s]"; }
count() { echo "$(grep -c ' ok' "$1") ok, $(grep -cE 'FAIL|ERR' "$1") FAIL/ERR"; }
if [ "${SKIP_CHECK:-0}" != 1 ]; then
  timeout 120 "${B[@]}" cuda-check --filter gemm_experts > "$OUT/moe-check.txt" 2>&1
  echo "$(el) gemm_experts: $(count "$OUT/moe-check.txt")"; grep -E "gemm_experts" "$OUT/moe-check.txt" | cut -c1-230
  timeout 120 "${B[@]}" cuda-check --bench --filter gemm_experts > "$OUT/moe-bench.txt" 2>&1
  echo "$(el) gemm_experts --bench: $(count "$OUT/moe-bench.txt")"; grep -E "pbench" "$OUT/moe-bench.txt" | cut -c1-230
  for d in .devbin/plant-*/; do
    [ -f "$d/llm170" ] && [ -f "$d/filter" ] || continue
    timeout 90 env "LD_LIBRARY_PATH=$PWD/.devbin/lib" "$PWD/$d/llm170" cuda-check --filter "$(cat "$d/filter")" > "$OUT/plant.txt" 2>&1
    echo "$(el) plant $(basename "$d") (must FAIL): $(count "$OUT/plant.txt")"; grep -E "FAIL|ERR" "$OUT/plant.txt" | cut -c1-200 | head -3
  done
  timeout 60 "${B[@]}" cuda-check --filter backend > "$OUT/conformance.txt" 2>&1
  echo "$(el) conformance rc $?: $(grep -E 'checks|failed' "$OUT/conformance.txt" | tail -2 | tr '\n' ' ')"
  grep -E "FAIL" "$OUT/conformance.txt" | head -5
  grep -E "gemm_experts|spans of 19|alone = in the pass of three" "$OUT/conformance.txt" | grep -E "Q4_K|Q6_K|Q8_0" | head -8
  mkdir -p /tmp/eng
  timeout 150 "${B[@]}" cuda-check --engine --dir /tmp/eng -t 8 > "$OUT/engine.txt" 2>&1
  echo "$(el) engine check rc $?"; tail -14 "$OUT/engine.txt"
fi
shape=${SHAPE:-qwen35moe-35b-a3b}
f=/dev/shm/$shape.gguf
timeout 150 "${B[@]}" synth --preset "$shape" --type q4_k_m --out "$f" > /dev/null 2>&1 || { echo "synth failed"; exit 1; }
for v in ${VARIANTS:-default}; do
  e=(); [ "$v" = default ] || e=(env ${v//+/ })
  log="$OUT/bench-${v//[^A-Za-z0-9]/_}.txt"
  s=$(date +%s)
  timeout "${BENCH_TIMEOUT:-200}" "${e[@]}" "${B[@]}" bench --model "$f" --device cuda -p 512 -n 128 -r 2 > "$log" 2>&1
  echo "$(el) $shape $v (rc $?, $(( $(date +%s) - s ))s):"
  grep -E "pp512|tg128" "$log" | awk -F'|' 'NF > 3 {print "  " $(NF-2) $(NF-1)}'
  grep -E "cuda graphs: tg128" "$log" | grep -oE 'GPU [0-9.]+ us' | head -1; grep -iE 'error' "$log" | head -2
done
rm -f "$f"
echo "$(el) done"
