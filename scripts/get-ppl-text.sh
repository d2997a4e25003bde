#!/usr/bin/env bash
# Writes the long perplexity text: Genesis 1-50 and Exodus 1-40 of the King James Version (public domain),
# from Debian's bible-kjv package (installed if missing), in the same form as the committed
# tests/crosscheck/genesis-kjv-1-24.txt (which is its first 86254 bytes): 380046 bytes, ~101k Gemma 3
# tokens, checked by sha256. Prints the file's path. Why a longer text: tests/crosscheck/README.md.
#   scripts/get-ppl-text.sh            -> .cache/genesis-exodus-kjv.txt
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/.cache/genesis-exodus-kjv.txt"
want=9c55262988f577510657ed48f90888f9e38a9e77e26d05e10de4d3c1caa42723
if [ -f "$out" ] && [ "$(sha256sum "$out" | cut -d' ' -f1)" = "$want" ]; then echo "$out"; exit 0; fi
if ! command -v bible >/dev/null; then
  echo "installing Debian's bible-kjv (the KJV text and its reader)" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bible-kjv >/dev/null
fi
mkdir -p "$(dirname "$out")"
(bible gen1:1-50:26; bible exo1:1-40:38) | sed -E 's/^[A-Za-z0-9]+:[0-9]+ //' | grep -v '^$' > "$out.tmp"
got=$(sha256sum "$out.tmp" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
  echo "get-ppl-text: the text's sha256 is $got, expected $want (another bible-kjv version?)" >&2
  exit 1
fi
mv "$out.tmp" "$out"
echo "$out"
