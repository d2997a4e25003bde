#!/usr/bin/env bash
# Where a prompt's GPU time goes (issue 12): pp512 / pp4096 timed, then one profiled pass of each of
# PROF_TOKENS (default "512 4096"; LLM170_CUDA_PROFILE=1: each op timed alone, read the shares) per shape,
# summed by kernel family (issue 12's closing note asks for a 4096-token prefill's split) and by op. Uses
# /dev/shm/SHAPE.gguf when there (an earlier step of the same call may leave it), else makes it. Summary
# appended to $OUT/summary.txt.
# One device call: run(carry [".devbin"], "bash scripts/gpu-prefill-prof.sh; cat $OUT/summary.txt") after
# scripts/gpu-stage.sh; SHAPES="..." to choose the synth presets (default the 27B and the 35B-A3B), ~4 min.
set -u
. scripts/gpu-devbin.sh
S=$OUT/summary.txt
for shape in ${SHAPES:-qwen35-27b qwen35moe-35b-a3b}; do
  f=/dev/shm/$shape.gguf
  [ -s "$f" ] || timeout 200 "${B[@]}" synth --preset "$shape" --type q4_k_m --out "$f" > /dev/null 2>&1 || { echo "synth $shape failed" >> "$S"; continue; }
  for p in 512 4096; do
    timeout 150 "${B[@]}" bench --model "$f" --device cuda -p $p -n 0 -r 2 >> "$OUT/pp-$shape.txt" 2>&1
  done
  grep -E "pp[0-9]" "$OUT/pp-$shape.txt" | sed "s/^/$shape /" >> "$S"
  for p in ${PROF_TOKENS:-512 4096}; do
    LLM170_CUDA_PROFILE=1 timeout 150 "${B[@]}" bench --model "$f" --device cuda -p $p -n 0 -r 1 > "$OUT/prof-$shape-$p.txt" 2>&1
    echo "== $shape pp$p profile, by kernel family (the op's first word: gemm_wgmma, dequant_bf16, gdn, ...)" >> "$S"
    awk -F'|' 'NF > 5 && $3 ~ /^ *[0-9]+ *$/ {split($2, w, " "); t[w[1]] += $4; all += $4}
      END {for (k in t) printf "%-22s %9.3f ms %5.1f%%\n", k, t[k], 100 * t[k] / all | "sort -k2 -rn"}' \
      "$OUT/prof-$shape-$p.txt" | head -16 >> "$S"
    echo "== $shape pp$p profile, by op" >> "$S"; tail -45 "$OUT/prof-$shape-$p.txt" | cut -c1-110 >> "$S"
  done
done
