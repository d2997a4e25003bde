#!/usr/bin/env bash
# One device call (~1-2 min): where the GPU time of a decode step and of a prefill pass goes, on synth files
# in the Qwen2.5-0.5B shape (llama arch) and the qwen35 0.8B shape, q4_k_m (docs/cuda.md, "Profile"):
#   - `bench --compare-graphs`: tg with graphs vs without, and per graph pass the host's capture and exec
#     update time against the GPU's time running it;
#   - with PIECES="0,0 24,128 ..." set: tg128 with each LLM170_CUDA_GRAPH_PIECES setting;
#   - LLM170_CUDA_PROFILE=1: the op table of a decode run (tg64) and of a prefill pass (pp512).
# Stages as scripts/gpu-e2e.sh does (scripts/gpu-stage.sh here; carry .devbin). Logs under $OUT.
set -u
. scripts/gpu-devbin.sh # OUT, the staged binaries unpacked, B (the staged llm170 with its libraries)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
for shape in llama-qwen25-0.5b qwen35-0.8b ${PROF_SHAPES:-}; do
  f=/tmp/$shape.gguf
  timeout 30 "${B[@]}" synth --preset "$shape" --type q4_k_m --out "$f" > "$OUT/synth-$shape.txt" 2>&1
  timeout 60 "${B[@]}" bench --model "$f" --device cuda --compare-graphs -p 512 -n 128 -r 2 > "$OUT/bench-$shape.txt" 2>&1
  for pc in ${PIECES:-}; do # graph pieces "first,later" (cuda_graph.c): tg only
    LLM170_CUDA_GRAPH_PIECES=$pc timeout 60 "${B[@]}" bench --model "$f" --device cuda -p 0 -n 128 -r 3 > "$OUT/pieces-$pc-$shape.txt" 2>&1
  done
  LLM170_CUDA_PROFILE=1 timeout 60 "${B[@]}" bench --model "$f" --device cuda -p 0 -n 64 -r 1 > "$OUT/prof-tg-$shape.txt" 2>&1
  LLM170_CUDA_PROFILE=1 timeout 60 "${B[@]}" bench --model "$f" --device cuda -p 512 -n 0 -r 1 > "$OUT/prof-pp-$shape.txt" 2>&1
  rm -f "$f"
  echo "=== $shape"
  grep -E "t/s|cuda graphs|rror" "$OUT/bench-$shape.txt" | grep -v "^| ---" | cut -c1-200
  for pc in ${PIECES:-}; do echo "pieces $pc: $(grep -E 'tg128|per pass' "$OUT/pieces-$pc-$shape.txt" | awk -F'|' 'NF>7 {print $8} NF<=7 {print}' | tr -s ' ' | tr '\n' ' ')"; done
  echo "--- decode profile"; grep -E "^\||cuda profile|rror" "$OUT/prof-tg-$shape.txt" | head -32
  echo "--- prefill profile"; grep -E "^\||cuda profile|rror" "$OUT/prof-pp-$shape.txt" | head -24
done
head -2 "$OUT/gpu.txt" | tail -1
