#!/usr/bin/env bash
# One device call (issue 12): the Hopper wgmma product (kernels/gemm_wgmma.cu) against main's mma.sync two-pass
# product, in a binary of branch wgmma built with -DLLM170_CUDA_ARCHS=90a-real (80-real;90a-real bundles too big for
# the call's 64 MiB beside the tree) and staged by scripts/gpu-stage.sh:
#  (a) the gemm_wgmma cases (every one; a failed case prints its wrong outputs and their pattern), then timed,
#      and the mma.sync "2-pass" cases for comparison;
#  (b) the engine check (12 small models, CPU against the GPU) under LLM170_TMP_WGMMA=1 (its prompts are 100
#      tokens, below the two-pass path's 256 rows: this shows the variable breaks nothing else; (c) runs it);
#  (c) per shape (/dev/shm/SHAPE.gguf if present, else a synth q4_k_m): a 600-token prompt's greedy stream and
#      top logprobs under both products (not the same bits: the same stream expected, logprobs close), then
#      pp512 and pp4096, main's product against LLM170_TMP_WGMMA=1, alternating, 2 rounds.
# Summary in $OUT/summary.txt. Usage: [STEPS=checks|models] [SHAPES="llama-8b qwen35-27b"] bash $0 (STEPS: (a) and (b)
# only, or (c) only: both together may pass a call's 10 minutes; default both).
set -u
. scripts/gpu-devbin.sh
S=$OUT/summary.txt
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$S"
st() { local n=$1 to=$2; shift 2; timeout -k 5 "$to" "$@" > "$OUT/$n.txt" 2>&1; echo "[$n] rc=$?" | tee -a "$S"; }
STEPS=${STEPS:-checks,models}
if [[ $STEPS == *checks* ]]; then
st check 300 "${B[@]}" cuda-check --filter gemm_wgmma
grep -E "^(gemm_wgmma|  )|cases" "$OUT/check.txt" | cut -c1-330 >> "$S"
st bench 420 "${B[@]}" cuda-check --bench --filter "n128 pbench,n256 pbench"
grep -E "^(gemm_wgmma|  )|cases" "$OUT/bench.txt" | cut -c1-330 >> "$S"
st bench2p 120 "${B[@]}" cuda-check --bench --filter "2-pass"
grep -E "^gemm|cases" "$OUT/bench2p.txt" | cut -c1-200 >> "$S"
st engine 300 env LLM170_TMP_WGMMA=1 "${B[@]}" cuda-check --engine --dir "$OUT" -t 8
grep -E "FAIL|engine check|cuda graphs" "$OUT/engine.txt" | cut -c1-200 >> "$S"
fi
[[ $STEPS == *models* ]] || SHAPES=" "
toks=$(python3 -c 'print(",".join(str((i * 7919 + 13) % 1000 + 10) for i in range(600)))')
for shape in ${SHAPES:-llama-8b qwen35-27b}; do
  f=/dev/shm/$shape.gguf
  made=0
  if [ ! -s "$f" ]; then
    timeout 300 "${B[@]}" synth --preset "$shape" --type q4_k_m --out "$f" > /dev/null 2>&1 || { echo "synth $shape failed" | tee -a "$S"; rm -f "$f"; continue; }
    made=1
  fi
  for v in base wgmma; do
    if [ $v = base ]; then e=(LLM170_TMP_X=1); else e=(LLM170_TMP_WGMMA=1); fi
    timeout 120 env "${e[@]}" "${B[@]}" infer --model "$f" --device cuda --prompt-tokens "$toks" -n 16 --top-logprobs 5 \
      > "$OUT/infer-$shape-$v.txt" 2> "$OUT/infer-$shape-$v.err"
  done
  python3 - "$OUT/infer-$shape-base.txt" "$OUT/infer-$shape-wgmma.txt" "$shape" <<'EOF' | tee -a "$S"
import json, sys
def rd(p):
    try: return [json.loads(l) for l in open(p) if l.startswith("{")]
    except Exception: return []
a, b = rd(sys.argv[1]), rd(sys.argv[2])
if not a or len(a) != len(b): print(f"{sys.argv[3]}: infer output missing or of different lengths ({len(a)}, {len(b)})"); sys.exit()
same = sum(x["token"] == y["token"] for x, y in zip(a, b))
d = max([abs(p[1] - q[1]) for p, q in zip(a[0].get("top", []), b[0].get("top", [])) if p[0] == q[0]] or [-1])
print(f"{sys.argv[3]}: 600-token prompt, {same}/{len(a)} greedy tokens equal; first token top-5 max |dlogprob| {d:.2e}")
EOF
  for i in 1 2; do
    for v in base wgmma; do
      if [ $v = base ]; then e=(LLM170_TMP_X=1); else e=(LLM170_TMP_WGMMA=1); fi
      for p in 512 4096; do
        log=$OUT/pp$p-$shape-$v-$i.txt
        timeout 240 env "${e[@]}" "${B[@]}" bench --model "$f" --device cuda -p $p -n 0 -r 2 > "$log" 2>&1
        echo "$shape pp$p $v #$i: $(grep -E "pp$p" "$log" | awk -F'|' 'NF > 3 {print $(NF-1)}' | tr -s ' ')" | tee -a "$S"
      done
    done
  done
  [ $made = 1 ] && rm -f "$f"
done
tar czf "$OUT/logs.tgz" -C "$OUT" --exclude logs.tgz --exclude summary.txt . 2>/dev/null
find "$OUT" -type f ! -name logs.tgz ! -name summary.txt -delete
