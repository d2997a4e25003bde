#!/usr/bin/env bash
# Diagnosis of a decode run that does not finish (one device call): synthesizes SHAPE (default
# qwen35moe-35b-a3b, q4_k_m), runs `bench -p 0 -n 16` under each env variant of VARIANTS (VAR=VALUE+VAR=VALUE,
# or "default"), samples the GPU's load every 10 s, and after LIMIT seconds attaches cuda-gdb to a run still
# going (the running kernels and every host thread's stack) before killing it.
# Stage as scripts/gpu-e2e.sh (scripts/gpu-stage.sh build-sm90), carry .devbin, run: bash scripts/diag/gpu-hang.sh
set -u
. scripts/gpu-devbin.sh
shape=${SHAPE:-qwen35moe-35b-a3b}
f=/dev/shm/$shape.gguf
timeout 150 "${B[@]}" synth --preset "$shape" --type q4_k_m --out "$f" > /dev/null 2>&1 || { echo "synth failed"; exit 1; }
for v in ${VARIANTS:-default}; do
  e=(); [ "$v" = default ] || e=(env ${v//+/ })
  log="$OUT/hang-${v//[^A-Za-z0-9]/_}.txt"
  t0=$(date +%s)
  "${e[@]}" "${B[@]}" bench --model "$f" --device "${DEV:-cuda}" -p 0 -n 16 -r 1 > "$log" 2>&1 &
  pid=$!
  while kill -0 $pid 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt "${LIMIT:-90}" ]; do
    sleep 10
    echo "  [$(( $(date +%s) - t0 ))s] $v: $(nvidia-smi --query-gpu=utilization.gpu,memory.used,power.draw --format=csv,noheader)"
  done
  if kill -0 $pid 2>/dev/null; then
    p=$(pgrep -P $pid -n llm170 || echo $pid)
    echo "== $v still running after ${LIMIT:-90}s: cuda-gdb on $p"
    timeout 90 cuda-gdb -p "$p" -batch -ex "info cuda kernels" -ex "thread apply all bt 14" > "$OUT/gdb-${v//[^A-Za-z0-9]/_}.txt" 2>&1
    grep -E "^\s*\*?\s*[0-9]+ .*(k_|kernel)|#[0-9]+ " "$OUT/gdb-${v//[^A-Za-z0-9]/_}.txt" | grep -v "libc\|pthread" | head -30
    kill -9 $pid $p 2>/dev/null; wait $pid 2>/dev/null
  else
    wait $pid; echo "== $v: rc $? in $(( $(date +%s) - t0 ))s: $(grep tg16 "$log" | awk -F'|' '{print $(NF-1)}')"; tail -3 "$log"
  fi
done
rm -f "$f"
