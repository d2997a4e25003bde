# Sourced (`. scripts/gpu-devbin.sh`, from the repository root) by the device scripts: OUT (default
# /tmp/gpu-out) made; the binaries scripts/gpu-stage.sh and gpu-stage-plant.sh staged xz-compressed in
# .devbin/ unpacked (python3's lzma: the GPU machine has no xz); B, the staged llm170 as a command array
# with its shared libraries (.devbin/lib) on the path: "${B[@]}" cuda-check ...
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
for f in .devbin/llm170.xz .devbin/plant-*/llm170.xz; do
  [ -f "$f" ] && python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3], "wb"))' "$f" && rm "$f"
done
chmod +x .devbin/llm170 .devbin/plant-*/llm170 2>/dev/null
B=(env "LD_LIBRARY_PATH=$PWD/.devbin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$PWD/.devbin/llm170")
