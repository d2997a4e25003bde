/* Prefix reuse through the public API (llm170_seq_truncate, llm170_seq_save_state / restore_state), as the
 * server's slots use it: after rolling a sequence back to a prefix, decoding the same continuation again
 * must give the very same logits as the first time (bit for bit: the same computation on the same state),
 * on a hybrid model (qwen35: GDN state checkpoint) and an attention-only one (llama: truncation). Also pins
 * the refusals: truncating a hybrid mid-way, restoring into a sequence that was reset, a foreign buffer. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "llm170.h"

static const int32_t A[5] = {11, 42, 7, 99, 3};
static const int32_t B[3] = {5, 17, 64};

static float *decode_last(llm170_context *c, int seq, const int32_t *t, int n, int n_vocab) {
    llm170_seq_batch b = {seq, n, t, false};
    if (llm170_decode(c, &b, 1)) return NULL;
    float *row = malloc(sizeof(float) * (size_t)n_vocab);
    memcpy(row, llm170_logits(c, 0), sizeof(float) * (size_t)n_vocab);
    return row;
}

static void check_hybrid(void) {
    llm170_model *m;
    llm170_context *c;
    llm170_model_params mp = llm170_model_default_params();
    CHECKF(llm170_model_load("tests/models/fixtures/qwen35-f16.gguf", &mp, &m) == 0, "%s", llm170_last_error());
    llm170_context_params cp = {.n_seq = 2, .n_ctx = 64, .n_batch = 64};
    CHECK(llm170_context_new(m, &cp, &c) == 0);
    int nv = llm170_model_n_vocab(m);
    size_t sz = llm170_seq_state_size(c);
    CHECKF(sz > 16, "a hybrid model has recurrent state to save: %zu bytes", sz);
    void *ck = malloc(sz);
    free(decode_last(c, 0, A, 5, nv));
    CHECK(llm170_seq_save_state(c, 0, ck, sz) == 0);
    float *first = decode_last(c, 0, B, 3, nv);
    CHECK(llm170_seq_len(c, 0) == 8);
    CHECK(llm170_seq_truncate(c, 0, 6) != 0); /* a GDN state cannot be rolled back */
    CHECK(llm170_seq_truncate(c, 0, 8) == 0);
    CHECK(llm170_seq_restore_state(c, 0, ck, sz) == 0);
    CHECK(llm170_seq_len(c, 0) == 5);
    float *again = decode_last(c, 0, B, 3, nv);
    CHECKF(first && again && memcmp(first, again, sizeof(float) * (size_t)nv) == 0,
           "logits after restoring the checkpoint differ from the first pass");
    /* without the restore, the state would have seen B twice: the check above can fail */
    float *twice = decode_last(c, 0, B, 3, nv);
    CHECK(twice && memcmp(first, twice, sizeof(float) * (size_t)nv) != 0);
    llm170_seq_reset(c, 1);
    CHECK(llm170_seq_restore_state(c, 1, ck, sz) != 0); /* seq 1 holds 0 tokens < 5 */
    CHECK(llm170_seq_restore_state(c, 0, ck, sz - 4) != 0);
    ((uint32_t *)ck)[0] ^= 1;
    CHECK(llm170_seq_restore_state(c, 0, ck, sz) != 0);
    CHECK(llm170_seq_save_state(c, 0, ck, 8) != 0);
    free(first), free(again), free(twice), free(ck);
    llm170_context_free(c);
    llm170_model_free(m);
}

static void check_attention_only(void) {
    llm170_model *m;
    llm170_context *c;
    llm170_model_params mp = llm170_model_default_params();
    CHECKF(llm170_model_load("tests/models/fixtures/llama-f16.gguf", &mp, &m) == 0, "%s", llm170_last_error());
    llm170_context_params cp = {.n_seq = 1, .n_ctx = 64, .n_batch = 64};
    CHECK(llm170_context_new(m, &cp, &c) == 0);
    int nv = llm170_model_n_vocab(m);
    CHECK(llm170_seq_state_size(c) == 16); /* the header only: nothing recurrent */
    free(decode_last(c, 0, A, 5, nv));
    float *first = decode_last(c, 0, B, 3, nv);
    CHECK(llm170_seq_truncate(c, 0, 9) != 0);
    CHECK(llm170_seq_truncate(c, 0, 5) == 0 && llm170_seq_len(c, 0) == 5);
    float *again = decode_last(c, 0, B, 3, nv);
    CHECKF(first && again && memcmp(first, again, sizeof(float) * (size_t)nv) == 0,
           "logits after truncating to the prefix differ from the first pass");
    CHECK(llm170_seq_truncate(c, 0, 0) == 0 && llm170_seq_len(c, 0) == 0);
    free(first), free(again);
    llm170_context_free(c);
    llm170_model_free(m);
}

int main(void) {
    check_hybrid();
    check_attention_only();
    return check_report("test_seq_state");
}
