#!/usr/bin/env bash
# The public header stands alone: include/llm170.h, included first and alone, compiles as C11 and as C++
# with every warning an error (a missing #include, e.g. <stddef.h> for size_t, fails here).
#   tests/lib/header.sh CC [CXX]   (run from the repo root; without CXX the C++ half fails)
set -euo pipefail
cc=$1 cxx=${2:-}
tu='#include "llm170.h"
/* uses the types the header promises, so an unused declaration cannot hide a missing one */
static size_t n_of(const llm170_seq_batch *b) { return (size_t)b->n_tokens; }
int main(void) { llm170_seq_batch b = {0, 1, 0, false}; return (int)n_of(&b) - 1; }'
echo "$tu" | "$cc" -x c -std=c11 -pedantic-errors -Wall -Wextra -Werror -Iinclude -fsyntax-only -
echo "C11: ok ($cc)"
if [ -z "$cxx" ]; then
  echo "FAIL: no C++ compiler found by CMake (build-essential has g++)" >&2
  exit 1
fi
echo "$tu" | "$cxx" -x c++ -std=c++11 -pedantic-errors -Wall -Wextra -Werror -Iinclude -fsyntax-only -
echo "C++11: ok ($cxx)"
