#!/usr/bin/env bash
# One device call (issue 11): two decode-step experiments against main, alone and together, in one binary built
# with scripts/pending/norm-pipe.patch applied (scripts/gpu-stage.sh after the build):
#  - normearly (LLM170_TMP_NORMEARLY=1): the fused rms_norm + q8_1 kernel loads its norm weight before the PDL wait;
#  - pipeall (LLM170_TMP_PIPEALL=1): the pipe GEMV for every T = 1 launch of >= 24 Mi weights, also at K < 4096 (the
#    lm_heads of the 0.5B and the 35B-A3B: alone 28.0 against 40.0 us on the 0.5B's, H100).
# Checks first: the gemv / q8_1 cases and the engine check under both variables (the bits must not move).
# Summary in $OUT/summary.txt. Usage: SHAPES="qwen25-0.5b llama-8b qwen35-27b qwen35moe-35b-a3b" bash $0
set -u
. scripts/gpu-devbin.sh
S=$OUT/summary.txt
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$S"
st() { local n=$1 to=$2; shift 2; timeout -k 5 "$to" "$@" > "$OUT/$n.txt" 2>&1; echo "[$n] rc=$?" | tee -a "$S"; }
both=(LLM170_TMP_NORMEARLY=1 LLM170_TMP_PIPEALL=1)
st gemv 200 env "${both[@]}" "${B[@]}" cuda-check --filter "rms_norm_q8_1,gemv q4_0 K896,gemv q4_k K2816 N263 T1,gemv q4_k K4096 N14336 T1"
grep -E "^(gemv|q8_1|quantize|rms)|FAIL|cases" "$OUT/gemv.txt" | cut -c1-90 >> "$S"
st engine 240 env "${both[@]}" "${B[@]}" cuda-check --engine --dir "$OUT" -t 8
tail -2 "$OUT/engine.txt" >> "$S"
for shape in ${SHAPES:-qwen25-0.5b llama-8b qwen35-27b qwen35moe-35b-a3b}; do
  f=/dev/shm/$shape.gguf
  timeout 200 "${B[@]}" synth --preset "$shape" --type q4_k_m --out "$f" > /dev/null 2>&1 || { echo "synth $shape failed" >> "$S"; continue; }
  # the same bits: a greedy stream with its top logprobs, main's kernels against both experiments
  for v in base both; do
    if [ $v = base ]; then e=(LLM170_TMP_X=1); else e=("${both[@]}"); fi
    timeout 120 env "${e[@]}" "${B[@]}" infer --model "$f" --device cuda --prompt "The quick brown fox" -n 24 \
      --top-logprobs 5 > "$OUT/infer-$shape-$v.txt" 2>/dev/null
  done
  if [ -s "$OUT/infer-$shape-base.txt" ] && cmp -s "$OUT/infer-$shape-base.txt" "$OUT/infer-$shape-both.txt"; then
    echo "$shape: stream and top logprobs identical" | tee -a "$S"
  else
    echo "$shape: stream or top logprobs DIFFER (or no output)" | tee -a "$S"
  fi
  for i in 1 2; do
    for v in base normearly pipeall both; do
      case $v in
        base) e=(LLM170_TMP_X=1) ;;
        normearly) e=(LLM170_TMP_NORMEARLY=1) ;;
        pipeall) e=(LLM170_TMP_PIPEALL=1) ;;
        both) e=("${both[@]}") ;;
      esac
      log=$OUT/tg-$shape-$v-$i.txt
      timeout 150 env "${e[@]}" "${B[@]}" bench --model "$f" --device cuda -p 0 -n 128 -r 2 > "$log" 2>&1
      echo "$shape $v #$i: $(grep -E 'tg128' "$log" | awk -F'|' 'NF > 3 {print $(NF-1)}' | tr -s ' ') $(grep -oE 'GPU [0-9.]+ us' "$log" | head -1)" | tee -a "$S"
    done
  done
  rm -f "$f"
done
tar czf "$OUT/logs.tgz" -C "$OUT" --exclude logs.tgz --exclude summary.txt . 2>/dev/null
find "$OUT" -type f ! -name logs.tgz ! -name summary.txt -delete
