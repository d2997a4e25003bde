#!/usr/bin/env bash
# Every environment variable the code reads (getenv("LLM170_...") under src/), and every one the scripts and
# tests read or hand to a helper, is listed in one place,
# docs/architecture.md ("Environment variables"), so that the list stays short and true: a variable added
# without its line there fails this test. Runs without the binary ($1 unused). Usage: cli_... [llm170] [root]
set -u
root=${2:-.}
vars=$(grep -rhoE 'getenv\("LLM170_[A-Z0-9_]+"' "$root/src" | sed -E 's/getenv\("//; s/"$//' | sort -u)
# and what the scripts and tests read (C getenv, Python os.environ, shell ${VAR} / $VAR) or set for a helper
# (VAR=value), comment lines left out: the same list holds them
[ -d "$root/tests" ] && vars+=$'\n'$( {
  grep -rhoE 'getenv\("LLM170_[A-Z0-9_]+"' "$root/tests"
  grep -rhoE "environ(\.get\(|\[)[\"']LLM170_[A-Z0-9_]+" "$root/scripts" "$root/tests"
  grep -rhv '^[[:space:]]*#' --include=*.sh "$root/scripts" "$root/tests" "$root/.ci" 2>/dev/null |
    grep -oE '\$\{?LLM170_[A-Z0-9_]+|(^|[ ;(])LLM170_[A-Z0-9_]+='
  grep -hv '^[[:space:]]*#' "$root/.ci/run" 2>/dev/null | grep -oE '\$\{?LLM170_[A-Z0-9_]+|(^|[ ;(])LLM170_[A-Z0-9_]+='
} | grep -oE 'LLM170_[A-Z0-9_]+' | sort -u)
vars=$(sort -u <<<"$vars" | grep .)
[ -n "$vars" ] || { echo "cli_env_listed: no getenv(\"LLM170_...\") found under $root/src (wrong root?)"; exit 1; }
bad=0
for v in $vars; do
  grep -q "\`$v[=\`]" "$root/docs/architecture.md" || { echo "$v is read in the code, a script or a test but not listed in docs/architecture.md"; bad=1; }
done
n=$(wc -w <<<"$vars")
[ $bad -eq 0 ] || { echo "cli_env_listed: FAIL"; exit 1; }
echo "cli_env_listed: all $n variables the code, scripts and tests read are listed"
