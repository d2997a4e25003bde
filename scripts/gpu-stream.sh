#!/usr/bin/env bash
# One device call for the streaming T = 1 GEMV (kernels/gemv_stream.cu) against the block-per-row-group one
# (k_gemv_q):
#   1. every gemv case of cuda-check (each case also compares the T = 1 forms bit for bit: k_gemv_q and
#      k_gemv_stream with 2 / 4 / 8 rows a group, plain and grouped with a residual); a staged plant
#      (scripts/gpu-stage-plant.sh build-sm90 gemv-stream-ulp) must fail its filter's cases;
#   2. the T = 1 layer shapes timed (`cuda-check --bench`) under LLM170_CUDA_GEMV_STREAM = each of GV_VARIANTS;
#   3. tg128 (`bench -p 0 -n 128`; with PP=1 also pp512) of synth q4_k_m files, for each shape each variant of TG_VARIANTS (a variant
#      is VAR=VALUE+VAR=VALUE, or "default"), the variants alternating in one pass per shape.
# Stage as scripts/gpu-e2e.sh (scripts/gpu-stage.sh build-sm90), carry .devbin, run: bash scripts/gpu-stream.sh
# Logs under $OUT; a line per case or run as it goes.
set -u
. scripts/gpu-devbin.sh # OUT, the staged binaries unpacked, B (the staged llm170 with its libraries)
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 ))s]"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv,noheader
if [ "${SKIP_CHECK:-0}" != 1 ]; then
  timeout 240 "${B[@]}" cuda-check --filter gemv > "$OUT/check-gemv.txt" 2>&1
  echo "$(el) gemv cases: $(grep -c ' ok' "$OUT/check-gemv.txt") ok, $(grep -cE 'FAIL|ERR' "$OUT/check-gemv.txt") FAIL/ERR"
  grep -E "FAIL|ERR" "$OUT/check-gemv.txt" | head -5
  for d in .devbin/plant-*/; do
    [ -f "$d/llm170" ] && [ -f "$d/filter" ] || continue
    timeout 60 env "LD_LIBRARY_PATH=$PWD/.devbin/lib" "$PWD/$d/llm170" cuda-check --filter "$(cat "$d/filter")" \
      > "$OUT/plant.txt" 2>&1
    echo "$(el) plant $(basename "$d") (must FAIL): $(grep -c ' ok' "$OUT/plant.txt") ok, $(grep -cE 'FAIL|ERR' "$OUT/plant.txt") FAIL/ERR"
    grep -E "FAIL|ERR" "$OUT/plant.txt" | cut -c1-200 | head -3
  done
fi
F=${F:-"q4_k K4096 N4096 T1,q4_k K4096 N14336 T1,q4_k K14336 N4096 T1,q4_k K5120 N17408,q4_k K17408 N5120,q6_k K4096 N14336 T1,q6_k K5120 N17408,q6_k K17408 N5120,q5_k K4096 N14336 T1,q4_0 K4096 N14336 T1,q8_0 K4096 N14336 T1,q6_k K4096 N128256,q4_0 K896 N151936,q4_0 K896 N4864,q5_k K2048 N8192,q5_k K2048 N4096"}
for v in ${GV_VARIANTS-0 4 8 2}; do
  LLM170_CUDA_GEMV_STREAM=$v timeout 120 "${B[@]}" cuda-check --bench --filter "$F" > "$OUT/gv-$v.txt" 2>&1
  echo "$(el) == GEMV_STREAM=$v: $(grep -c ' ok' "$OUT/gv-$v.txt") ok, $(grep -cE 'FAIL|ERR' "$OUT/gv-$v.txt") FAIL/ERR"
  grep -E " ok| FAIL" "$OUT/gv-$v.txt" | awk '{printf "  %s %s %s %s  %s us %s GB/s %s\n", $2, $3, $4, $5, $9, $10, $11}'
done
for shape in ${TG_SHAPES:-llama-8b llama-qwen25-0.5b qwen35-0.8b qwen35-27b qwen35moe-35b-a3b}; do
  f=/dev/shm/$shape.gguf
  timeout 150 "${B[@]}" synth --preset "$shape" --type q4_k_m --out "$f" > "$OUT/synth-$shape.txt" 2>&1 ||
    { echo "== $shape: synth failed"; tail -3 "$OUT/synth-$shape.txt"; continue; }
  echo "$(el) == $shape tg128"
  for v in ${TG_VARIANTS:-LLM170_CUDA_GEMV_STREAM=0 LLM170_CUDA_GEMV_STREAM=4 LLM170_CUDA_GEMV_STREAM=8 default}; do
    e=(); [ "$v" = default ] || e=(env ${v//+/ })
    log="$OUT/tg-$shape-${v//[^A-Za-z0-9]/_}.txt"
    timeout "${TG_TIMEOUT:-90}" "${e[@]}" "${B[@]}" bench --model "$f" --device cuda -p 0 -n 128 -r "${TG_R:-2}" > "$log" 2>&1
    echo "  $v: $(grep -E 'tg128' "$log" | awk -F'|' 'NF > 3 {print $(NF-1)}' | tr -s ' ')" \
         "$(grep -E 'cuda graphs: tg128, per pass' "$log" | grep -oE 'GPU [0-9.]+ us' | head -1)$(grep -iE 'error' "$log" | head -2)"
  done
  if [ "${PP:-0}" = 1 ]; then # pp512 of the default build, for the record
    timeout "${TG_TIMEOUT:-90}" "${B[@]}" bench --model "$f" --device cuda -p 512 -n 0 -r 2 > "$OUT/pp-$shape.txt" 2>&1
    echo "  pp512: $(grep -E 'pp512' "$OUT/pp-$shape.txt" | awk -F'|' 'NF > 3 {print $(NF-1)}' | tr -s ' ')$(grep -iE 'error' "$OUT/pp-$shape.txt" | head -2)"
  fi
  rm -f "$f"
done
echo "$(el) done"
