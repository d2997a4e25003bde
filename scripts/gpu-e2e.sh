#!/usr/bin/env bash
# One device call (~2-5 min) for the CUDA backend wired into the engine (docs/cuda.md): unpacks the binary
# staged by scripts/gpu-stage.sh in .devbin/, then, each step under its own timeout so one hang cannot eat
# the call:
#   1. the backend conformance suite on the CUDA executor (every exec op vs ops_ref);
#   2. `llm170 cuda-check`: every kernel case (the conformance suite again as its last decode case);
#   3. `llm170 cuda-check --engine`: synth models of every arch, CPU vs GPU logits and greedy streams, and
#      the GPU with its CUDA graphs (small passes captured) bit-identical to cuda:0:nograph at every step;
#   3b. for each planted-bug binary scripts/gpu-stage-plant.sh staged (.devbin/plant-NAME/), the conformance
#      suite and the engine check with it, one of which must FAIL (proof that the checks see a stale upload,
#      a stale q8_1 record);
#   3c. `llm170 serve --device cuda` (scripts/serve-check.sh) on tiny-qwen35 and the 0.5B shape: 6 concurrent
#      greedy requests, each prompt's text alone = in the batch, a streamed chat;
#   4. `llm170 bench --device cuda --compare-graphs` on synth files in the Qwen2.5-0.5B shape (llama arch)
#      and the qwen35 0.8B shape, q4_k_m: tg with graphs and with cuda:0:nograph, and the speed-up.
# Logs under $OUT; a short table last. Run from the repository root: bash .devbin/gpu-e2e.sh
# (or scripts/gpu-e2e.sh). Environment: OUT (default /tmp/gpu-out).
set -u
t0=$(date +%s)
. scripts/gpu-devbin.sh # OUT, the staged binaries unpacked, B (the staged llm170 with its libraries), .devbin/llm170-env
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
declare -A res
step() { # name timeout command...
  local name=$1 to=$2 s=$(date +%s)
  shift 2
  timeout -k 5 "$to" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  res[$name]="rc=$rc $(( $(date +%s) - s ))s"
  [ $rc -eq 124 ] && res[$name]="TIMEOUT after ${to}s"
  echo "[$name] ${res[$name]}" >&2
}
step conformance 30 "${B[@]}" cuda-check --filter backend
[ "${E2E_KERNELS:-1}" = 1 ] && step cuda-check 240 "${B[@]}" cuda-check # every kernel case (E2E_KERNELS=0 skips)
step engine 120 "${B[@]}" cuda-check --engine --dir "$OUT" -t 8
plants=()
for d in .devbin/plant-*/; do # each staged planted-bug binary: its engine check must FAIL
  [ -f "$d/llm170" ] || continue
  chmod +x "$d/llm170"
  p=$(basename "$d"); plants+=("$p-conformance" "$p")
  pe=(); [ -f "$d/env" ] && read -ra pe < "$d/env" # the variables an experiment's plant runs under
  step "$p-conformance" 30 env "LD_LIBRARY_PATH=$PWD/.devbin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "${pe[@]}" \
    "$PWD/$d/llm170" cuda-check --filter backend
  step "$p" 120 env "LD_LIBRARY_PATH=$PWD/.devbin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "${pe[@]}" \
    "$PWD/$d/llm170" cuda-check --engine --dir "$OUT" -t 8
  if [ -f "$d/filter" ]; then # the kernel cases this plant must fail
    plants+=("$p-check")
    step "$p-check" 120 env "LD_LIBRARY_PATH=$PWD/.devbin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "${pe[@]}" \
      "$PWD/$d/llm170" cuda-check --filter "$(cat "$d/filter")"
  fi
done
# serve on the GPU: concurrent requests, batch invariance end to end, streaming (scripts/serve-check.sh)
"${B[@]}" synth --preset tiny-qwen35 --type q4_k_m --out /tmp/tq35.gguf > /dev/null 2>&1
step serve-tiny 60 bash scripts/serve-check.sh "$PWD/.devbin/llm170-env" /tmp/tq35.gguf cuda 18181
step synth-05b 15 "${B[@]}" synth --preset llama-qwen25-0.5b --type q4_k_m --out /tmp/q05b.gguf
step bench-05b 50 "${B[@]}" bench --model /tmp/q05b.gguf --device cuda --compare-graphs -p 512 -n 128 -r 2
step serve-05b 60 bash scripts/serve-check.sh "$PWD/.devbin/llm170-env" /tmp/q05b.gguf cuda 18182
rm -f /tmp/q05b.gguf /tmp/tq35.gguf
step synth-08b 15 "${B[@]}" synth --preset qwen35-0.8b --type q4_k_m --out /tmp/q35-08b.gguf
step bench-08b 50 "${B[@]}" bench --model /tmp/q35-08b.gguf --device cuda --compare-graphs -p 512 -n 128 -r 2
rm -f /tmp/q35-08b.gguf
echo "== gpu-e2e ($(( $(date +%s) - t0 ))s): $(head -2 "$OUT/gpu.txt" | tail -1)"
for s in conformance cuda-check engine "${plants[@]}" serve-tiny synth-05b serve-05b bench-05b synth-08b bench-08b; do echo "$s: ${res[$s]:-not run}"; done
echo "== conformance"; grep -E "FAIL|failed|checked|rror|device" "$OUT/conformance.txt" | head -12
echo "== cuda-check"; grep -E "FAIL|ERR|rror|cuda-check:|no CUDA" "$OUT/cuda-check.txt" | head -12
echo "== engine"; grep -E "^\| |engine check|cuda graphs|rror|no CUDA" "$OUT/engine.txt" | cut -c1-170 | head -30
for p in "${plants[@]}"; do # a planted bug must fail the conformance suite or the engine check (rc != 0)
  echo "== $p (a plant must FAIL one of its steps): ${res[$p]}; $(grep -c 'FAIL' "$OUT/$p.txt") rows FAIL," \
       "$(grep -c ' differ in ' "$OUT/$p.txt") of them on bits"
  grep -E "FAIL|failed|cuda graphs|engine check:" "$OUT/$p.txt" | cut -c1-170 | head -4
done
for sv in serve-tiny serve-05b; do echo "== $sv"; grep -E "^ok|^FAIL|ready:|not ready" "$OUT/$sv.txt" | cut -c1-170 | head -10; done
for b in 05b 08b; do echo "== bench $b"; grep -E "^\||t/s|rror|device" "$OUT/bench-$b.txt" | head -10; done
