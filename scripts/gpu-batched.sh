#!/usr/bin/env bash
# One device call (~6 min): batched decode on the llama 8B synth file (q4_k_m). For the tensor-core GEMV of
# more than 8 rows (LLM170_CUDA_GEMV_BATCH=mma, an experiment) and the 8-row kernel over chunks (default):
# cuda-check's "(batched)" cases (each row against a one-row launch, bit for bit; their GB/s), and
# `bench -p 0 -n 128 -d 512 -np S` for S = 8 and 64; then pp512 and tg128 of one stream, tg128 at depth
# 4096 and the decode attention cases (timed), the prefill GEMM's 512-token bench cases (split-K k/v shapes
# among them) and the op profile of a 64-sequence step. Stage as for scripts/gpu-e2e.sh (scripts/gpu-stage.sh; cp this to .devbin/), run:
# bash .devbin/gpu-batched.sh. Logs under $OUT.
set -u
. scripts/gpu-devbin.sh # OUT, the staged binaries unpacked, B (the staged llm170 with its libraries)
timeout 60 "${B[@]}" synth --preset llama-8b --type q4_k_m --out /tmp/m8.gguf > "$OUT/synth.txt" 2>&1
for mode in mma chunks; do
  e=(); [ $mode = mma ] && e=(env LLM170_CUDA_GEMV_BATCH=mma)
  timeout 120 "${e[@]}" "${B[@]}" cuda-check --bench --filter "(batched)" > "$OUT/check-$mode.txt" 2>&1
  echo "== $mode: $(grep -c ' ok' "$OUT/check-$mode.txt") ok, $(grep -cE 'FAIL|ERR' "$OUT/check-$mode.txt") FAIL/ERR"
  grep -E "batched" "$OUT/check-$mode.txt" | awk '{printf "  %s %s %s %s  %s %s us %s GB/s, 1-row: %s off\n", $2, $3, $4, $5, $9, $10, $11, $(NF-1)}'
  for np in 8 64; do
    timeout 90 "${e[@]}" "${B[@]}" bench --model /tmp/m8.gguf --device cuda -p 0 -n 128 -d 512 -np $np -r 1 > "$OUT/np$np-$mode.txt" 2>&1
    echo "  np $np: $(grep -E 'tg128|rror' "$OUT/np$np-$mode.txt" | awk -F'|' 'NF > 3 {print $(NF-1)} NF <= 3' | tr -s ' ')"
  done
done
timeout 60 "${B[@]}" bench --model /tmp/m8.gguf --device cuda -p 512 -n 128 -r 3 > "$OUT/tg.txt" 2>&1
echo "== pp512, tg128: $(grep -E 'pp512|tg128|rror' "$OUT/tg.txt" | awk -F'|' 'NF > 3 {print $(NF-1)} NF <= 3' | tr -s ' ' | tr '\n' ' ')"
# decode attention at depth (split + merge kernels; the merge now takes 4 ways over the partials)
timeout 60 "${B[@]}" bench --model /tmp/m8.gguf --device cuda -p 0 -n 128 -d 4096 -r 2 > "$OUT/d4096.txt" 2>&1
echo "== tg128 @ d4096: $(grep -E 'tg128|rror' "$OUT/d4096.txt" | awk -F'|' 'NF > 3 {print $(NF-1)} NF <= 3' | tr -s ' ')"
timeout 60 "${B[@]}" cuda-check --bench --filter "attn_decode" > "$OUT/attn.txt" 2>&1
grep -E "^attn_decode|cuda-check:" "$OUT/attn.txt" | tr -s ' ' | cut -c1-160
# the other division of the split pass (LLM170_CUDA_ATTN=v2): its cases, the conformance suite (attention,
# attend_decode) and the engine check with it, then the same depth bench
echo "== LLM170_CUDA_ATTN=v2"
LLM170_CUDA_ATTN=v2 timeout 60 "${B[@]}" cuda-check --bench --filter "attn_decode" > "$OUT/attn-v2.txt" 2>&1
grep -E "^attn_decode|cuda-check:" "$OUT/attn-v2.txt" | tr -s ' ' | cut -c1-160
LLM170_CUDA_ATTN=v2 timeout 60 "${B[@]}" cuda-check --filter backend > "$OUT/conf-v2.txt" 2>&1
grep -E "FAIL|checks failed" "$OUT/conf-v2.txt" | head -6
LLM170_CUDA_ATTN=v2 timeout 90 "${B[@]}" cuda-check --engine --dir "$OUT" -t 8 > "$OUT/engine-v2.txt" 2>&1
grep -E "engine check:|FAIL" "$OUT/engine-v2.txt" | head -4
LLM170_CUDA_ATTN=v2 timeout 60 "${B[@]}" bench --model /tmp/m8.gguf --device cuda -p 0 -n 128 -d 4096 -r 2 > "$OUT/d4096-v2.txt" 2>&1
echo "  tg128 @ d4096 (v2): $(grep -E 'tg128|rror' "$OUT/d4096-v2.txt" | awk -F'|' 'NF > 3 {print $(NF-1)} NF <= 3' | tr -s ' ')"
# the prefill GEMM: fused / split-K shapes (k and v projections) and the 8B's other projections at 512
timeout 90 "${B[@]}" cuda-check --bench --filter "T=512 pbench" > "$OUT/gemm512.txt" 2>&1
grep -E "pbench" "$OUT/gemm512.txt" | tr -s ' ' | cut -c1-200
LLM170_CUDA_PROFILE=1 timeout 60 "${B[@]}" bench --model /tmp/m8.gguf --device cuda -p 0 -n 16 -d 512 -np 64 -r 1 > "$OUT/prof-np64.txt" 2>&1
echo "== profile, 64 sequences (decode ops; the depth prefill's gemm rows left out)"
grep -E "cuda profile|^\| " "$OUT/prof-np64.txt" | grep -v "gemm \|^| op\|^| ---" | head -16
rm -f /tmp/m8.gguf
