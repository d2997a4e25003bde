#!/usr/bin/env bash
# libllm170.so exports exactly the public API: every defined dynamic symbol is one of the functions
# include/llm170.h declares, and every one of those is exported (a declaration without LLM170_API is not).
#   tests/lib/symbols.sh LIBLLM170.so   (run from the repo root)
set -euo pipefail
so=$1
exported=$(nm -D --defined-only "$so" | awk '{print $NF}' | sort -u)
# Function declarations start a line with their return type (comments start with "/*" or " *").
declared=$(grep -E '^[a-zA-Z_][a-zA-Z0-9_ ]* \*?llm170_[a-z0-9_]+\(' include/llm170.h |
           grep -oE 'llm170_[a-z0-9_]+\(' | tr -d '(' | sort -u)
[ -n "$declared" ] || { echo "FAIL: no function declarations found in include/llm170.h" >&2; exit 1; }
bad=$(comm -23 <(echo "$exported") <(echo "$declared"))
missing=$(comm -13 <(echo "$exported") <(echo "$declared"))
if [ -n "$bad" ]; then
  echo "FAIL: $so exports symbols outside the public API ($(echo "$bad" | wc -l)):" >&2
  echo "$bad" | head -20 >&2
fi
if [ -n "$missing" ]; then
  echo "FAIL: public functions not exported by $so (LLM170_API missing?):" >&2
  echo "$missing" >&2
fi
[ -z "$bad$missing" ] || exit 1
echo "ok: $so exports the $(echo "$declared" | wc -l) functions of include/llm170.h and nothing else"
