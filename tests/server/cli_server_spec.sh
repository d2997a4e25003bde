#!/usr/bin/env bash
# llm170 serve --spec: speculative decoding per slot inside the batched steps gives exactly the answers of the
# server without it (tests/server/test_spec_serve.py: concurrent clients, greedy and seeded sampling, logprobs,
# stop strings, max_tokens, streaming, JSON-schema constraints, a cancelled stream). On a KV-only model (tiny
# llama: rejected drafts cut from the cache) and a recurrent one (tiny qwen35: GDN state restored from the
# checkpoint and the kept tokens decoded again). Servers per model: without --spec; --spec ngram (adaptive);
# --spec ngram --spec-adaptive 0 --draft-max 4 (drafts every round: the most rollbacks); on llama also --spec
# draft with the target as its own draft. Then the startup errors: a draft model of another vocabulary, mtp,
# draft without a model.
set -u
bin=$1
. tests/server/serve_lib.sh
# --batch-size 128: every prompt here (<= 43 tokens) is prefilled in one piece on every server. At 64, the
# speculating servers' spans (up to 9 rows a slot) left less than a prompt beside them now and then, so its
# prefill went in two pieces there and one on the plain server; the chunked GDN form's rounding depends on the
# piece boundaries (~1e-2 of the logit range with Q8_0 weights: tests/engine/test_qwen35_invariants.c), which
# flips near-tied greedy picks of these random-weight models: the qwen35 stop-string set then differed in about
# 1 of 4 ASan runs. Comparing answers exactly needs the same prompt pieces on both servers.
common=(--parallel 4 --ctx-size 512 --threads 1 --batch-size 128)
for arch in llama qwen35; do
  model=$dir/$arch.gguf
  "$bin" synth --preset "tiny-$arch" --out "$model" --type q8_0 >/dev/null 2>&1 || fail "synth tiny-$arch"
  start_server "$dir/$arch-plain.log" "${common[@]}"
  plain=$port
  start_server "$dir/$arch-ngram.log" "${common[@]}" --spec ngram
  specs="ngram=http://127.0.0.1:$port"
  start_server "$dir/$arch-fixed.log" "${common[@]}" --spec ngram --spec-adaptive 0 --draft-max 4
  specs="$specs,ngram-fixed=http://127.0.0.1:$port"
  if [ "$arch" = llama ]; then
    start_server "$dir/$arch-draft.log" "${common[@]}" --spec draft --model-draft "$model"
    specs="$specs,draft-self=http://127.0.0.1:$port"
  fi
  LLM170_ARCH=$arch LLM170_PLAIN="http://127.0.0.1:$plain" LLM170_SPEC="$specs" "$py" tests/server/test_spec_serve.py \
    || fail "test_spec_serve.py ($arch)"
  stop_servers
done

# startup errors: clear messages, exit status 1 (could not start) or 2 (bad flags)
expect_error() {
  local what=$1 want=$2; shift 2
  "$bin" serve --model "$dir/llama.gguf" --port 0 --threads 1 "$@" >"$dir/err.log" 2>&1 &
  local p=$!
  for _ in $(seq 1 200); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$p" 2>/dev/null; then kill "$p"; wait "$p"; fail "$what: the server started"; fi
  wait "$p"
  local rc=$?
  [ $rc -ne 0 ] && grep -q "$want" "$dir/err.log" || fail "$what: exit $rc, wanted '$want' in: $(cat "$dir/err.log")"
  echo "  $what: $(grep -m1 "$want" "$dir/err.log")"
}
expect_error "draft of another vocabulary" "vocabulary" --spec draft --model-draft "$dir/qwen35.gguf"
expect_error "mtp" "not supported by serve" --spec mtp
expect_error "draft without a model" "needs --model-draft" --spec draft
expect_error "draft-min over draft-max" "exceeds --draft-max" --spec ngram --draft-min 5 --draft-max 4
echo "cli_server_spec: ok"
