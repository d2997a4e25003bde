#!/usr/bin/env bash
# One device call (~150 s) for the CUDA backend wired into the engine (docs/cuda.md): unpacks the binary
# staged by scripts/gpu-stage.sh in .devbin/, then, each step under its own timeout so one hang cannot eat
# the call:
#   1. the backend conformance suite on the CUDA executor (every exec op vs ops_ref);
#   2. `llm170 cuda-check`: every kernel case (the conformance suite again as its last decode case);
#   3. `llm170 cuda-check --engine`: synth models of every arch, CPU vs GPU logits and greedy streams;
#   4. `llm170 bench --device cuda` on synth files in the Qwen2.5-0.5B shape (llama arch) and the qwen35
#      0.8B shape, q4_k_m.
# Logs under $OUT; a short table last. Run from the repository root: bash .devbin/gpu-e2e.sh
# (or scripts/gpu-e2e.sh). Environment: OUT (default /tmp/gpu-out).
set -u
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
t0=$(date +%s)
[ -f .devbin/llm170.gz ] && gunzip -f .devbin/llm170.gz
chmod +x .devbin/llm170 2>/dev/null
B=(env "LD_LIBRARY_PATH=$PWD/.devbin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$PWD/.devbin/llm170") # timeout runs it
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
[ "${E2E_KERNELS:-1}" = 1 ] && step cuda-check 40 "${B[@]}" cuda-check # every kernel case (E2E_KERNELS=0 skips)
step engine 75 "${B[@]}" cuda-check --engine --dir "$OUT" -t 8
step synth-05b 15 "${B[@]}" synth --preset llama-qwen25-0.5b --type q4_k_m --out /tmp/q05b.gguf
step bench-05b 25 "${B[@]}" bench --model /tmp/q05b.gguf --device cuda -p 512 -n 128 -r 2
rm -f /tmp/q05b.gguf
step synth-08b 15 "${B[@]}" synth --preset qwen35-0.8b --type q4_k_m --out /tmp/q35-08b.gguf
step bench-08b 25 "${B[@]}" bench --model /tmp/q35-08b.gguf --device cuda -p 512 -n 128 -r 2
rm -f /tmp/q35-08b.gguf
echo "== gpu-e2e ($(( $(date +%s) - t0 ))s): $(head -2 "$OUT/gpu.txt" | tail -1)"
for s in conformance cuda-check engine synth-05b bench-05b synth-08b bench-08b; do echo "$s: ${res[$s]:-not run}"; done
echo "== conformance"; grep -E "FAIL|failed|checked|rror|device" "$OUT/conformance.txt" | head -12
echo "== cuda-check"; grep -E "FAIL|ERR|rror|cuda-check:|no CUDA" "$OUT/cuda-check.txt" | head -12
echo "== engine"; grep -E "^\| |engine check|rror|no CUDA" "$OUT/engine.txt" | cut -c1-150 | head -30
for b in 05b 08b; do echo "== bench $b"; grep -E "^\||t/s|rror|device" "$OUT/bench-$b.txt" | head -8; done
