#!/usr/bin/env bash
# One device call: the kernels of one graph-mode decode step, timed by ncu (each kernel alone, the clocks
# left as they are), grouped by kernel and grid (scripts/ncu_step.py). PRESETS (default qwen35moe-35b-a3b):
# synth q4_k_m presets made in /dev/shm; `bench -p 0 -n 4 -r 1` under ncu, its first 4000 kernels (a load
# launches none; a step of the 35B-A3B is ~700). Stage with scripts/gpu-stage.sh build-cuda, carry .devbin.
# The CSV stays in $OUT (ncu-PRESET.csv); the summary is printed, since a call returns only a few files.
set -u
. scripts/gpu-devbin.sh # OUT, the staged binaries unpacked, B (the staged llm170 with its libraries)
for p in ${PRESETS:-qwen35moe-35b-a3b}; do
  f=/dev/shm/$p.gguf
  timeout 120 "${B[@]}" synth --preset "$p" --type q4_k_m --out "$f" > /dev/null 2>&1 || { echo "== $p: synth failed"; continue; }
  timeout "${NCU_TIMEOUT:-240}" env LD_LIBRARY_PATH="$PWD/.devbin/lib" ncu --clock-control none \
    --metrics gpu__time_duration.sum --csv --print-units base -c "${NCU_KERNELS:-4000}" \
    "$PWD/.devbin/llm170" bench --model "$f" --device cuda -p 0 -n 4 -r 1 > "$OUT/ncu-$p.csv" 2> "$OUT/ncu-$p.err"
  echo "== $p: ncu rc=$?"
  python3 scripts/ncu_step.py "$OUT/ncu-$p.csv" --list "${LIST:-0}" 2>&1 | head -"${ROWS:-60}"
  rm -f "$f"
done
