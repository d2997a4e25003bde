#!/usr/bin/env bash
# One device call: the T = 1 GEMV shapes (LLM170_CUDA_GEMV="1,R,WPR,UNR", kernels/gemv.cu) on the GEMV
# benchmark cases of the 8B and 27B layer shapes (`cuda-check --bench`, correctness checked in the same
# run, plus the T = 1 correctness cases) and on tg128 of the llama 8B synth file; then the T = 8 shapes
# (LLM170_CUDA_GEMV="8,R,WPR,UNR", VARIANTS8) on the T8 cases and 8 sequences decoded together. Prints a line per case
# as it goes (a call cut short still shows what ran); logs under $OUT (VARIANTS="" skips the T = 1 part).
# Stage as scripts/gpu-e2e.sh (scripts/gpu-stage.sh; cp this to .devbin/), run: bash .devbin/gpu-gemv-sweep.sh
set -u
. scripts/gpu-devbin.sh # OUT, the staged binaries unpacked, B (the staged llm170 with its libraries)
VARIANTS=${VARIANTS-"default 2,4,1 4,4,1 8,4,1 1,1,4 2,2,2 4,2,1"}
F=${F:-"N263 T1,q4_k K4096 N4096 T1,q4_k K4096 N14336 T1,q4_k K14336 N4096 T1,q4_k K5120,q4_k K17408,q6_k K4096 N14336 T1,q6_k K14336 N4096 T1,q6_k K5120,q6_k K17408,q5_k K4096 N14336 T1,q4_0 K4096 N14336 T1,q8_0 K4096 N14336 T1,q6_k K4096 N128256,q4_0 K896 N151936"}
MODEL=${MODEL:-llama-8b}
timeout 60 "${B[@]}" synth --preset "$MODEL" --type q4_k_m --out /tmp/m.gguf > "$OUT/synth.txt" 2>&1
for v in $VARIANTS; do
  e=(); [ "$v" = default ] || e=(env "LLM170_CUDA_GEMV=1,$v")
  timeout 120 "${e[@]}" "${B[@]}" cuda-check --bench --filter "$F" > "$OUT/check-$v.txt" 2>&1
  echo "== $v: $(grep -c ' ok' "$OUT/check-$v.txt") ok, $(grep -cE 'FAIL|ERR' "$OUT/check-$v.txt") FAIL/ERR"
  grep -E "K(4096|14336|5120|17408|896) " "$OUT/check-$v.txt" | awk '{printf "  %s %s %s %s  %s us %s GB/s %s\n", $2, $3, $4, $5, $9, $10, $11}'
  grep -E "FAIL|ERR" "$OUT/check-$v.txt" | head -3
  [ -f /tmp/m.gguf ] && timeout 60 "${e[@]}" "${B[@]}" bench --model /tmp/m.gguf --device cuda -p 0 -n 128 -r 3 > "$OUT/tg-$v.txt" 2>&1
  echo "  $MODEL $(grep -E 'tg128|rror' "$OUT/tg-$v.txt" | awk -F'|' 'NF > 3 {print $(NF-2), $(NF-1)} NF <= 3' | tr -s ' ')"
done
VARIANTS8=${VARIANTS8-"default 4,4,1 2,4,1 2,4,2 1,4,1 4,4,2"}
F8=${F8:-"T8"}
for v in $VARIANTS8; do
  e=(); [ "$v" = default ] || e=(env "LLM170_CUDA_GEMV=8,$v")
  timeout 120 "${e[@]}" "${B[@]}" cuda-check --bench --filter "$F8" > "$OUT/check8-$v.txt" 2>&1
  echo "== T8 $v: $(grep -c ' ok' "$OUT/check8-$v.txt") ok, $(grep -cE 'FAIL|ERR' "$OUT/check8-$v.txt") FAIL/ERR"
  grep -E "K(4096|14336|5120|17408|896|2816) " "$OUT/check8-$v.txt" | awk '{printf "  %s %s %s %s  %s us %s GB/s %s\n", $2, $3, $4, $5, $9, $10, $11}'
  [ -f /tmp/m.gguf ] && timeout 90 "${e[@]}" "${B[@]}" bench --model /tmp/m.gguf --device cuda -p 0 -n 64 -d 64 -np 8 -r 1 > "$OUT/tg8-$v.txt" 2>&1
  echo "  $MODEL $(grep -E 'tg64|rror' "$OUT/tg8-$v.txt" | awk -F'|' 'NF > 3 {print $(NF-2), $(NF-1)} NF <= 3' | tr -s ' ')"
done
rm -f /tmp/m.gguf
