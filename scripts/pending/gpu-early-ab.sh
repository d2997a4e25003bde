#!/usr/bin/env bash
# One device call (issue 11): the T = 1 GEMVs with their first weights loaded before the PDL wait (lean form 13,
# pipe form 125) against forms 12 / 122, alone and in the model. Needs scripts/pending/gemv-early-weights.patch applied,
# built and staged (scripts/gpu-stage.sh). Summary in $OUT/summary.txt.
set -u
. scripts/gpu-devbin.sh
S=$OUT/summary.txt
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$S"
st() { local n=$1 to=$2; shift 2; timeout -k 5 "$to" "$@" > "$OUT/$n.txt" 2>&1; echo "[$n] rc=$?" | tee -a "$S"; }
st gemv 200 "${B[@]}" cuda-check --bench --filter "gemv q4_0 K896,gemv q4_k K2816 N263 T1,gemv q5_k K2048,gemv q4_k K2048,K4096 N4096 T1,q4_k K4096 N14336 T1,K14336 N4096 T1,q4_k K5120 N17408 T1,q4_k K17408 N5120 T1,K5120 N10240 T1,K5120 N6144 T1,q4_k K4096 N2048 T1"
grep -E "^gemv|FAIL" "$OUT/gemv.txt" | cut -c1-70 >> "$S"
grep -E "gemv form +(12|13|122|125) " "$OUT/gemv.txt" >> "$S"
st engine 240 env LLM170_TMP_T1FORM=125 LLM170_TMP_LEANFORM=13 "${B[@]}" cuda-check --engine --dir "$OUT" -t 8
tail -2 "$OUT/engine.txt" >> "$S"
if [ "${CONF:-1}" = 1 ]; then
  st conf 120 env LLM170_TMP_T1FORM=125 LLM170_TMP_LEANFORM=13 "${B[@]}" cuda-check --filter backend
  tail -1 "$OUT/conf.txt" >> "$S"
fi
for shape in ${SHAPES:-qwen25-0.5b llama-8b qwen35-27b qwen35moe-35b-a3b}; do
  f=/dev/shm/$shape.gguf
  timeout 200 "${B[@]}" synth --preset "$shape" --type q4_k_m --out "$f" > /dev/null 2>&1 || { echo "synth $shape failed" >> "$S"; continue; }
  for i in 1 2; do
    for v in base early; do
      case $v in
        base) e=(LLM170_TMP_X=1) ;;
        early) e=(LLM170_TMP_T1FORM=125 LLM170_TMP_LEANFORM=13) ;;
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
