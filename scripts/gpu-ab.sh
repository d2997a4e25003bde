#!/usr/bin/env bash
# One device call: decode speed with and without a runtime switch, alternating in one call so that the
# ratio is from one machine state (docs/benchmarks.md). For each preset of AB_SHAPES (synth, q4_k_m; files
# in /dev/shm), `bench -p 0 -n 128 -r AB_R` runs AB_ROUNDS times with AB_OFF (VAR=VALUE+VAR=VALUE) set and
# as many times without, interleaved (off, on, off, on ...); a line per run with the t/s and the graph
# stats line (host capture / update time, GPU time a pass). Default: the programmatic dependent launch
# switch (LLM170_CUDA_PDL=0 off) on the 0.5B, qwen35 0.8B and llama 8B shapes.
# Stage as for scripts/gpu-e2e.sh (scripts/gpu-stage.sh build-sm90), carry .devbin. Logs under $OUT.
set -u
. scripts/gpu-devbin.sh # OUT, the staged binaries unpacked, B (the staged llm170 with its libraries)
off=${AB_OFF:-LLM170_CUDA_PDL=0}
for shape in ${AB_SHAPES:-llama-qwen25-0.5b qwen35-0.8b llama-8b}; do
  f=/dev/shm/$shape.gguf
  timeout 120 "${B[@]}" synth --preset "$shape" --type q4_k_m --out "$f" > "$OUT/synth-$shape.txt" 2>&1 ||
    { echo "== $shape: synth failed"; cat "$OUT/synth-$shape.txt"; continue; }
  echo "== $shape tg128 ($off = off)"
  for i in $(seq 1 "${AB_ROUNDS:-2}"); do
    for v in off on; do
      e=(); [ $v = off ] && e=(env ${off//+/ })
      log="$OUT/ab-$shape-$v-$i.txt"
      timeout "${AB_TIMEOUT:-120}" "${e[@]}" "${B[@]}" bench --model "$f" --device cuda -p 0 -n 128 -r "${AB_R:-3}" > "$log" 2>&1
      echo "  $v $i: $(grep -E 'tg128' "$log" | awk -F'|' 'NF > 3 {print $(NF-1)}' | tr -s ' ')" \
           "$(grep -E 'cuda graphs' "$log" | cut -c1-190)$(grep -iE 'error' "$log" | head -2)"
    done
  done
  rm -f "$f"
done
