"""Constrained decoding against the whole schema corpus (tests/server/fixtures/schemas.json), validated by
the jsonschema package: `test_server_jsonc --walk` draws N random walks per schema (uniformly random
tokens from a toy byte vocabulary, a refused one replaced by a uniform draw from the mask, within a random
token budget) and prints each document; every one must be closed, parse, and validate against its schema,
formats included. Each refused schema must be a 400 whose message names what is unsupported.

usage: test_jsonc_walks.py TEST_SERVER_JSONC [WALKS]"""
import json
import subprocess
import sys

from schemacheck import CORPUS, CORPUS_PATH, VERSION, errors
from srvtest import check, run

BIN = sys.argv[1]
WALKS = int(sys.argv[2]) if len(sys.argv) > 2 else 200

corpus = CORPUS
out = subprocess.run([BIN, "--walk", CORPUS_PATH, str(WALKS)], capture_output=True, check=False)
lines = [json.loads(x) for x in out.stdout.decode().splitlines()]


def test_corpus_valid():
    counts = {}
    for line in lines:
        if "refused" in line:
            continue
        name = line["name"]
        check("error" not in line, f"{name}: the schema did not compile: {out.stderr.decode()}")
        raw = bytes.fromhex(line["hex"])
        where = f"{name} seed {line['seed']}: {raw!r}"
        check(line["closed"], f"{where}: not closed within its budget")
        try:
            doc = json.loads(raw.decode("utf-8"))
        except ValueError as e:
            check(False, f"{where}: not JSON ({e})")
        bad = errors(corpus["valid"][name], doc)
        check(not bad, f"{where}: invalid: {bad}")
        counts[name] = counts.get(name, 0) + 1
    check(set(counts) == set(corpus["valid"]), f"walks for every schema: {sorted(set(corpus['valid']) - set(counts))}")
    check(all(n == WALKS for n in counts.values()), f"{WALKS} walks each: {counts}")
    check(out.returncode == 0, f"test_server_jsonc --walk: {out.stderr.decode()[-2000:]}")
    print(f"  {len(counts)} schemas x {WALKS} walks: {sum(counts.values())} documents, all valid "
          f"({VERSION}); "
          f"{out.stderr.decode().strip().splitlines()[-1]}")


def test_corpus_refused():
    refused = {x["refused"]: x for x in lines if "refused" in x}
    for i, case in enumerate(corpus["refused"]):
        got = refused.get(i)
        check(got and got["status"] == 400 and case["mentions"] in got["error"],
              f"refused[{i}] {json.dumps(case['schema'])[:200]}: want a 400 naming {case['mentions']!r}, got {got}")
    print(f"  {len(corpus['refused'])} unsupported schemas refused with a message naming the construct")


run("test_jsonc_walks", [test_corpus_valid, test_corpus_refused])
