# Sourced (`. scripts/gpu-devbin.sh`, from the repository root) by the device scripts: OUT (default
# /tmp/gpu-out) made; the binaries scripts/gpu-stage.sh and gpu-stage-plant.sh staged in .devbin/bundle.tar.xz
# unpacked (python3's lzma and tarfile: the GPU machine has no xz); B, the staged llm170 as a command array
# with its shared libraries (.devbin/lib) on the path: "${B[@]}" cuda-check ...; and the same as one executable,
# .devbin/llm170-env, for scripts that take a binary's path (serve-check.sh, bench-server.sh --llm170)
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
if [ -f .devbin/bundle.tar.xz ]; then # scripts/gpu-bundle.sh: llm170 and plant-NAME/llm170 in one archive
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(".devbin", filter="data")' .devbin/bundle.tar.xz &&
    rm .devbin/bundle.tar.xz
fi
chmod +x .devbin/llm170 .devbin/plant-*/llm170 .devbin/alt-*/llm170 2>/dev/null
B=(env "LD_LIBRARY_PATH=$PWD/.devbin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$PWD/.devbin/llm170")
printf '#!/bin/sh\nLD_LIBRARY_PATH="%s/.devbin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s/.devbin/llm170" "$@"\n' \
  "$PWD" "$PWD" > .devbin/llm170-env && chmod +x .devbin/llm170-env
