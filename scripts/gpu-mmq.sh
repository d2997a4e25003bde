#!/usr/bin/env bash
# One device call (issue 12, MoE prefill): the int8 tensor-core grouped expert GEMM (kernels/mmq.cu, the default)
# against the bf16 grouped kernel (gemm_experts, LLM170_CUDA_MMQ=0), in one binary (scripts/gpu-stage.sh). Order:
# the mmq cases (every check: bits of the host model, the error bound, the table, the unrouted row, half = all,
# tile 32 = 64; a staged plant mmq-slot-scale must fail them), both kernels' bench cases at the 35B-A3B's shapes,
# the engine check, then the 35B-A3B end to end: pp512 and pp4096, base and mmq alternating, 2 rounds; an op
# profile of one pp512 each; the two greedy streams (not expected to be identical: q8_1 activations instead of
# bf16). Summary in $OUT/summary.txt. Usage: PART=checks bash $0 (~5 min), then PART=e2e bash $0 (~7 min with the
# 35B-A3B's synth, H100 2026-12-07); no PART: both (past the 10-minute limit of one call).
set -u
PART=${PART:-all}
. scripts/gpu-devbin.sh
S=$OUT/summary.txt
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$S"
st() { local n=$1 to=$2; shift 2; timeout -k 5 "$to" "$@" > "$OUT/$n.txt" 2>&1; echo "[$n] rc=$?" | tee -a "$S"; }
if [ "$PART" != e2e ]; then
st check 300 "${B[@]}" cuda-check --filter mmq
grep -E "^mmq|FAIL|ERR|cases" "$OUT/check.txt" | cut -c1-230 >> "$S"
# a planted binary staged beside (scripts/gpu-stage-plant.sh BUILD mmq-slot-scale) must fail the small mmq cases
P=.devbin/plant-mmq-slot-scale/llm170
if [ -x "$P" ]; then
  timeout 200 env "LD_LIBRARY_PATH=$PWD/.devbin/lib" "$P" cuda-check --filter "101 tokens x 3" > "$OUT/plant.txt" 2>&1
  echo "plant mmq-slot-scale (must FAIL): $(grep -c FAIL "$OUT/plant.txt") of $(grep -c '^mmq' "$OUT/plant.txt") cases fail" \
    | tee -a "$S"
fi
st bench-mmq 300 "${B[@]}" cuda-check --bench --filter "mmq"
grep -E "pbench|FAIL|ERR|cases" "$OUT/bench-mmq.txt" | cut -c1-150 >> "$S"
st bench-gemm 300 "${B[@]}" cuda-check --bench --filter gemm_experts
grep -E "pbench|FAIL|ERR|cases" "$OUT/bench-gemm.txt" | cut -c1-150 >> "$S"
st engine 300 "${B[@]}" cuda-check --engine --dir "$OUT" -t 8
grep -E "moe|FAIL|engine check" "$OUT/engine.txt" | cut -c1-200 >> "$S"
rm -f "$OUT"/*.gguf
fi
f=/dev/shm/qwen35moe-35b-a3b.gguf
if [ "$PART" != checks ] && [ ! -s "$f" ]; then
  timeout 300 "${B[@]}" synth --preset qwen35moe-35b-a3b --type q4_k_m --out "$f" > /dev/null 2>&1 || echo "synth failed" >> "$S"
fi
if [ "$PART" != checks ] && [ -s "$f" ]; then
  for i in 1 2; do
    for v in base mmq; do
      if [ $v = base ]; then e=(LLM170_CUDA_MMQ=0); else e=(LLM170_CUDA_MMQ=1); fi
      for p in 512 4096; do
        log=$OUT/pp$p-$v-$i.txt
        timeout 200 env "${e[@]}" "${B[@]}" bench --model "$f" --device cuda -p $p -n 0 -r 2 > "$log" 2>&1
        echo "pp$p $v #$i: $(grep -E "pp$p" "$log" | awk -F'|' 'NF > 3 {print $(NF-1)}' | tr -s ' ')" | tee -a "$S"
      done
    done
  done
  for v in base mmq; do
    if [ $v = base ]; then e=(LLM170_CUDA_MMQ=0); else e=(LLM170_CUDA_MMQ=1); fi
    timeout 200 env "${e[@]}" LLM170_CUDA_PROFILE=1 "${B[@]}" bench --model "$f" --device cuda -p 512 -n 0 -r 1 \
      > "$OUT/prof-$v.txt" 2>&1
    echo "profile $v (pp512, the experts' rows):" >> "$S"
    grep -E "cuda profile|experts|moe_group|quantize_q8_1|to_bf16" "$OUT/prof-$v.txt" | head -16 | cut -c1-110 >> "$S"
    timeout 120 env "${e[@]}" "${B[@]}" infer --model "$f" --device cuda --prompt "The quick brown fox" -n 16 \
      > "$OUT/infer-$v.txt" 2>/dev/null
    echo "infer $v: $(tr '\n' ' ' < "$OUT/infer-$v.txt" | cut -c1-300)" | tee -a "$S"
  done
fi
tar czf "$OUT/logs.tgz" -C "$OUT" --exclude logs.tgz --exclude summary.txt . 2>/dev/null
find "$OUT" -type f ! -name logs.tgz ! -name summary.txt -delete
