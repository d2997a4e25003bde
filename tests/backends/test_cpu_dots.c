/* cpu_blas.h dots (attention scores of one query against a block of keys, cpu_attention's decode path):
 * each key's score must be the same bits however many keys the call holds. A speculative span's block
 * holds the span's own keys too (masked for its first rows), so otherwise a key falls in a group of four in
 * the span and among the leftovers in a one-token pass, and the span's logits stop being the bits of
 * decoding its tokens one at a time (issue 16; scripts/diag/span_vs_steps.c). */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_blas.h"
#include "base/rng.h"
#include "check.h"

int main(void) {
    rng r;
    rng_seed(&r, 11);
    const int D_list[] = {64, 80, 128, 256}, M_max = 40;
    for (size_t di = 0; di < sizeof D_list / sizeof D_list[0]; di++) {
        const int D = D_list[di];
        float *q = malloc(sizeof(float) * (size_t)D), *K = malloc(sizeof(float) * (size_t)D * M_max);
        float *ref = malloc(sizeof(float) * M_max), *got = malloc(sizeof(float) * M_max);
        for (int i = 0; i < D; i++) q[i] = (float)rng_normal(&r);
        for (int i = 0; i < D * M_max; i++) K[i] = (float)rng_normal(&r);
        dots(M_max, D, 0.125f, q, K, D, ref); /* every key in a group of four */
        int bad = 0;
        for (int M = 1; M < M_max; M++) { /* the last M % 4 keys are leftovers */
            dots(M, D, 0.125f, q, K, D, got);
            for (int j = 0; j < M; j++) bad += memcmp(&got[j], &ref[j], sizeof(float)) != 0;
        }
        CHECKF(bad == 0, "D = %d: %d scores depend on the number of keys in the call", D, bad);
        free(q), free(K), free(ref), free(got);
    }
    return check_report("test_cpu_dots");
}
