#!/usr/bin/env bash
# One device call (~4 min): batched decode's rows on int8 tensor cores (cuda_mmq_dense, the default from 64
# one-token rows a step: below that both runs take the chunked GEMV, a control of the noise; with
# scripts/pending/mmq-dense-split.patch from 9) against the 8-row GEMV over chunks of 8 (LLM170_CUDA_BATCH_MMQ=0),
# one binary:
#   - cuda-check's mmq_dense cases (the host model's bits, the error bound, half the rows = all, tiles of 32
#     = 64, the grouped form with one expert = the dense one) and their timed 8B shapes beside the batched
#     GEMV's ("(batched)": 16 and 64 rows);
#   - the conformance suite under LLM170_CUDA_BATCH_MMQ=0 (the default's runs in scripts/gpu-e2e.sh);
#   - `bench -p 0 -n 128 -d 512 -np S` on the llama 8B synth file (q4_k_m) for S = 8, 16, 32, 64, both ways,
#     alternating; then the op profile of a 64-sequence step with the default.
# Stage as for scripts/gpu-e2e.sh (scripts/gpu-stage.sh), run: bash scripts/gpu-batch-mmq.sh. Logs under $OUT.
set -u
. scripts/gpu-devbin.sh # OUT, the staged binaries unpacked, B (the staged llm170 with its libraries)
row() { grep -E 'tg128|rror' "$1" | awk -F'|' 'NF > 3 {print $(NF-1)} NF <= 3' | tr -s ' ' | tr '\n' ' '; }
timeout 100 "${B[@]}" cuda-check --bench --filter "mmq_dense" > "$OUT/dense.txt" 2>&1
echo "== mmq_dense cases: rc $?, $(grep -c ' ok' "$OUT/dense.txt") ok, $(grep -cE 'FAIL|ERR' "$OUT/dense.txt") FAIL/ERR"
grep -E "^mmq_dense|cuda-check:" "$OUT/dense.txt" | tr -s ' ' | cut -c1-230
timeout 60 "${B[@]}" cuda-check --bench --filter "N14336 T" > "$OUT/gemv.txt" 2>&1
grep -E "batched|cuda-check:" "$OUT/gemv.txt" | tr -s ' ' | cut -c1-200
LLM170_CUDA_BATCH_MMQ=0 timeout 40 "${B[@]}" cuda-check --filter backend > "$OUT/conf-gemv.txt" 2>&1
echo "== conformance, LLM170_CUDA_BATCH_MMQ=0: rc $?; $(grep -E 'checks|failed' "$OUT/conf-gemv.txt" | tail -1)"
grep -E "one-token sequences" "$OUT/conf-gemv.txt" | head -3
timeout 60 "${B[@]}" synth --preset llama-8b --type q4_k_m --out /tmp/m8.gguf > "$OUT/synth.txt" 2>&1
for np in ${NPS:-8 16 32 64}; do
  for v in 0 1 0 1; do
    LLM170_CUDA_BATCH_MMQ=$v timeout 90 "${B[@]}" bench --model /tmp/m8.gguf --device cuda -p 0 -n 128 -d 512 \
      -np $np -r 1 > "$OUT/np$np-$v.txt" 2>&1
    echo "np $np mmq=$v: $(row "$OUT/np$np-$v.txt")"
  done
done
LLM170_CUDA_PROFILE=1 timeout 60 "${B[@]}" bench --model /tmp/m8.gguf --device cuda -p 0 -n 16 -d 512 -np 64 -r 1 \
  > "$OUT/prof-np64.txt" 2>&1
echo "== profile, 64 sequences (decode ops; the depth prefill's gemm rows left out)"
grep -E "cuda profile|^\| " "$OUT/prof-np64.txt" | grep -v "gemm \|^| op\|^| ---" | head -16
rm -f /tmp/m8.gguf
