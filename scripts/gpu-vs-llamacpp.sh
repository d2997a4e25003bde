#!/usr/bin/env bash
# Side by side on the GPU machine, the same GGUF file for both engines (issue 11's "Measure"): llm170
# `bench --device cuda` against llama.cpp's llama-bench and llama-batched-bench built there with CUDA for
# sm_90 from the llama-cpp-python sdist's vendor/llama.cpp (the version the CPU comparisons use); and
# (mode serve, issue 12's "Measure") `llm170 serve --device cuda` against llama-server under load.
#
#   here:  scripts/gpu-stage.sh build-cuda && scripts/gpu-vs-llamacpp.sh --stage
#          (stages .devbin/ and a trimmed llama.cpp source, ~2.6 MB xz, into .devbin/llama-trim.tar.xz)
#   there: run(carry: [".devbin"], command: "bash .devbin/gpu-vs-llamacpp.sh build")   ~5-6 min, once
#          run(carry: [".devbin"], command: "SHAPES='llama-qwen25-0.5b llama-8b' bash .devbin/gpu-vs-llamacpp.sh bench")
#          run(carry: [".devbin"], command: "bash .devbin/gpu-vs-llamacpp.sh serve")   ~3 min
#   or, llama.cpp built HERE (no device time for its build): scripts/gpu-vs-llamacpp.sh --stage-bin BUILD packs it
#          into .devllama/pNN parts of 10 MB; each part in its own call (take-part), back to back, then 'build'
#          there assembles them (below, at --stage-bin).
#
# llama.cpp is built into build-llama/ in the repository copy there: a path .gitignore ignores (files there
# that git would see as untracked are removed before the next call), which no call carries, so it stays on
# the warm machine between consecutive calls (it is given back after ~30 s idle: call again at once).
# "build bench" does both in one call (339 s for the build on an H100 before llama-server joined it; "build
# serve" would come near a call's 10 minutes: two calls). A build cut off by the call's limit goes on where it
# stopped at the next 'build' on the same warm machine.
# For each shape (`llm170 synth --preset SHAPE --type q4_k_m`, written once and read by both engines):
#   pp512, pp4096 and tg128 at depth 0, tg128 at depth 4096 (llama-bench -fa 1 -ngl 99; llm170 bench -d);
#   batched decode of 8 and 64 sequences, 512 prompt tokens each, 128 steps (llama-batched-bench S_TG;
#   llm170 bench -p 0 -d 512 -np S). Set NPL="8" to skip 64 on the big shapes.
# serve: the llama 8B shape (synth, q4_k_m, /dev/shm/llama-8b.gguf) served by each in turn through
#   scripts/bench-server.sh with DEVICE=cuda: 64 slots of 768 tokens, 8 host threads, CLIENTS (default 16,64)
#   streaming clients sending REQS (default 2) requests each back to back, 512-token prompts, 128 tokens
#   generated (ignore_eos, temperature 0.8), one round, llm170 first; total generated tokens/s, TTFT and
#   inter-token p50/p99 per client count. SERVE_ARGS / LLAMA_ARGS pass more flags to either server.
# Everything is appended to $OUT/log.txt (the machine returns at most 8 files); a table is printed last.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --stage-bin ]; then # run here: llama.cpp built HERE for sm_90 (BUILD: its build folder), packed
  # into .devllama/llama-bin.tar.xz (git-ignored; carried: [".devllama"]), which 'build' below unpacks instead of
  # building there (~4.5 min of device time saved). But a call carries ~12 MB beside the tracked tree (its 64 MiB
  # count both), and a build for sm_90 packs to 41 MB (2026-12-08): carry it in parts (scripts/pending/README.md). Built as 'build' does, plus -DGGML_NATIVE=OFF (AVX2 / FMA /
  # F16C named) since this machine's CPU is not the GPU machine's. llama-server goes too where that folder has
  # it (target llama-server; -DLLAMA_USE_PREBUILT_UI=OFF, or its configure reaches for the web UI's assets);
  # without it, 'build' builds llama-server there from the trimmed source.
  b=${2:?usage: $0 --stage-bin LLAMA_BUILD_DIR}
  [ -x "$b/bin/llama-bench" ] && [ -x "$b/bin/llama-batched-bench" ] || { echo "no llama-bench in $b/bin" >&2; exit 1; }
  rm -rf .devllama && mkdir -p .devllama
  exe=(llama-bench llama-batched-bench)
  [ -x "$b/bin/llama-server" ] && exe+=(llama-server)
  (cd "$b/bin" && strip "${exe[@]}" lib*.so* 2>/dev/null
   tar cf - "${exe[@]}" lib*.so*) | xz -9 -T2 > .devllama/llama-bin.tar.xz
  echo "packed: ${exe[*]}"
  cp "$0" .devllama/
  # a call carries ~12 MB beside the tracked tree (the device's 64 MiB count both): parts of 10 MB, each in its
  # own folder .devllama/pNN, carried one a call ('take-part' there), the md5 with every part
  (cd .devllama && split -b 10400000 -d llama-bin.tar.xz llama-bin.part- && md5sum llama-bin.tar.xz > md5 &&
   for f in llama-bin.part-*; do mkdir -p "p${f##*-}" && mv "$f" "p${f##*-}/" && cp md5 "p${f##*-}/"; done)
  du -sh .devllama .devllama/p*
  echo "carry each of $(cd .devllama && echo p*) in its own call, back to back on one warm machine (< 30 s apart):"
  echo "  run(carry: [\".devllama/pNN\"], command: \"bash scripts/gpu-vs-llamacpp.sh take-part\")"
  echo "then run(carry: [\".devbin\"], command: \"bash scripts/gpu-vs-llamacpp.sh build serve\")"
  exit 0
fi
if [ "${1:-}" = take-part ]; then # there: the parts carried in this call (.devllama/pNN) kept in build-llama/parts
  mkdir -p build-llama/parts && cp .devllama/p*/* build-llama/parts/ && ls -la build-llama/parts
  exit $?
fi
if [ "${1:-}" = --stage ]; then # run here, from the repository root
  src=.cache/llamacpp/src-0.3.36/vendor/llama.cpp
  [ -d "$src" ] || { echo "no $src: run scripts/llamacpp-build.sh first (it unpacks the sdist)" >&2; exit 1; }
  [ -d .devbin ] || { echo "run scripts/gpu-stage.sh first" >&2; exit 1; }
  t=$(mktemp -d)
  mkdir "$t/llama.cpp"
  # what a llama-bench / llama-batched-bench / llama-server build with CUDA needs, no other backend, tool or
  # example: llama-server links mtmd (multimodal; its sample media and tests left out) and llama-ui, whose
  # assets step (scripts/ui-assets.cmake) with -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF embeds no
  # web UI and needs only the two templates and sources.cmake of tools/ui (its 8 MB Svelte source stays here)
  (cd "$src" && tar cf - --exclude='test-*.jpeg' --exclude='test-*.mp3' --exclude='test-*.mp4' \
     --exclude=tools/mtmd/tests --exclude=tools/server/tests --exclude=tools/server/bench \
     CMakeLists.txt cmake include src common licenses LICENSE vendor/CMakeLists.txt \
     vendor/nlohmann vendor/cpp-httplib vendor/hash vendor/sheredom vendor/stb vendor/miniaudio \
     tools/llama-bench tools/batched-bench tools/server tools/mtmd tools/ui/CMakeLists.txt tools/ui/sources.cmake \
     tools/ui/ui.cpp.in tools/ui/ui.h.in scripts/ui-assets.cmake ggml/CMakeLists.txt ggml/cmake ggml/include \
     ggml/src/*.c ggml/src/*.cpp ggml/src/*.h ggml/src/*.in ggml/src/CMakeLists.txt ggml/src/ggml-cpu \
     ggml/src/ggml-cuda) |
    tar xf - -C "$t/llama.cpp"
  printf '%s\n' 'find_package(Threads REQUIRED)' 'llama_add_compile_flags()' 'add_subdirectory(batched-bench)' \
    'add_subdirectory(llama-bench)' 'add_subdirectory(mtmd)' 'add_subdirectory(ui)' 'add_subdirectory(server)' \
    > "$t/llama.cpp/tools/CMakeLists.txt"
  tar cJf .devbin/llama-trim.tar.xz -C "$t" llama.cpp && rm -rf "$t"
  cp "$0" .devbin/
  du -sh .devbin
  exit 0
fi

OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
LOG=$OUT/log.txt
cd "$here/.." # the repository root (the script runs from .devbin/ or scripts/)
LL=$PWD/build-llama
if [ "${1:-}" = build ]; then
  shift
  t0=$(date +%s)
  if [ ! -f .devllama/llama-bin.tar.xz ] && [ -f "$LL/parts/md5" ]; then # carried in parts (take-part)
    mkdir -p .devllama && cat "$LL"/parts/llama-bin.part-* > .devllama/llama-bin.tar.xz
    (cd .devllama && md5sum -c "$LL/parts/md5") | tee -a "$LOG" || rm -f .devllama/llama-bin.tar.xz
  fi
  if [ ! -x "$LL/bin/llama-bench" ] && [ -f .devllama/llama-bin.tar.xz ]; then # built here (--stage-bin)
    mkdir -p "$LL/bin" && python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2], filter="data")' \
      .devllama/llama-bin.tar.xz "$LL/bin" && chmod +x "$LL"/bin/llama-*
    echo "llama.cpp: the build staged with --stage-bin unpacked" | tee -a "$LOG"
    # built on another machine: every library it needs (cuBLAS, NCCL, the driver's libcuda) must resolve
    # here, else the source build below replaces it
    miss=$(for e in "$LL"/bin/llama-*; do LD_LIBRARY_PATH=$LL/bin ldd "$e"; done | grep 'not found' | sort -u)
    if [ -n "$miss" ]; then
      echo "llama.cpp: the staged build misses libraries here ($(echo $miss)); building from source" | tee -a "$LOG"
      rm -f "$LL"/bin/llama-*
    fi
  fi
  if [ ! -x "$LL/bin/llama-bench" ] || [ ! -x "$LL/bin/llama-server" ]; then
    # the trimmed source, unpacked with python's lzma (the machine has no xz), its files keeping their times so
    # that a build tree of the same source left on the warm machine rebuilds nothing; its tools/CMakeLists.txt
    # adds the server whatever LLAMA_BUILD_SERVER says, here without the web UI (no network to fetch its assets)
    rm -rf .cache/llsrc && mkdir -p .cache/llsrc &&
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2], filter="data")' \
        .devbin/llama-trim.tar.xz .cache/llsrc || exit 1
    cmake -S .cache/llsrc/llama.cpp -B "$LL" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
      -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
      >> "$LOG" 2>&1 &&
      cmake --build "$LL" -j16 --target llama-bench llama-batched-bench llama-server >> "$LOG" 2>&1
    echo "llama.cpp build: rc=$? in $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
    tail -5 "$LOG"
  fi
  ls -la "$LL/bin/" 2>&1 | grep -E "llama-(bench|batched|server)"
  case ${1:-} in bench | serve) ;; *) exit 0 ;; esac
fi

[ -x "$LL/bin/llama-bench" ] || { echo "no llama.cpp build at $LL (run '$0 build' first, on this warm machine)"; exit 1; }
. scripts/gpu-devbin.sh # the staged binaries unpacked, B (the staged llm170 with its libraries)
LB=(env "LD_LIBRARY_PATH=$LL/bin" "$LL/bin/llama-bench")
LBB=(env "LD_LIBRARY_PATH=$LL/bin" "$LL/bin/llama-batched-bench")
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv,noheader >> "$LOG" 2>&1
echo "llm170 $("${B[@]}" --version 2>&1 | head -1); llama.cpp of the llama-cpp-python 0.3.36 sdist" >> "$LOG"
SHAPES=${SHAPES:-"llama-qwen25-0.5b llama-8b qwen35-27b qwen35moe-35b-a3b"}
NPL=${NPL-"8 64"} # set and empty: no batched rows
REPS=${REPS:-3}
declare -A R # results: R[shape,test,engine] = t/s
step() { # label timeout command...: appends to the log; prints the output on stdout for parsing
  local label=$1 to=$2 s=$(date +%s)
  shift 2
  echo "### $label: $*" >> "$LOG"
  timeout -k 5 "$to" "$@" > "$OUT/step.txt" 2>&1
  local rc=$?
  cat "$OUT/step.txt" >> "$LOG"
  echo "### $label: rc=$rc, $(( $(date +%s) - s )) s" | tee -a "$LOG" >&2
  cat "$OUT/step.txt"
}
# the t/s mean of a markdown row whose test column matches $1 (llama-bench and llm170 bench print alike)
tps() { awk -F'|' -v t="$1" 'NF > 3 {g=$(NF-2); gsub(/^ +| +$/, "", g); if (g == t) {split($(NF-1), a, " "); print a[1]; exit}}'; }
if [ "${1:-}" = serve ]; then # llm170 serve against llama-server under load (see the header); the table last
  [ -x "$LL/bin/llama-server" ] || { echo "no llama-server at $LL/bin (run '$0 build' first, on this warm machine)"; exit 1; }
  f=/dev/shm/llama-8b.gguf # 'bench' with SHAPES naming llama-8b on this warm machine may have made it
  [ -s "$f" ] || step "synth llama-8b" 240 "${B[@]}" synth --preset llama-8b --type q4_k_m --out "$f" > /dev/null
  [ -s "$f" ] || { echo "no $f"; exit 1; }
  # 64 slots of 768 tokens: a 512-token prompt, its BOS and 128 generated fit; 8 threads for each server's host
  # side, the other 8 cores for loadgen.py's clients
  o=$(step "serve llama-8b" 480 env DEVICE=cuda SLOTS=64 PER_SLOT=768 \
      PROMPT_TOKENS=512 GEN_TOKENS=128 LLAMA_LD_PATH="$LL/bin" \
      bash scripts/bench-server.sh --llm170 "$PWD/.devbin/llm170-env" --llama-server "$LL/bin/llama-server" "$f" "${CLIENTS:-16,64}" 1 8 "${REQS:-2}")
  echo
  grep -E '^(## |\||round [0-9]+,|machine: )' <<< "$o" || tail -20 <<< "$o"
  exit 0
fi
for shape in $SHAPES; do
  f=/dev/shm/$shape.gguf # an earlier call on this warm machine (gpu-prefill-prof.sh, gpu-mmq.sh) may have made it
  [ -s "$f" ] || step "synth $shape" 300 "${B[@]}" synth --preset "$shape" --type q4_k_m --out "$f" > /dev/null
  [ -f "$f" ] || continue
  size=$(stat -c %s "$f")
  o=$(step "llm170 $shape pp/tg" 300 "${B[@]}" bench --model "$f" --device cuda -p 512 -n 128 -r "$REPS")
  R[$shape,pp512,us]=$(tps pp512 <<< "$o"); R[$shape,tg128,us]=$(tps tg128 <<< "$o")
  o=$(step "llm170 $shape pp4096" 300 "${B[@]}" bench --model "$f" --device cuda -p 4096 -n 0 -r "$REPS")
  R[$shape,pp4096,us]=$(tps pp4096 <<< "$o")
  o=$(step "llm170 $shape tg @ d4096" 300 "${B[@]}" bench --model "$f" --device cuda -p 0 -n 128 -d 4096 -r "$REPS")
  R[$shape,tg128d4096,us]=$(tps "tg128 @ d4096" <<< "$o")
  o=$(step "llama-bench $shape" 400 "${LB[@]}" -m "$f" -p 512,4096 -n 128 -d 0,4096 -fa 1 -ngl 99 -r "$REPS" -o md)
  R[$shape,pp512,ll]=$(tps pp512 <<< "$o"); R[$shape,tg128,ll]=$(tps tg128 <<< "$o")
  R[$shape,pp4096,ll]=$(tps pp4096 <<< "$o")
  R[$shape,tg128d4096,ll]=$(tps "tg128 @ d4096" <<< "$o")
  for np in $NPL; do
    o=$(step "llm170 $shape x$np" 300 "${B[@]}" bench --model "$f" --device cuda -p 0 -n 128 -d 512 -np "$np" -r 1)
    R[$shape,x$np,us]=$(tps "tg128 x$np @ d512" <<< "$o")
    o=$(step "llama-batched-bench $shape x$np" 300 "${LBB[@]}" -m "$f" -c $(( np * 640 + 256 )) -b 2048 -ub 512 \
        -npp 512 -ntg 128 -npl "$np" -fa on -ngl 99)
    # its table: | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |
    R[$shape,x$np,ll]=$(awk -F'|' -v b="$np" '{x=$4; gsub(/ /, "", x)} x == b && NF > 10 {gsub(/ /, "", $9); print $9; exit}' <<< "$o")
  done
  R[$shape,size]=$size
done
echo
# the card's read bandwidth, GB/s: the H200's as measured (../shared/GPU.md), the H100 SXM's HBM3 peak
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$gpu" in *H200*) peak=4450 ;; *H100*) peak=3350 ;; *) peak=0 ;; esac
echo "| shape (q4_k_m synth) | file GB | test | llm170 t/s | llama.cpp t/s | ratio | llm170 GB/s (size x t/s) |" \
     "% of ${gpu:-?}'s $(awk -v p=$peak 'BEGIN {printf "%.2f", p / 1000}') TB/s |"
echo "|---|---|---|---|---|---|---|---|"
for shape in $SHAPES; do
  size=${R[$shape,size]:-0}
  for t in pp512 pp4096 tg128 tg128d4096 $(for np in $NPL; do echo "x$np"; done); do
    u=${R[$shape,$t,us]:-}; l=${R[$shape,$t,ll]:-}
    ratio=$(awk -v u="$u" -v l="$l" 'BEGIN {if (u > 0 && l > 0) printf "%.2f", u / l; else print "-"}')
    # a MoE step reads its routed experts only, not the file: no GB/s from the file's size
    bw=$(awk -v u="$u" -v s="$size" -v t="$t" -v sh="$shape" \
      'BEGIN {if (t ~ /^tg/ && u > 0 && sh !~ /moe/) printf "%.0f", u * s / 1e9; else print "-"}')
    pct=$(awk -v b="$bw" -v p=$peak 'BEGIN {if (b + 0 > 0 && p > 0) printf "%.0f%%", b / p * 100; else print "-"}')
    echo "| $shape | $(awk -v s="$size" 'BEGIN {printf "%.3f", s / 1e9}') | $t | ${u:--} | ${l:--} | $ratio | $bw | $pct |"
  done
done
