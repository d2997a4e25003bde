#!/usr/bin/env bash
# Packs every staged binary (.devstage/llm170 and .devstage/plant-NAME/llm170, stripped; scripts/gpu-stage.sh and
# gpu-stage-plant.sh put them there) into one .devbin/bundle.tar.xz whose dictionary spans them all. A planted
# binary differs from the real one in a kernel or two, so beside the first binary's ~6.3 MB each further one
# costs little (two builds of different days: 6.5 MB together), where compressed one by one each took ~6 MB
# and the device call's 64 MiB tree cap (~53 MB of tracked files) left room for one. scripts/gpu-devbin.sh
# unpacks it on the GPU machine (python3's lzma and tarfile: that machine has no xz).
set -eu
[ -f .devstage/llm170 ] || { echo "gpu-bundle: nothing staged (.devstage/llm170: run scripts/gpu-stage.sh)"; exit 1; }
mkdir -p .devbin
rm -f .devbin/bundle.tar.xz
(cd .devstage && find . -name llm170 -type f | sort | tar -cf - -T -) |
  xz -9e -T1 --lzma2=preset=9e,dict=128MiB > .devbin/bundle.tar.xz
du -sh .devbin
