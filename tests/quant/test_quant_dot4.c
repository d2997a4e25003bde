/* vec_dot4 / vec_dot8 / vec_dot8p / vec_dotn (one weight row against four / eight / any 1..QUANT_DOTN_MAX
 * activation rows, used by prefill, batched decode and speculative verification; vec_dot8p's rows packed
 * by pack8) must give, for each row, the
 * exact bits of vec_dot of the same ISA: otherwise a token's logits would depend on how many tokens share
 * its batch. Checked for every type and available ISA that has one, on fresh random blocks, with the
 * activation rows at a stride larger than a row (as the engine lays them out). */
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "check.h"
#include "quant/quant.h"

int main(void) {
    rng r;
    rng_seed(&r, 99);
    int checked = 0, checked8 = 0;
    for (int isa = 0; isa < QUANT_ISA_COUNT; isa++) {
        for (int t = 0; t < QT_COUNT; t++) {
            const quant_ops *o = quant_ops_get((enum qtype)t, (enum quant_isa)isa);
            if (!o || !o->vec_dot4) continue;
            const quant_ops *a = quant_ops_get(o->vec_dot_type, QUANT_ISA_SCALAR);
            const qtype_info *in = qtype_get((uint32_t)t);
            for (int nb = 1; nb <= 9; nb += 4) {
                int64_t n = nb * in->blck;
                size_t wb = qtype_row_bytes((enum qtype)t, n), ab = qtype_row_bytes(o->vec_dot_type, n);
                size_t stride = ab + 64;
                void *w = malloc(wb);
                char *act = malloc(stride * 4);
                float *f = malloc(sizeof(float) * (size_t)n);
                CHECK(quant_random_blocks((enum qtype)t, w, nb, 0.05f, &r));
                for (int j = 0; j < 4; j++) {
                    for (int64_t i = 0; i < n; i++) f[i] = rng_normal(&r);
                    a->from_float(f, act + j * stride, n);
                }
                float s4[4], s1;
                o->vec_dot4(n, s4, w, act, stride);
                for (int j = 0; j < 4; j++) {
                    o->vec_dot(n, &s1, w, act + j * stride);
                    CHECKF(memcmp(&s1, &s4[j], sizeof s1) == 0, "%s %s n=%lld row %d: %a vs %a", in->name,
                           quant_isa_name((enum quant_isa)isa), (long long)n, j, s4[j], s1);
                }
                if (o->vec_dot8) { /* eight rows: the four above and four more at the same stride */
                    char *act8 = malloc(stride * 8);
                    memcpy(act8, act, stride * 4);
                    for (int j = 4; j < 8; j++) {
                        for (int64_t i = 0; i < n; i++) f[i] = rng_normal(&r);
                        a->from_float(f, act8 + j * stride, n);
                    }
                    float s8[8];
                    o->vec_dot8(n, s8, w, act8, stride);
                    for (int j = 0; j < 8; j++) {
                        o->vec_dot(n, &s1, w, act8 + j * stride);
                        CHECKF(memcmp(&s1, &s8[j], sizeof s1) == 0, "%s %s vec_dot8 n=%lld row %d: %a vs %a",
                               in->name, quant_isa_name((enum quant_isa)isa), (long long)n, j, s8[j], s1);
                    }
                    free(act8);
                    checked8++;
                }
                checked++;
                free(w);
                free(act);
                free(f);
            }
        }
    }
    /* vec_dot8p: eight rows packed by the activation type's pack8 (at a stride larger than a row) */
    int checked8p = 0;
    for (int isa = 0; isa < QUANT_ISA_COUNT; isa++)
        for (int t = 0; t < QT_COUNT; t++) {
            const quant_ops *o = quant_ops_get((enum qtype)t, (enum quant_isa)isa);
            if (!o || !o->vec_dot8p) continue;
            const quant_ops *a = quant_ops_get(o->vec_dot_type, (enum quant_isa)isa);
            const quant_ops *as = quant_ops_get(o->vec_dot_type, QUANT_ISA_SCALAR);
            CHECKF(a && a->pack8, "%s: vec_dot8p without its activation type's pack8", qtype_get((uint32_t)t)->name);
            if (!a || !a->pack8) continue;
            const qtype_info *in = qtype_get((uint32_t)t);
            for (int nb = 1; nb <= 41; nb += 20) {
                int64_t n = nb * in->blck;
                size_t wb = qtype_row_bytes((enum qtype)t, n), ab = qtype_row_bytes(o->vec_dot_type, n), stride = ab + 40;
                void *w = malloc(wb), *pk = malloc(quant_pack8_bytes(n));
                char *act = malloc(stride * 8);
                float *f = malloc(sizeof(float) * (size_t)n);
                CHECK(quant_random_blocks((enum qtype)t, w, nb, 0.05f, &r));
                for (int j = 0; j < 8; j++) {
                    for (int64_t i = 0; i < n; i++) f[i] = rng_normal(&r);
                    f[j] = j == 3 ? 1e6f : f[j]; /* a block whose quants reach -127 / 127 */
                    as->from_float(f, act + j * stride, n);
                }
                a->pack8(n, act, stride, pk);
                float s8[8], s1;
                o->vec_dot8p(n, s8, w, pk);
                for (int j = 0; j < 8; j++) {
                    o->vec_dot(n, &s1, w, act + j * stride);
                    CHECKF(memcmp(&s1, &s8[j], sizeof s1) == 0, "%s %s vec_dot8p n=%lld row %d: %a vs %a", in->name,
                           quant_isa_name((enum quant_isa)isa), (long long)n, j, s8[j], s1);
                }
                checked8p++;
                free(w), free(pk), free(act), free(f);
            }
        }
    /* vec_dotn: every span length 1..QUANT_DOTN_MAX, rows of random activations (never zeros) at a stride
     * larger than a row; lengths of one block, a few, and an odd number of Q5_0/Q8_0 step groups */
    int checkedn = 0;
    for (int isa = 0; isa < QUANT_ISA_COUNT; isa++)
        for (int t = 0; t < QT_COUNT; t++) {
            const quant_ops *o = quant_ops_get((enum qtype)t, (enum quant_isa)isa);
            if (!o || !o->vec_dotn) continue;
            const quant_ops *a = quant_ops_get(o->vec_dot_type, QUANT_ISA_SCALAR);
            const qtype_info *in = qtype_get((uint32_t)t);
            static const int nbs[] = {1, 3, 6, 19};
            for (size_t ib = 0; ib < sizeof nbs / sizeof nbs[0]; ib++) {
                const int nb = nbs[ib];
                const int64_t n = nb * in->blck;
                size_t wb = qtype_row_bytes((enum qtype)t, n), ab = qtype_row_bytes(o->vec_dot_type, n);
                size_t stride = ab + 24;
                void *w = malloc(wb);
                char *act = malloc(stride * QUANT_DOTN_MAX);
                float *f = malloc(sizeof(float) * (size_t)n);
                CHECK(quant_random_blocks((enum qtype)t, w, nb, 0.05f, &r));
                for (int j = 0; j < QUANT_DOTN_MAX; j++) {
                    for (int64_t i = 0; i < n; i++) f[i] = rng_normal(&r) + (j % 3 == 1 ? 0.5f : 0.0f);
                    a->from_float(f, act + j * stride, n);
                }
                for (int nr = 1; nr <= QUANT_DOTN_MAX; nr++) {
                    float sn[QUANT_DOTN_MAX + 1], s1;
                    sn[nr] = 12345.0f; /* a sentinel: the kernel writes nrows results, no more */
                    o->vec_dotn(n, sn, w, act, stride, nr);
                    CHECKF(sn[nr] == 12345.0f, "%s %s vec_dotn nrows=%d wrote past its rows", in->name,
                           quant_isa_name((enum quant_isa)isa), nr);
                    for (int j = 0; j < nr; j++) {
                        o->vec_dot(n, &s1, w, act + j * stride);
                        CHECKF(memcmp(&s1, &sn[j], sizeof s1) == 0, "%s %s vec_dotn n=%lld nrows=%d row %d: %a vs %a",
                               in->name, quant_isa_name((enum quant_isa)isa), (long long)n, nr, j, sn[j], s1);
                    }
                    checkedn++;
                }
                free(w), free(act), free(f);
            }
        }
    printf("vec_dot4 vs vec_dot: %d (type, isa, length) cases; vec_dot8: %d; vec_dot8p: %d; vec_dotn: %d\n", checked,
           checked8, checked8p, checkedn);
    CHECK(checkedn > 0 || !quant_isa_available(QUANT_ISA_AVX2));
    CHECK(checked > 0 || !quant_isa_available(QUANT_ISA_AVX2));
    return check_report("test_quant_dot4");
}
