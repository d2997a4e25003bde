#!/usr/bin/env bash
# One device call: the qwen35moe 35B-A3B decode step on the H200 (~2 min, and ~90 s more for each tg128
# variant: each run loads and repacks the 21.7 GB file; 5 variants ran past a 540 s call). The synth file (q4_k_m,
# 21.7 GB) is written to /dev/shm (12 s; the GPU machine's disk is slower), then:
#   - cuda-check --bench on the GEMV cases of the 35B's layer shapes (K 2048 rows, the output projections,
#     a routed expert's rows), each also checked against the CPU, with the default T = 1 shape and each of
#     GEMV_VARIANTS ("R,WPR,UNR ...", LLM170_CUDA_GEMV="1,R,WPR,UNR");
#   - tg128 (`bench -p 0 -n 128 -r 2`), and the same with each GEMV variant and each variable setting of
#     MOE_ENVS (space-separated VAR=VALUE+VAR=VALUE sets), so variants are compared inside one call;
#   - the op table of a profiled decode run (LLM170_CUDA_PROFILE=1, each op timed alone).
# Stage as for scripts/gpu-e2e.sh (scripts/gpu-stage.sh build-sm90), carry .devbin, run: bash scripts/gpu-moe.sh.
# Logs under $OUT.
set -u
. scripts/gpu-devbin.sh # OUT, the staged binaries unpacked, B (the staged llm170 with its libraries)
F=/dev/shm/moe35.gguf
timeout 60 "${B[@]}" synth --preset qwen35moe-35b-a3b --type q4_k_m --out $F > "$OUT/synth-moe.txt" 2>&1
# the GEMV cases of the 35B's shapes with the default T = 1 shape and each LLM170_CUDA_GEMV="1,R,WPR,UNR" of
# GEMV_VARIANTS (kernels/gemv.cu; a variant applies to every T = 1 GEMV, so its tg128 is measured too)
CASES=${MOE_CASES:-"K2048 N,K512 N2048,K4096 N2048 T1,E256"}
for g in default ${GEMV_VARIANTS:-}; do
  e=(); [ "$g" = default ] || e=(env "LLM170_CUDA_GEMV=1,$g")
  timeout 60 "${e[@]}" "${B[@]}" cuda-check --bench --filter "$CASES" > "$OUT/moe-gemv-${g//,/_}.txt" 2>&1
  echo "== GEMV $g, the 35B shapes: $(grep -c ' ok' "$OUT/moe-gemv-${g//,/_}.txt") ok, $(grep -cE 'FAIL|ERR' "$OUT/moe-gemv-${g//,/_}.txt") FAIL/ERR"
  grep -E "^gemv " "$OUT/moe-gemv-${g//,/_}.txt" | awk '{printf "  %s %s %s %s  %s us %s GB/s %s\n", $2, $3, $4, $5, $9, $10, $11}'
  grep -E "^gemv_experts " "$OUT/moe-gemv-${g//,/_}.txt" | cut -c1-110 # the routed experts' launch (its own columns)
done
for v in default ${MOE_ENVS:-} ${GEMV_VARIANTS:+$(for g in $GEMV_VARIANTS; do printf "LLM170_CUDA_GEMV=1,%s " "$g"; done)}; do
  e=(); [ "$v" = default ] || e=(env ${v//+/ })
  i=$((${i:-0} + 1)); log="$OUT/moe-tg-$i.txt"
  timeout 120 "${e[@]}" "${B[@]}" bench --model $F --device cuda -p 0 -n 128 -r 2 > "$log" 2>&1
  echo "== tg128 $v: $(grep -E 'tg128|rror' "$log" | awk -F'|' 'NF > 3 {print $(NF-1)} NF <= 3' | tr -s ' ')"
done
LLM170_CUDA_PROFILE=1 timeout 120 "${B[@]}" bench --model $F --device cuda -p 0 -n 32 -r 1 > "$OUT/moe-prof.txt" 2>&1
echo "== profile (decode, each op timed alone)"
grep -E "cuda profile|^\| " "$OUT/moe-prof.txt" | head -${PROF_ROWS:-40}
rm -f $F
