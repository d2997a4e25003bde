#!/usr/bin/env bash
# CTest's test_server_jsonc_walks: tests/server/test_jsonc_walks.py over test_server_jsonc --walk ($1), with
# the jsonschema package from scripts/test.sh's venv (tests/server/requirements.txt). Fewer walks in a
# sanitizer build (each mask costs ~30x more there).
set -u
bin=$1
py=python3; [ -x .cache/venv-test/bin/python ] && py=.cache/venv-test/bin/python
"$py" -c 'import jsonschema' 2>/dev/null || { echo "FAIL: no jsonschema for $py (scripts/test.sh makes .cache/venv-test)" >&2; exit 1; }
walks=200; ldd "$bin" 2>/dev/null | grep -q libasan && walks=20
exec "$py" tests/server/test_jsonc_walks.py "$bin" "$walks"
