/* ref_ngram_rows (qwen4exp's PLE hash) against the test vectors of /work/shared/specs/qwen4exp.md §2.7.2,
 * which were computed from transformers' Qwen4ExpTextNGramEmbedding for the published config (vocab 248320,
 * seed 1234, 3-grams, 8 heads per order, eos 248044) and agree with a third party's: the published hash
 * constants (§2.7.1), a sequence start with an EOS inside it, and a history [123, 456] (all 16 rows).
 * The engine's executors are checked against ref_ngram_rows by test_backend_conformance. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "engine/ops_ref.h"

static ngram_hash published(void) {
    static const uint64_t primes[16] = {20000003, 20000023, 20000033, 20000047, 20000059, 20000063,
                                        20000069, 20000077, 20000081, 20000093, 20000107, 20000147,
                                        20000153, 20000159, 20000161, 20000171};
    ngram_hash h = {.n = 3, .heads_per = 8, .eos = 248044,
                    .mult = {23703573157769ull, 20109073645365ull, 8052911324071ull}};
    uint64_t off = 0;
    for (int g = 0; g < 16; g++) h.size[g] = primes[g], h.offset[g] = off, off += primes[g];
    return h;
}

int main(void) {
    const ngram_hash h = published();
    CHECK(h.offset[15] == 300001275ull); /* the spec's prefix sums */
    /* a fresh sequence: 9707, 11, 1879, <eos>, 314 (heads 0, 7, 8, 15 listed) */
    const int32_t ids[5] = {9707, 11, 1879, 248044, 314};
    const int32_t want[5][4] = {{16410909, 152932897, 169641436, 300984276},
                                {18158303, 159566246, 175132467, 307699687},
                                {6380558, 148942556, 164226950, 312121804},
                                {18827606, 142052741, 163793416, 318943450},
                                {8260854, 143955837, 178749106, 310651623}};
    float hist[2] = {0, 0};
    int32_t rows[5 * 16];
    ref_ngram_rows(ids, hist, rows, 5, &h);
    const int heads[4] = {0, 7, 8, 15};
    for (int t = 0; t < 5; t++)
        for (int i = 0; i < 4; i++)
            CHECKF(rows[t * 16 + heads[i]] == want[t][i], "token %d head %d: row %d, expected %d", t, heads[i],
                   rows[t * 16 + heads[i]], want[t][i]);
    CHECK(hist[0] == 248044.0f + 1 && hist[1] == 314.0f + 1); /* the history holds id + 1 */
    /* the same tokens one at a time through the history state give the same rows */
    float h2[2] = {0, 0};
    for (int t = 0; t < 5; t++) {
        int32_t r1[16];
        ref_ngram_rows(ids + t, h2, r1, 1, &h);
        CHECKF(!memcmp(r1, rows + t * 16, sizeof r1), "token %d: one at a time differs from the run", t);
    }
    /* history [123, 456], token 789: all 16 rows */
    const int32_t want789[16] = {2491316,   28761835,  51917996,  68359989,  88189145,  101470006,
                                 131395511, 157970613, 166816437, 197523925, 206707499, 235951520,
                                 251357128, 266767674, 285239060, 317603747};
    float h3[2] = {124, 457};
    const int32_t tok = 789;
    int32_t r3[16];
    ref_ngram_rows(&tok, h3, r3, 1, &h);
    for (int g = 0; g < 16; g++) CHECKF(r3[g] == want789[g], "789 head %d: row %d, expected %d", g, r3[g], want789[g]);
    return check_report("test_ngram_hash");
}
