// mtp_llamacpp: llama.cpp's MTP (nextn) logits for a qwen35 / qwen35moe GGUF, the outside reference for
// llm170's MTP block (issue 16 (d); transformers does not build the MTP block). Not built by CMake: it links
// against a llama.cpp build (scripts/mtp-golden.sh compiles it and writes tests/crosscheck/*.mtp).
//
// What it runs, through llama.cpp's public API and its staging header (src/llama-ext.h), the way its
// draft-mtp speculation feeds the block (common/speculative.cpp):
//   1. the trunk decodes the prompt x[0..P) with the nextn hidden rows kept for every position: h[p], the
//      final-normed hidden state after x[p];
//   2. an MTP context on the same model (LLAMA_CONTEXT_TYPE_MTP) decodes the pairs (x[p+1], h[p]) for
//      p = 0..P-2, token x[p+1] at position p+1, logits for every row: row p predicts x[p+2].
// llama.cpp's driver also puts a row (x[0], zeros) at position 0 first; llm170's llm170_mtp_decode starts
// at the first real pair, so this program leaves that row out (the MTP block's attention then sees the
// same keys in both engines; positions differ by a constant, which RoPE does not see).
//
// Output (text): a header, the prompt, then per row the log-sum-exp of its logits and its top N (id, logit)
// pairs, best first. Logits are printed with 9 significant digits.
//
//   mtp_llamacpp MODEL SEED P [TOP]      (P random prompt tokens from SEED; TOP defaults to 8)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

#include "llama.h"
#include "llama-ext.h"

// The prompt: P tokens from a 64-bit LCG (the same generator as tests/crosscheck/test_crosscheck_mtp.c),
// ids in [0, n_vocab - 64) so that control tokens at the top of a synthetic vocabulary are avoided.
static std::vector<llama_token> make_prompt(unsigned long long seed, int P, int n_vocab) {
    std::vector<llama_token> t(P);
    unsigned long long s = seed * 2862933555777941757ULL + 3037000493ULL;
    for (int i = 0; i < P; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        t[i] = (llama_token)((s >> 33) % (unsigned long long)(n_vocab - 64));
    }
    return t;
}

static int fail(const char *what) {
    fprintf(stderr, "mtp_llamacpp: %s\n", what);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: mtp_llamacpp MODEL SEED P [TOP]\n");
        return 2;
    }
    const char *path = argv[1];
    const unsigned long long seed = strtoull(argv[2], nullptr, 10);
    const int P = atoi(argv[3]), top = argc > 4 ? atoi(argv[4]) : 8;
    if (P < 2 || P > 256 || top < 1) return fail("P must be 2..256 and TOP >= 1");

    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.load_mtp = true;
    llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) return fail("cannot load the model");
    if (llama_model_n_layer_nextn(model) < 1) return fail("the model has no MTP (nextn) layer");
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    const int n_embd = llama_model_n_embd_out(model);

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512, cp.n_batch = 512, cp.n_ubatch = 512, cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = 2;
    // f32 caches and no flash attention: every product in f32, as llm170's default CPU path (llama.cpp's
    // defaults, an f16 cache and flash attention, round q, k and v to f16)
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context *tgt = llama_init_from_model(model, cp);
    if (!tgt) return fail("cannot create the target context");
    llama_set_embeddings_nextn(tgt, true, /*masked*/ false);

    llama_context_params dp = cp;
    dp.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
    dp.ctx_other = tgt;
    dp.n_rs_seq = 0;
    llama_context *dft = llama_init_from_model(model, dp);
    if (!dft) return fail("cannot create the MTP context");
    llama_set_embeddings_nextn(dft, true, /*masked*/ true);

    const std::vector<llama_token> x = make_prompt(seed, P, n_vocab);

    // 1. the trunk over the prompt: every position's h
    llama_batch_ext *b = llama_batch_ext_init(tgt);
    for (int p = 0; p < P; p++) {
        const llama_pos pos[4] = {p, 0, 0, 0};
        const int idx = llama_batch_ext_add_token(b, 0, x[p]);
        if (idx < 0 || !llama_batch_ext_set_pos(b, idx, pos)) return fail("cannot fill the trunk batch");
        if (p == P - 1) llama_batch_ext_set_output_logits(b, idx, true);
    }
    if (llama_process(tgt, LLAMA_PROCESS_TYPE_DECODE, b) != 0) return fail("the trunk decode failed");
    std::vector<float> h((size_t)P * n_embd);
    for (int p = 0; p < P; p++) {
        const float *row = llama_get_embeddings_nextn_ith(tgt, p);
        if (!row) return fail("no nextn hidden row");
        memcpy(h.data() + (size_t)p * n_embd, row, sizeof(float) * n_embd);
    }
    llama_batch_ext_free(b);

    // 2. the MTP block over the pairs (x[p+1], h[p])
    b = llama_batch_ext_init(dft);
    for (int p = 0; p + 1 < P; p++) {
        const llama_pos pos[4] = {p + 1, 0, 0, 0};
        const int idx = llama_batch_ext_add_token(b, 0, x[p + 1]);
        if (idx < 0 || !llama_batch_ext_set_pos(b, idx, pos) ||
            !llama_batch_ext_set_embd_token(b, idx, {h.data() + (size_t)p * n_embd, 1, (size_t)n_embd}) ||
            !llama_batch_ext_set_output_logits(b, idx, true))
            return fail("cannot fill the MTP batch");
    }
    if (llama_process(dft, LLAMA_PROCESS_TYPE_DECODE, b) != 0) return fail("the MTP decode failed");

    printf("# llama.cpp MTP logits: %s, seed %llu, P %d, top %d, n_vocab %d\n", path, seed, P, top, n_vocab);
    printf("prompt");
    for (int p = 0; p < P; p++) printf(" %d", x[p]);
    printf("\n");
    std::vector<int> ids(n_vocab);
    for (int p = 0; p + 1 < P; p++) {
        const float *l = llama_get_logits_ith(dft, p);
        if (!l) return fail("no MTP logits row");
        double mx = l[0];
        for (int v = 1; v < n_vocab; v++) mx = std::max(mx, (double)l[v]);
        double sum = 0;
        for (int v = 0; v < n_vocab; v++) sum += exp((double)l[v] - mx);
        for (int v = 0; v < n_vocab; v++) ids[v] = v;
        std::partial_sort(ids.begin(), ids.begin() + top, ids.end(),
                          [l](int a, int c) { return l[a] > l[c] || (l[a] == l[c] && a < c); });
        printf("row %d lse %.9g", p, mx + log(sum));
        for (int j = 0; j < top; j++) printf(" %d:%.9g", ids[j], l[ids[j]]);
        printf("\n");
    }
    llama_batch_ext_free(b);
    llama_free(dft);
    llama_free(tgt);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
