#!/usr/bin/env bash
# `cmake --install` gives a usable copy: installs the build into a temporary prefix, then builds
# examples/generate.c against the installed header and library with `pkg-config --cflags --libs llm170`
# (the shared library when built, and the archive with --static), runs each on a tiny fixture model and
# compares the tokens with the in-tree example's (built on the static core).
#   tests/lib/install.sh CMAKE BUILD_DIR CC "EXTRA_FLAGS" SHARED(ON|OFF) IN_TREE_GENERATE
# (from the repo root; EXTRA_FLAGS: the sanitizer flags of a sanitized build)
set -euo pipefail
cmake=$1 build=$2 cc=$3 flags=$4 shared=$5 ref=$6
model=tests/models/fixtures/llama-f16.gguf
args=("$model" 6 1 7 42 99)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cmake" --install "$build" --prefix "$tmp/prefix" >/dev/null
pc=$(find "$tmp/prefix" -name llm170.pc)
[ -n "$pc" ] || fail "no llm170.pc installed"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(realpath "$(pkg-config --variable=libdir llm170)")
[ -f "$tmp/prefix/include/llm170.h" ] || fail "no header installed"
[ -f "$libdir/libllm170.a" ] || fail "no libllm170.a in $libdir"
[ -x "$tmp/prefix/bin/llm170" ] || fail "no llm170 binary installed"
cflags=$(pkg-config --cflags llm170)
libs=$(pkg-config --libs llm170)
static_libs=$(pkg-config --static --libs llm170)
echo "pkg-config --cflags --libs: $cflags $libs; --static --libs: $static_libs"
if echo "$libs $static_libs" | grep -E 'microhttpd|jansson'; then
  fail "the link line names the HTTP stack"
fi

# Only the installed header can be found: the source sits alone in the temporary folder.
cp examples/generate.c "$tmp/generate.c"
want=$("$ref" "${args[@]}")
[ -n "$want" ] || fail "the in-tree example printed nothing"
check_run() { # binary, then the environment to run it in
  local bin=$1; shift
  got=$(env "$@" "$bin" "${args[@]}") || fail "$bin exited with $?"
  [ "$got" = "$want" ] || fail "$bin printed '$got', the in-tree example '$want'"
}

if [ "$shared" = ON ]; then
  [ -e "$libdir/libllm170.so" ] || fail "no libllm170.so in $libdir"
  # shellcheck disable=SC2086
  "$cc" $flags -std=c11 -Wall -Wextra -Werror "$tmp/generate.c" $cflags $libs -o "$tmp/generate_shared"
  # (outputs captured first: grep -q exiting early would fail the pipe under pipefail)
  needed=$(readelf -d "$tmp/generate_shared")
  grep -q 'NEEDED.*libllm170\.so' <<<"$needed" || fail "generate_shared does not need libllm170.so"
  loaded=$(LD_LIBRARY_PATH=$libdir ldd "$tmp/generate_shared")
  grep -q "$libdir/libllm170\.so" <<<"$loaded" || fail "generate_shared does not load $libdir/libllm170.so"
  check_run "$tmp/generate_shared" LD_LIBRARY_PATH="$libdir"
  echo "ok: shared: $want"
  static_libs=${static_libs//-lllm170/-l:libllm170.a}  # the archive, though the .so sits beside it
else
  static_libs=$libs  # only the archive is installed: plain --libs must be complete
fi
# shellcheck disable=SC2086
"$cc" $flags -std=c11 -Wall -Wextra -Werror "$tmp/generate.c" $cflags $static_libs -o "$tmp/generate_static"
needed=$(readelf -d "$tmp/generate_static")
if grep 'NEEDED.*libllm170' <<<"$needed"; then fail "generate_static needs a shared libllm170"; fi
check_run "$tmp/generate_static"
echo "ok: static: $want"
