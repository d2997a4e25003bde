#!/usr/bin/env bash
# One device call: decode (and prefill) speed of runtime variants of one binary, alternating in one call so
# that the ratios are from one machine state, plus the checks that a variant must pass. Variants:
# VARIANTS="name:VAR=VALUE+VAR=VALUE ..." ("name:" alone = no variable set); for each synth q4_k_m preset of
# SHAPES (files in /dev/shm), `bench -p PP -n 128 -r R` runs ROUNDS times per variant, interleaved, a line
# per run with the t/s and the graph's GPU time a pass. Before that (unless SKIP_CHECK is set), under each
# variant's variables: `cuda-check --filter VARIANT_FILTER` (default "q8_1") and the engine check; once, with
# the default variables, `cuda-check --bench --filter CHECK_FILTER` (default "gemv,q8_1": every T = 1 GEMV
# form compared bit for bit and timed). PROF_SHAPES: a decode profile
# (LLM170_CUDA_PROFILE) of those shapes under the last variant.
# A variant named like a binary scripts/gpu-stage-alt.sh staged (.devbin/alt-NAME/llm170: another tree, e.g. a
# branch) runs that binary instead of the staged llm170, so two trees compare in one call; with VARIANT_BENCH
# set its cuda-check also times the kernels (--bench).
# Stage: scripts/gpu-stage.sh build-cuda; run(carry: [".devbin"]). Logs under $OUT; a short table last.
set -u
. scripts/gpu-devbin.sh # OUT, the staged binaries unpacked, B (the staged llm170 with its libraries)
VARIANTS=${VARIANTS:-"base:"}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
venv() { local e=${1#*:}; [ -n "$e" ] && echo "env ${e//+/ }"; } # a variant's `env VAR=VALUE ...` prefix
vbin() { # X: the binary variant $1 runs (its staged alt, else the staged llm170)
  X=("${B[@]}")
  if [ -x ".devbin/alt-$1/llm170" ]; then X=(env "LD_LIBRARY_PATH=$PWD/.devbin/lib" "$PWD/.devbin/alt-$1/llm170"); fi
  return 0
}
for d in .devbin/alt-*/; do [ -f "$d/ref" ] && d=${d%/} && echo "== ${d#.devbin/alt-}: $(cat "$d/ref")"; done
if [ -z "${SKIP_CHECK:-}" ]; then
  CF=${CHECK_FILTER:-gemv,q8_1}
  timeout 300 "${B[@]}" cuda-check --bench --filter "$CF" > "$OUT/bench.txt" 2>&1
  echo "== bench ($CF): $(tail -1 "$OUT/bench.txt")"
  grep -E "rms_norm_q8_1" "$OUT/bench.txt" | awk '{printf "  %s %s %s  %s us\n", $1, $2, $3, $8}'
  awk '/gemv form/ {sh = $4 " " $5 " " $6; sub(":", "", sh); f[sh] = f[sh] sprintf(" %s:%s", $3, $7)} END {for (s in f) print "  " s f[s]}' \
    "$OUT/bench.txt" | sort
  for v in $VARIANTS; do
    n=${v%%:*}
    vbin "$n"
    $(venv "$v") timeout 300 "${X[@]}" cuda-check ${VARIANT_BENCH:+--bench} --filter "${VARIANT_FILTER:-q8_1}" \
      > "$OUT/check-$n.txt" 2>&1
    $(venv "$v") timeout 200 "${X[@]}" cuda-check --engine > "$OUT/engine-$n.txt" 2>&1
    echo "== $n: $(tail -1 "$OUT/check-$n.txt"); $(grep -E 'engine check' "$OUT/engine-$n.txt" | tail -1)"
    grep -hE " FAIL| ERR" "$OUT/check-$n.txt" "$OUT/engine-$n.txt" | head -5 | cut -c1-200
  done
fi
for shape in ${SHAPES:-llama-8b}; do
  f=/dev/shm/$shape.gguf
  timeout 240 "${B[@]}" synth --preset "$shape" --type q4_k_m --out "$f" > "$OUT/synth-$shape.txt" 2>&1 ||
    { echo "== $shape: synth failed"; tail -3 "$OUT/synth-$shape.txt"; continue; }
  echo "== $shape: ${PP:+pp$PP and }tg128 t/s (graph GPU us a pass)"
  for i in $(seq 1 "${ROUNDS:-2}"); do
    for v in $VARIANTS; do
      n=${v%%:*}
      vbin "$n"
      log="$OUT/ab-$shape-$n-$i.txt"
      $(venv "$v") timeout "${AB_TIMEOUT:-150}" "${X[@]}" bench --model "$f" --device cuda -p "${PP:-0}" -n 128 \
        -r "${R:-3}" > "$log" 2>&1
      echo "  $n $i: $(grep -E 'tg128|pp[0-9]' "$log" | awk -F'|' 'NF > 3 {printf "%s ", $(NF-1)}' | tr -s ' ')" \
           "$(grep -oE 'GPU [0-9.]+ us' "$log" | head -1)$(grep -iE 'error' "$log" | head -2)"
    done
  done
  if [[ " ${PROF_SHAPES:-} " == *" $shape "* ]]; then
    last=${VARIANTS##* }
    vbin "${last%%:*}"
    $(venv "$last") env LLM170_CUDA_PROFILE=1 timeout 150 "${X[@]}" bench --model "$f" --device cuda -p 0 -n 32 -r 1 \
      > "$OUT/prof-$shape.txt" 2>&1
    echo "-- decode profile ($shape, ${last%%:*})"; grep -E "^\| [a-z]|cuda profile|rror" "$OUT/prof-$shape.txt" | head -22 | cut -c1-100
  fi
  rm -f "$f"
done
head -2 "$OUT/gpu.txt" | tail -1
