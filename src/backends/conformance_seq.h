/* conformance_seq: the sequence ops' conformance case (store_rows and attention per cache type, with and without
 * a window; attend_decode over several sequences, its rope pair and the matmul after it; the GDN chain: gdn_gates,
 * conv1d_silu, gdn, gated_norm), included by src/backends/conformance.c after its helpers (randn, upf, down,
 * expect, make_weight, sigm, silu, the executor X). */

static void check_sequence_ops(rng *r) {
    /* store_rows and attention, per cache type: 5 queries at positions 10..14 over 15 keys, GQA 6/2 heads
     * of 32, with and without a window; the reference attends over the cache as stored (dequantized) */
    const int T = 5, S = 15, Hq = 6, Hkv = 2, D = 32;
    const int64_t kw = (int64_t)Hkv * D;
    float *q = randn(r, T * Hq * D, 1), *k = randn(r, S * kw, 1), *v = randn(r, S * kw, 1);
    int32_t qpos[5], kpos[15];
    for (int i = 0; i < T; i++) qpos[i] = 10 + i;
    for (int i = 0; i < S; i++) kpos[i] = i;
    float *dq = upf(q, T * Hq * D), *dk = upf(k, S * kw), *dv = upf(v, S * kw), *dout = upf(NULL, T * Hq * D);
    int32_t *dqp = up(qpos, sizeof qpos), *dkp = up(kpos, sizeof kpos);
    float *ref = malloc(sizeof(float) * T * Hq * D), *sc = malloc(sizeof(float) * S);
    float *kd = malloc(sizeof(float) * (size_t)(S * kw)), *vd = malloc(sizeof(float) * (size_t)(S * kw));
    /* store_rows tolerance: half an ulp of f16 / bf16, half a q8_0 step (amax/254) plus its f16 scale */
    const struct { enum qtype t; double tol; } ct[] = {{QT_F32, 0}, {QT_F16, 0x1p-11}, {QT_BF16, 0x1p-8},
                                                        {QT_Q8_0, 1.0 / 254 + 0x1p-11}};
    for (size_t ci = 0; ci < sizeof ct / sizeof ct[0]; ci++) {
        const enum qtype t = ct[ci].t;
        const size_t rb = qtype_row_bytes(t, kw);
        void *ck = up(NULL, rb * S), *cv = up(NULL, rb * S);
        X->ops->store_rows(X, ck, t, dk, S, kw);
        X->ops->store_rows(X, cv, t, dv, S, kw);
        char *hk = malloc(rb * S), *hv = malloc(rb * S);
        X->ops->download(X, hk, ck, rb * S);
        X->ops->download(X, hv, cv, rb * S);
        const quant_ops *qo = quant_ops_get(t, QUANT_ISA_SCALAR);
        for (int i = 0; i < S; i++) {
            qo->to_float(hk + (size_t)i * rb, kd + i * kw, kw);
            qo->to_float(hv + (size_t)i * rb, vd + i * kw, kw);
        }
        char what[64];
        snprintf(what, sizeof what, "15 rows of 64 as %s", qtype_get((uint32_t)t)->name);
        expect("store_rows", what, kd, k, S * kw, ct[ci].tol);
        for (int win = 0; win < 2; win++) {
            X->ops->attention(X, dq, ck, cv, t, t, dout, dqp, dkp, T, S, Hq, Hkv, D, 0.2f, win ? 4 : ATTN_NO_WINDOW);
            float *y = down(dout, T * Hq * D);
            ref_attention(q, kd, vd, ref, qpos, kpos, T, S, Hq, Hkv, D, 0.2f, win ? 4 : ATTN_NO_WINDOW, sc);
            snprintf(what, sizeof what, "5 x 15, GQA 6/2, %s cache%s", qtype_get((uint32_t)t)->name,
                     win ? ", window 4" : "");
            expect("attention", what, y, ref, T * Hq * D, 1e-5);
            free(y);
        }
        free(hk), free(hv);
    }
    free(q), free(k), free(v), free(ref), free(sc), free(kd), free(vd);
    /* attention over an f16 cache of 41 positions, D = 64, GQA 4/2: one query at position 40 (a decode
     * step) and 37 queries at 4..40 (a prompt), with and without a window. Tolerance: 1e-5 for one query;
     * 5e-3 for a prompt: a GPU's flash attention rounds q to f16, which moves a score by at most 2^-11
     * scale sum|q k| (~2.5e-3 at these sizes, ~3e-4 typical) and its probabilities by as much relative,
     * and rounds the probabilities to f16 (2^-11) before P.V */
    {
        const int S2 = 41, Hq2 = 4, Hkv2 = 2, D2 = 64, TP = 37;
        const int64_t kw2 = (int64_t)Hkv2 * D2, qw2 = (int64_t)Hq2 * D2;
        float *q2 = randn(r, TP * qw2, 1), *k2 = randn(r, S2 * kw2, 1), *v2 = randn(r, S2 * kw2, 1);
        int32_t qp[37], kp[41];
        for (int i = 0; i < TP; i++) qp[i] = 4 + i;
        for (int i = 0; i < S2; i++) kp[i] = i;
        const size_t rb = qtype_row_bytes(QT_F16, kw2);
        float *dq2 = upf(q2, TP * qw2), *dk2 = upf(k2, S2 * kw2), *dv2 = upf(v2, S2 * kw2), *do2 = upf(NULL, TP * qw2);
        int32_t *dqp2 = up(qp, sizeof qp), *dkp2 = up(kp, sizeof kp);
        void *ck = up(NULL, rb * S2), *cv = up(NULL, rb * S2);
        X->ops->store_rows(X, ck, QT_F16, dk2, S2, kw2);
        X->ops->store_rows(X, cv, QT_F16, dv2, S2, kw2);
        char *hk = malloc(rb * S2), *hv = malloc(rb * S2);
        X->ops->download(X, hk, ck, rb * S2);
        X->ops->download(X, hv, cv, rb * S2);
        float *kd2 = malloc(sizeof(float) * (size_t)(S2 * kw2)), *vd2 = malloc(sizeof(float) * (size_t)(S2 * kw2));
        float *ref2 = malloc(sizeof(float) * (size_t)(TP * qw2)), *sc2 = malloc(sizeof(float) * S2);
        const quant_ops *qo = quant_ops_get(QT_F16, QUANT_ISA_SCALAR);
        qo->to_float(hk, kd2, S2 * kw2);
        qo->to_float(hv, vd2, S2 * kw2);
        for (int win = 0; win < 2; win++)
            for (int pre = 0; pre < 2; pre++) {
                const int T2 = pre ? TP : 1, q0 = pre ? 0 : TP - 1, wnd = win ? 9 : ATTN_NO_WINDOW;
                X->ops->attention(X, dq2 + q0 * qw2, ck, cv, QT_F16, QT_F16, do2, dqp2 + q0, dkp2, T2, S2, Hq2, Hkv2, D2,
                                  0.125f, wnd);
                float *y = down(do2, T2 * qw2);
                ref_attention(q2 + q0 * qw2, kd2, vd2, ref2, qp + q0, kp, T2, S2, Hq2, Hkv2, D2, 0.125f, wnd, sc2);
                char what[64];
                snprintf(what, sizeof what, "%d x 41, D 64, GQA 4/2, F16 cache%s", T2, win ? ", window 9" : "");
                expect("attention", what, y, ref2, T2 * qw2, pre ? 5e-3 : 1e-5);
                free(y);
            }
        free(q2), free(k2), free(v2), free(hk), free(hv), free(kd2), free(vd2), free(ref2), free(sc2);
    }
    /* attend_decode: 4 sequences of one new token each, at positions 40, 12, 0 and 100 (1 to 4 chunks of a
     * GPU's split-K kernel), rows 2, 0, 3, 1 of the pass, D 64, GQA 4/2, over F16 and F32 caches, with and
     * without a window: the stored rows within the cache type's rounding, the outputs within 1e-5 of
     * ref_attention over each cache as stored, and each sequence's output the same bits when it is called
     * alone as in the batch */
    {
        enum { NS = 4, HQ = 4, HKV = 2, DD = 64, SC = 104 };
        const int32_t pos[NS] = {40, 12, 0, 100}, row[NS] = {2, 0, 3, 1};
        const int64_t kw3 = HKV * DD, qw3 = HQ * DD;
        int32_t kp[SC];
        for (int i = 0; i < SC; i++) kp[i] = i;
        int32_t *dkp3 = up(kp, sizeof kp), *dpos = up(pos, sizeof pos);
        float *q3 = randn(r, NS * qw3, 1), *k3 = randn(r, NS * kw3, 1), *v3 = randn(r, NS * kw3, 1);
        float *old = randn(r, SC * kw3, 1);
        float *dq3 = upf(q3, NS * qw3), *dk3 = upf(k3, NS * kw3), *dv3 = upf(v3, NS * kw3), *dold = upf(old, SC * kw3);
        float *dout3 = upf(NULL, NS * qw3), *sc3 = malloc(sizeof(float) * SC);
        float *kd3 = malloc(sizeof(float) * (size_t)(SC * kw3)), *vd3 = malloc(sizeof(float) * (size_t)(SC * kw3));
        float *ref3 = malloc(sizeof(float) * (size_t)(NS * qw3)), *alone = malloc(sizeof(float) * (size_t)(NS * qw3));
        float *kst = malloc(sizeof(float) * (size_t)(NS * kw3)), *vst = malloc(sizeof(float) * (size_t)(NS * kw3));
        const struct { enum qtype t; double tol; } ct3[] = {{QT_F16, 0x1p-11}, {QT_F32, 0}};
        for (size_t ci = 0; ci < sizeof ct3 / sizeof ct3[0]; ci++) {
            const enum qtype t = ct3[ci].t;
            const size_t rb = qtype_row_bytes(t, kw3);
            const quant_ops *qo = quant_ops_get(t, QUANT_ISA_SCALAR);
            char *hk = malloc(rb * SC), *hv = malloc(rb * SC);
            attn_seq sq[NS];
            for (int i = 0; i < NS; i++) {
                sq[i] = (attn_seq){up(NULL, rb * SC), up(NULL, rb * SC), dpos + i, pos[i], row[i]};
                X->ops->store_rows(X, sq[i].k, t, dold, SC, kw3); /* the earlier rows */
                X->ops->store_rows(X, sq[i].v, t, dold, SC, kw3);
            }
            for (int win = 0; win < 2; win++) {
                const int wnd = win ? 9 : ATTN_NO_WINDOW;
                X->ops->attend_decode(X, sq, NS, dq3, dk3, dv3, dout3, t, t, dkp3, HQ, HKV, DD, 0.125f, wnd);
                float *y = down(dout3, NS * qw3);
                for (int i = 0; i < NS; i++) {
                    X->ops->download(X, hk, sq[i].k, rb * SC);
                    X->ops->download(X, hv, sq[i].v, rb * SC);
                    for (int j = 0; j < SC; j++) {
                        qo->to_float(hk + (size_t)j * rb, kd3 + j * kw3, kw3);
                        qo->to_float(hv + (size_t)j * rb, vd3 + j * kw3, kw3);
                    }
                    memcpy(kst + i * kw3, kd3 + pos[i] * kw3, sizeof(float) * (size_t)kw3);
                    memcpy(vst + i * kw3, vd3 + pos[i] * kw3, sizeof(float) * (size_t)kw3);
                    ref_attention(q3 + row[i] * qw3, kd3, vd3, ref3 + row[i] * qw3, &pos[i], kp, 1, pos[i] + 1, HQ, HKV,
                                  DD, 0.125f, wnd, sc3);
                    X->ops->attend_decode(X, &sq[i], 1, dq3, dk3, dv3, dout3, t, t, dkp3, HQ, HKV, DD, 0.125f, wnd);
                    float *y1 = down(dout3, NS * qw3);
                    memcpy(alone + row[i] * qw3, y1 + row[i] * qw3, sizeof(float) * (size_t)qw3);
                    free(y1);
                }
                /* the new rows by token row, as the seqs name them */
                float *kin = malloc(sizeof(float) * (size_t)(NS * kw3)), *vin = malloc(sizeof(float) * (size_t)(NS * kw3));
                for (int i = 0; i < NS; i++) {
                    memcpy(kin + i * kw3, k3 + row[i] * kw3, sizeof(float) * (size_t)kw3);
                    memcpy(vin + i * kw3, v3 + row[i] * kw3, sizeof(float) * (size_t)kw3);
                }
                char what[80];
                const char *tn = qtype_get((uint32_t)t)->name, *ws = win ? ", window 9" : "";
                snprintf(what, sizeof what, "4 seqs, %s cache%s: the stored keys", tn, ws);
                expect("attend_decode", what, kst, kin, NS * kw3, ct3[ci].tol);
                snprintf(what, sizeof what, "4 seqs, %s cache%s: the stored values", tn, ws);
                expect("attend_decode", what, vst, vin, NS * kw3, ct3[ci].tol);
                snprintf(what, sizeof what, "4 seqs at 40, 12, 0, 100, D 64, GQA 4/2, %s cache%s", tn, ws);
                expect("attend_decode", what, y, ref3, NS * qw3, 1e-5);
                snprintf(what, sizeof what, "each of the 4 seqs alone = in the batch, %s cache%s", tn, ws);
                expect("attend_decode", what, alone, y, NS * qw3, 0);
                free(y), free(kin), free(vin);
            }
            free(hk), free(hv);
        }
        free(q3), free(k3), free(v3), free(old), free(sc3), free(kd3), free(vd3), free(ref3), free(alone), free(kst), free(vst);
    }
    /* a decode step's attention: the rope pair of q and k right before attend_decode over every row of the
     * pass, then a matmul of its output (a GPU folds the ropes, the stores, the split pass, the merge and
     * the matmul's quantize into one launch), against the same ops with a scale of k by 1 between the two
     * ropes (nothing folds there): the outputs the same bits; the output within 1e-5 of the host's rope and
     * ref_attention over the rows as stored, the stored keys within F16 rounding of the host-roped ones */
    {
        enum { NS = 3, HQ = 6, HKV = 2, DD = 64, SC = 64, NO = 16 };
        const int32_t pos[NS] = {5, 33, 63};
        const int64_t kw6 = HKV * DD, qw = HQ * DD;
        const rope_params rp = {ROPE_NEOX, DD, 10000.0f, 1.0f};
        weight w;
        void *wd;
        gguf_tensor gt;
        CHECK(make_weight(r, QT_Q8_0, qw, NO, 1, &w, &wd, &gt));
        int32_t kp[SC];
        for (int i = 0; i < SC; i++) kp[i] = i;
        float *q6 = randn(r, NS * qw, 1), *k6 = randn(r, NS * kw6, 1), *v6 = randn(r, NS * kw6, 1);
        float *old = randn(r, SC * kw6, 1);
        int32_t *dkp6 = up(kp, sizeof kp), *dpos = up(pos, sizeof pos);
        float *dold = upf(old, SC * kw6), *dv6 = upf(v6, NS * kw6), *got[2][2] = {{0}}, *kst = NULL;
        const size_t rb = qtype_row_bytes(QT_F16, kw6);
        const quant_ops *qo = quant_ops_get(QT_F16, QUANT_ISA_SCALAR);
        float *kd6 = calloc((size_t)(NS * SC * kw6), sizeof(float));
        float *vd6 = calloc((size_t)(NS * SC * kw6), sizeof(float));
        char *hb = malloc(rb * SC);
        for (int fold = 1; fold >= 0; fold--) {
            float *dq6 = upf(q6, NS * qw), *dk6 = upf(k6, NS * kw6), *dout6 = upf(NULL, NS * qw);
            float *dy = upf(NULL, NS * NO);
            attn_seq sq[NS];
            for (int i = 0; i < NS; i++) { /* allocated before the pass (a GPU may capture it into a graph) */
                sq[i] = (attn_seq){up(NULL, rb * SC), up(NULL, rb * SC), dpos + i, pos[i], i};
                X->ops->store_rows(X, sq[i].k, QT_F16, dold, SC, kw6);
                X->ops->store_rows(X, sq[i].v, QT_F16, dold, SC, kw6);
            }
            pass_span ps[NS] = {{1, 1}, {1, 1}, {1, 1}};
            X->ops->begin_pass(X, ps, NS);
            X->ops->rope(X, dq6, dpos, NS, HQ, DD, &rp, NULL);
            if (!fold) X->ops->scale(X, dk6, 1.0f, NS * kw6);
            X->ops->rope(X, dk6, dpos, NS, HKV, DD, &rp, NULL);
            X->ops->attend_decode(X, sq, NS, dq6, dk6, dv6, dout6, QT_F16, QT_F16, dkp6, HQ, HKV, DD, 0.125f,
                                  ATTN_NO_WINDOW);
            X->ops->matmul(X, &w, 0, dout6, dy, NS, MM_ROWS_PASS);
            got[fold][0] = down(dout6, NS * qw), got[fold][1] = down(dy, NS * NO);
            if (fold) { /* the caches as stored, for the reference */
                kst = malloc(sizeof(float) * (size_t)(NS * kw6));
                for (int i = 0; i < NS; i++)
                    for (int c = 0; c < 2; c++) {
                        X->ops->download(X, hb, c ? sq[i].v : sq[i].k, rb * SC);
                        float *dst = (c ? vd6 : kd6) + (size_t)i * SC * kw6;
                        for (int j = 0; j < SC; j++) qo->to_float(hb + (size_t)j * rb, dst + j * kw6, kw6);
                        if (!c) memcpy(kst + i * kw6, dst + pos[i] * kw6, sizeof(float) * (size_t)kw6);
                    }
            }
        }
        float *qr = malloc(sizeof(float) * (size_t)(NS * qw)), *kr = malloc(sizeof(float) * (size_t)(NS * kw6));
        float *ref6 = malloc(sizeof(float) * (size_t)(NS * qw)), *sc6 = malloc(sizeof(float) * SC);
        memcpy(qr, q6, sizeof(float) * (size_t)(NS * qw)), memcpy(kr, k6, sizeof(float) * (size_t)(NS * kw6));
        ref_rope(qr, pos, NS, HQ, DD, &rp, NULL);
        ref_rope(kr, pos, NS, HKV, DD, &rp, NULL);
        for (int i = 0; i < NS; i++)
            ref_attention(qr + i * qw, kd6 + (size_t)i * SC * kw6, vd6 + (size_t)i * SC * kw6, ref6 + i * qw, &pos[i],
                          kp, 1, pos[i] + 1, HQ, HKV, DD, 0.125f, ATTN_NO_WINDOW, sc6);
        expect("attend_decode", "rope pair then 3 seqs then a matmul: the stored keys", kst, kr, NS * kw6, 0x1p-11);
        expect("attend_decode", "rope pair then 3 seqs at 5, 33, 63, D 64, GQA 6/2", got[1][0], ref6, NS * qw, 1e-5);
        expect("attend_decode", "rope pair then 3 seqs: = the ropes apart, bit for bit", got[1][0], got[0][0], NS * qw,
               0);
        expect("matmul", "of attend_decode's output after a rope pair: = the ropes apart", got[1][1], got[0][1],
               NS * NO, 0);
        float *wf = malloc(sizeof(float) * (size_t)(qw * NO));
        const int32_t idx[NS] = {0, 1, 2};
        dequant(&w, wd, NO, wf);
        expect_matmul("matmul", "q8_0, of attend_decode's output after a rope pair", QT_Q8_0, got[1][1], wf, got[1][0],
                      idx, NS, NO, qw, NULL);
        free(wf);
        free(wd), free(q6), free(k6), free(v6), free(old), free(kd6), free(vd6), free(hb), free(kst), free(qr),
            free(kr);
        free(ref6), free(sc6);
        for (int f = 0; f < 2; f++) free(got[f][0]), free(got[f][1]);
    }
    /* conv1d_silu: 6, 50 (a GPU's chunks of 16 tokens) and 2 tokens (fewer than the state's 3 rows: the new
     * state keeps old rows), 37 channels, kernel 4, with a state */
    for (int ci = 0; ci < 3; ci++) {
        const int Tc = ci == 0 ? 6 : ci == 1 ? 50 : 2, Ch = 37, Kc = 4;
        weight w;
        void *wd;
        gguf_tensor gt;
        CHECK(make_weight(r, QT_F32, Kc, Ch, 1, &w, &wd, &gt));
        float *x = randn(r, Tc * Ch, 1), *st = randn(r, (Kc - 1) * Ch, 1);
        float *dx = upf(x, Tc * Ch), *dst = upf(st, (Kc - 1) * Ch), *dy = upf(NULL, Tc * Ch);
        X->ops->conv1d_silu(X, dx, dst, &w, dy, Tc, Ch, Kc);
        float *y = down(dy, Tc * Ch), *s2 = down(dst, (Kc - 1) * Ch), *yr = malloc(sizeof(float) * Tc * Ch);
        ref_conv1d_silu(x, st, wd, yr, Tc, Ch, Kc);
        char what[64];
        snprintf(what, sizeof what, "%d x 37, K 4: output", Tc);
        expect("conv1d_silu", what, y, yr, Tc * Ch, 1e-5);
        snprintf(what, sizeof what, "%d x 37, K 4: state", Tc);
        expect("conv1d_silu", what, s2, st, (Kc - 1) * Ch, 1e-5);
        free(x), free(st), free(y), free(s2), free(yr), free(wd);
    }
    /* gdn_gates */
    {
        const int Tg = 5, Hv = 6;
        weight wa, wdt;
        void *da, *ddt;
        gguf_tensor ga, gdt;
        CHECK(make_weight(r, QT_F32, Hv, 1, 1, &wa, &da, &ga) && make_weight(r, QT_F32, Hv, 1, 1, &wdt, &ddt, &gdt));
        float *al = randn(r, Tg * Hv, 3), *be = randn(r, Tg * Hv, 3);
        al[0] = 30; /* softplus's linear branch */
        float *dal = upf(al, Tg * Hv), *dbe = upf(be, Tg * Hv);
        X->ops->gdn_gates(X, dal, dbe, &wa, &wdt, Tg, Hv);
        float *g = down(dal, Tg * Hv), *b = down(dbe, Tg * Hv);
        float *gr = malloc(sizeof(float) * Tg * Hv), *br = malloc(sizeof(float) * Tg * Hv);
        for (int t = 0; t < Tg; t++)
            for (int j = 0; j < Hv; j++) {
                double a = (double)al[t * Hv + j] + ((float *)ddt)[j];
                gr[t * Hv + j] = (float)(((float *)da)[j] * (a > 20 ? a : log1p(exp(a))));
                br[t * Hv + j] = (float)sigm(be[t * Hv + j]);
            }
        expect("gdn_gates", "5 x 6: g", g, gr, Tg * Hv, 1e-5);
        expect("gdn_gates", "5 x 6: beta", b, br, Tg * Hv, 1e-5);
        free(al), free(be), free(g), free(b), free(gr), free(br), free(da), free(ddt);
    }
    /* gdn: step (T = 1) and chunked (T = 70: a full chunk and a partial one), tiled heads; then the chunked
     * form at Dk = Dv = 128 (a GPU's tensor-friendly shape: 1e-4 of the largest value, the bound its kernel
     * keeps against the step form, docs/cuda-prefill.md) */
    for (int k2 = 0; k2 < 3; k2++) {
        const int Tg = k2 ? 70 : 1, Hk = k2 == 2 ? 1 : 2, Hv = k2 == 2 ? 2 : 4, Dk = k2 == 2 ? 128 : 16,
                  Dv = k2 == 2 ? 128 : 12;
        const double tol = k2 == 2 ? 1e-4 : 1e-5;
        const int64_t nqk = (int64_t)Tg * Hk * Dk, nv = (int64_t)Tg * Hv * Dv, nS = (int64_t)Hv * Dk * Dv;
        float *q2 = randn(r, nqk, 1), *k3 = randn(r, nqk, 1), *v2 = randn(r, nv, 1), *g = randn(r, Tg * Hv, 1);
        float *beta = randn(r, Tg * Hv, 1), *S0 = randn(r, nS, 0.2f);
        for (int i = 0; i < Tg * Hv; i++) g[i] = -log1pf(expf(g[i])), beta[i] = 1 / (1 + expf(-beta[i]));
        ref_l2_norm(q2, Tg, Hk, Dk, 1e-6f, 1 / sqrtf((float)Dk));
        ref_l2_norm(k3, Tg, Hk, Dk, 1e-6f, 1);
        float *dS = upf(S0, nS), *dq2 = upf(q2, nqk), *dk3 = upf(k3, nqk), *dv2 = upf(v2, nv);
        float *dg = upf(g, Tg * Hv), *dbeta = upf(beta, Tg * Hv), *dout2 = upf(NULL, nv);
        X->ops->gdn(X, dS, dq2, dk3, dv2, dg, dbeta, dout2, Tg, Hk, Hv, Dk, Dv, GDN_HEADS_TILED);
        float *o = down(dout2, nv), *S2 = down(dS, nS), *or = malloc(sizeof(float) * (size_t)nv);
        if (Tg == 1) {
            ref_gdn_step(S0, q2, k3, v2, g, beta, or, Hk, Hv, Dk, Dv, GDN_HEADS_TILED);
        } else {
            float *scr = malloc(sizeof(float) * (size_t)ref_gdn_chunk_scratch(64, Dk, Dv));
            ref_gdn_chunk(S0, q2, k3, v2, g, beta, or, Tg, Hk, Hv, Dk, Dv, 64, GDN_HEADS_TILED, scr);
            free(scr);
        }
        const char *form = k2 == 2 ? "70 tokens, D 128 (chunked)" : k2 ? "70 tokens (chunked)" : "1 token (step)";
        char what[64];
        snprintf(what, sizeof what, "%s: output", form);
        expect("gdn", what, o, or, nv, tol);
        snprintf(what, sizeof what, "%s: state", form);
        expect("gdn", what, S2, S0, nS, tol);
        free(q2), free(k3), free(v2), free(g), free(beta), free(S0), free(o), free(S2), free(or);
    }
    /* gated_norm */
    {
        const int Tg = 3, Hv = 4, Dv = 13;
        const int64_t n = (int64_t)Tg * Hv * Dv;
        weight w;
        void *wd;
        gguf_tensor gt;
        CHECK(make_weight(r, QT_F32, Dv, 1, 1, &w, &wd, &gt));
        float *o = randn(r, n, 1), *z = randn(r, n, 1), *ref2 = malloc(sizeof(float) * (size_t)n);
        float *dO = upf(o, n), *dz = upf(z, n);
        X->ops->gated_norm(X, dO, dz, &w, Tg, Hv, Dv, 1e-6f);
        float *y = down(dO, n);
        ref_rms_norm(o, wd, ref2, Tg * Hv, Dv, 1e-6f);
        for (int64_t i = 0; i < n; i++) ref2[i] = (float)(ref2[i] * silu(z[i]));
        expect("gated_norm", "3 x 4 heads of 13", y, ref2, n, 1e-5);
        free(o), free(z), free(ref2), free(y), free(wd);
    }
}
