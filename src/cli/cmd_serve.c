/* cmd serve: `llm170 serve`, the OpenAI- and Anthropic-compatible HTTP server (src/server/). Flag names
 * are llama-server's where it has them. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/spec_cli.h"
#include "llm170.h"
#include "server/server.h"

static void usage(void) {
    fprintf(stderr,
            "usage: llm170 serve --model M [--host 127.0.0.1] [--port 8080] [--ctx-size N] [--parallel N]\n"
            "                    [--api-key K] [--device D] [--threads N] [--batch-size N] [--prefill-chunk N]\n"
            "                    [--queue N] [--alias NAME] [--max-body BYTES] [--chat-template NAME|TEXT]\n"
            "                    [--timeout S] [--max-connections N] [--strict-model] [--cache-type-k T]\n"
            "                    [--cache-type-v T] [--spec none|ngram|draft] [--draft-max N] [--draft-min N]\n"
            "                    [--model-draft F] [--spec-adaptive 0|1]\n"
            "  --ctx-size is per slot (tokens a request's prompt and answer share); --parallel is the number of\n"
            "  slots decoded together; --batch-size the tokens per batched step; --prefill-chunk the most prompt\n"
            "  tokens a step takes while other requests are generating (default 128; 0: up to --batch-size), a\n"
            "  prompt going in the fewest even pieces under it, which bounds how long a new prompt stalls their\n"
            "  streams (smaller: a shorter stall, more steps to prefill it); --queue the requests that may wait\n"
            "  for a slot before the server answers 429. --port 0 picks a free port (printed on stderr).\n"
            "  --chat-template: a built-in (chatml, llama3, gemma) or a Jinja text, instead of the file's own.\n"
            "  --timeout: seconds within which a request's headers, then its body, must arrive; idle kept-alive\n"
            "  connections close after it (default 30). --max-connections: connections at once (default 256).\n"
            "  --strict-model: answer 404 to a 'model' other than the served one (default: any name is taken).\n"
            "  --cache-type-k/-v (-ctk/-ctv): f32, f16, bf16 or q8_0 (default: the device's, f32 on the CPU).\n"
            "  --device: cpu (default), or cuda / cuda:N in a build with CUDA (an unknown one: an error listing them).\n"
            "  --spec: speculative decoding per slot, inside the batched steps: ngram (drafts from earlier\n"
            "  occurrences of the last tokens in the prompt and answer: free, and fast where answers repeat the\n"
            "  prompt, as code edits do) or draft (a smaller model of the same vocabulary, --model-draft F / -md F;\n"
            "  one context of it per slot). A slot proposes --draft-min..--draft-max drafts (default 1..8), the\n"
            "  step verifies them with the other slots' tokens, and the slot keeps those its own sampling agrees\n"
            "  with: the output is the one without --spec (any sampler, JSON schemas, stop strings). k follows each\n"
            "  slot's acceptance and the measured step times, and speculation turns itself off where it does not\n"
            "  pay (--spec-adaptive 0: always --draft-max). /metrics counts llm170_spec_drafted_total and\n"
            "  llm170_spec_accepted_total. (--spec mtp is for run / infer / bench only.)\n");
}

int cmd_serve(int argc, char **argv) {
    const char *cmd = "serve";
    srv_config c = {.host = "127.0.0.1", .port = 8080, .n_ctx = 4096, .n_slots = 4, .n_batch = 512,
                    .prefill_chunk = 128,
                    .n_threads = args_default_threads(), .queue_cap = 64, .max_body = 8u << 20,
                    .timeout_s = 30, .max_conns = 256};
    int max_body_mb = 0;
    spec_cli sc;
    spec_cli_init(&sc);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            return 0;
        }
        if (!strcmp(a, "--strict-model")) {
            c.strict_model = true;
            continue;
        }
        if (!(v = args_value(cmd, argc, argv, &i))) return 2;
        bool ok = true;
        if (!strcmp(a, "--model") || !strcmp(a, "-m")) c.model_path = v;
        else if (!strcmp(a, "--host")) c.host = v;
        else if (!strcmp(a, "--port")) ok = args_int(cmd, a, v, 0, 65535, &c.port);
        else if (!strcmp(a, "--ctx-size") || !strcmp(a, "-c")) ok = args_int(cmd, a, v, 16, 1 << 20, &c.n_ctx);
        else if (!strcmp(a, "--parallel") || !strcmp(a, "-np")) ok = args_int(cmd, a, v, 1, 256, &c.n_slots);
        else if (!strcmp(a, "--batch-size") || !strcmp(a, "-b")) ok = args_int(cmd, a, v, 1, 1 << 16, &c.n_batch);
        else if (!strcmp(a, "--prefill-chunk")) ok = args_int(cmd, a, v, 0, 1 << 16, &c.prefill_chunk);
        else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) ok = args_int(cmd, a, v, 1, 1024, &c.n_threads);
        else if (!strcmp(a, "--queue")) ok = args_int(cmd, a, v, 1, 1 << 16, &c.queue_cap);
        else if (!strcmp(a, "--timeout") || !strcmp(a, "-to")) ok = args_int(cmd, a, v, 1, 86400, &c.timeout_s);
        else if (!strcmp(a, "--max-connections")) ok = args_int(cmd, a, v, 1, 4096, &c.max_conns);
        else if (args_cache_flags(cmd, a, v, &c.cache_type_k, &c.cache_type_v, &ok)) {
        } else if (spec_cli_flag(cmd, a, v, &sc, &ok)) {
        }
        else if (!strcmp(a, "--max-body")) {
            ok = args_int(cmd, a, v, 1024, 1 << 30, &max_body_mb);
            c.max_body = (size_t)max_body_mb;
        } else if (!strcmp(a, "--api-key")) c.api_key = v;
        else if (!strcmp(a, "--alias") || !strcmp(a, "-a")) c.alias = v;
        else if (!strcmp(a, "--chat-template")) c.chat_template = v;
        else if (!strcmp(a, "--device") || !strcmp(a, "--backend")) c.device = v; /* checked by the model load */
        else {
            fprintf(stderr, "llm170 serve: unknown flag %s\n", a);
            usage();
            return 2;
        }
        if (!ok) return 2;
    }
    if (!c.model_path) {
        fprintf(stderr, "llm170 serve: --model is required\n");
        usage();
        return 2;
    }
    if (c.api_key && !c.api_key[0]) {
        fprintf(stderr, "llm170 serve: --api-key must not be empty\n");
        return 2;
    }
    if (sc.p.type == LLM170_SPEC_MTP) {
        fprintf(stderr, "llm170 serve: --spec mtp is not supported by serve: its drafter reads the target's hidden "
                "state at every prompt position, which the batched prefill does not keep; use --spec ngram or --spec "
                "draft (run, infer and bench take --spec mtp)\n");
        return 2;
    }
    llm170_model_params mp = llm170_model_default_params();
    mp.n_threads = c.n_threads;
    mp.device = c.device;
    if (!spec_cli_load(cmd, &sc, &mp)) return 2;
    c.spec = sc.p;
    int rc = srv_serve(&c);
    spec_cli_free(&sc);
    return rc;
}
