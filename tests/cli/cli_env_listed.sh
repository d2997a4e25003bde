#!/usr/bin/env bash
# Every environment variable the code reads (getenv("LLM170_...") under src/) is listed in one place,
# docs/architecture.md ("Environment variables"), so that the list stays short and true: a variable added
# without its line there fails this test. Runs without the binary ($1 unused). Usage: cli_... [llm170] [root]
set -u
root=${2:-.}
vars=$(grep -rhoE 'getenv\("LLM170_[A-Z0-9_]+"' "$root/src" | sed -E 's/getenv\("//; s/"$//' | sort -u)
[ -n "$vars" ] || { echo "cli_env_listed: no getenv(\"LLM170_...\") found under $root/src (wrong root?)"; exit 1; }
bad=0
for v in $vars; do
  grep -q "\`$v[=\`]" "$root/docs/architecture.md" || { echo "$v is read under src/ but not listed in docs/architecture.md"; bad=1; }
done
n=$(wc -w <<<"$vars")
[ $bad -eq 0 ] || { echo "cli_env_listed: FAIL"; exit 1; }
echo "cli_env_listed: all $n variables the code reads are listed"
