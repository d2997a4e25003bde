#!/usr/bin/env bash
# One device call: the staged llm170 ("base") against each version scripts/gpu-stage-alt.sh staged
# (.devbin/alt-NAME/llm170), in one run so the ratios are from one machine state. For each binary (unless
# SKIP_CHECK is set): `cuda-check --filter CHECK_FILTER` (default "gemv,backend": every GEMV case against the
# CPU and its forms bit for bit, and the conformance suite) and the engine check. Then for each synth
# q4_k_m preset of SHAPES (default llama-8b), `bench -p PP -n 128 -r R` ROUNDS times per binary, alternating;
# a line per run with the t/s and the graph's GPU time a pass. BENCH_FILTER: also `cuda-check --bench
# --filter BENCH_FILTER` per binary (kernel times). Logs under $OUT; a short summary is printed.
# Stage: scripts/gpu-stage.sh build-cuda; scripts/gpu-stage-alt.sh NAME REF; run(carry: [".devbin"]).
set -u
. scripts/gpu-devbin.sh # OUT, the staged binaries unpacked, B (the staged llm170 with its libraries)
L="LD_LIBRARY_PATH=$PWD/.devbin/lib"
bins=("base:$PWD/.devbin/llm170")
for d in .devbin/alt-*/; do [ -f "$d/llm170" ] && bins+=("$(basename "$d" | sed 's/^alt-//'):$PWD/${d%/}/llm170"); done
for b in "${bins[@]}"; do echo "== ${b%%:*}: $(cat "$(dirname "${b#*:}")/ref" 2>/dev/null || echo HEAD)"; done
for b in "${bins[@]}"; do
  n=${b%%:*} x=${b#*:}
  if [ -z "${SKIP_CHECK:-}" ]; then
    timeout 300 env "$L" "$x" cuda-check --filter "${CHECK_FILTER:-gemv,backend}" > "$OUT/check-$n.txt" 2>&1
    timeout 200 env "$L" "$x" cuda-check --engine > "$OUT/engine-$n.txt" 2>&1
    echo "== $n: $(tail -1 "$OUT/check-$n.txt"); $(grep -E 'engine check' "$OUT/engine-$n.txt" | tail -1)"
    grep -hE " FAIL| ERR" "$OUT/check-$n.txt" "$OUT/engine-$n.txt" | head -5 | cut -c1-200
  fi
  if [ -n "${BENCH_FILTER:-}" ]; then
    timeout 300 env "$L" "$x" cuda-check --bench --filter "$BENCH_FILTER" > "$OUT/bench-$n.txt" 2>&1
    echo "== $n kernels ($BENCH_FILTER): $(tail -1 "$OUT/bench-$n.txt")"
    grep -E "^[a-z_0-9]+ " "$OUT/bench-$n.txt" | awk '{printf "  %s\n", substr($0, 1, 120)}' | head -40
  fi
done
for shape in ${SHAPES:-llama-8b}; do
  f=/dev/shm/$shape.gguf
  timeout 240 "${B[@]}" synth --preset "$shape" --type q4_k_m --out "$f" > "$OUT/synth-$shape.txt" 2>&1 ||
    { echo "== $shape: synth failed"; tail -3 "$OUT/synth-$shape.txt"; continue; }
  echo "== $shape: ${PP:+pp$PP and }tg128 t/s (graph GPU us a pass)"
  for i in $(seq 1 "${ROUNDS:-2}"); do
    for b in "${bins[@]}"; do
      n=${b%%:*} x=${b#*:}
      log="$OUT/ab-$shape-$n-$i.txt"
      timeout "${AB_TIMEOUT:-150}" env "$L" "$x" bench --model "$f" --device cuda -p "${PP:-0}" -n 128 -r "${R:-3}" \
        > "$log" 2>&1
      echo "  $n $i: $(grep -E 'tg128|pp[0-9]' "$log" | awk -F'|' 'NF > 3 {printf "%s ", $(NF-1)}' | tr -s ' ')" \
           "$(grep -oE 'GPU [0-9.]+ us' "$log" | head -1)$(grep -iE 'error' "$log" | head -2)"
    done
  done
  rm -f "$f"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null | head -1
