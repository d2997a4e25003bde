/* conformance_hc: the conformance cases of the qwen4exp ops (hyper-connections, PLE, QSA), included by
 * src/backends/conformance.c after its helpers (randn, upf, down, expect, make_weight, the executor X).
 * Tolerances as in its header: float kernels 1e-5 of the output's largest magnitude; the n-gram rows and
 * the QSA selections (integers) exact. */

#define QWEN4EXP_OPS 10 /* the exec_ops entries these cases cover; optional on a device */

static weight f32_weight(rng *r, int64_t n, void **data) {
    weight w;
    gguf_tensor gt;
    if (!make_weight(r, QT_F32, n, 1, 1, &w, data, &gt)) abort();
    return w;
}

static void check_hc_ops(rng *r) {
    const int T = 5, S = 3, D = 19, W = S * D;
    float *xs = randn(r, T * W, 1), *g = randn(r, T * W, 1), *y = randn(r, T * D, 1), *inj = randn(r, T * S, 1);
    float *ref = malloc(sizeof(float) * T * W);
    void *wd;
    weight wn = f32_weight(r, W, &wd);
    /* rms_norm_groups: each stream normed alone, its own weight slice */
    float *d = upf(NULL, T * W);
    X->ops->rms_norm_groups(X, upf(xs, T * W), &wn, d, T, S, D, 1e-6f);
    float *got = down(d, T * W);
    ref_rms_norm_groups(xs, wd, ref, T, S, D, 1e-6f);
    expect("rms_norm_groups", "5 x 3 groups of 19", got, ref, T * W, 1e-5);
    free(got);
    /* silu_scaled */
    d = upf(g, T * W);
    X->ops->silu_scaled(X, d, d, 0.37f, T * W);
    got = down(d, T * W);
    ref_silu_scaled(g, ref, 0.37f, T * W);
    expect("silu_scaled", "285 values, s 0.37", got, ref, T * W, 1e-5);
    free(got);
    /* hc_mix: a mean over streams of sigmoid-gated rows */
    d = upf(NULL, T * D);
    X->ops->hc_mix(X, upf(xs, T * W), upf(g, T * W), d, T, S, D);
    got = down(d, T * D);
    ref_hc_mix(xs, g, ref, T, S, D);
    expect("hc_mix", "5 x 3 streams of 19", got, ref, T * D, 1e-5);
    free(got);
    /* hc_add */
    d = upf(xs, T * W);
    X->ops->hc_add(X, d, upf(y, T * D), upf(inj, T * S), T, S, D);
    got = down(d, T * W);
    memcpy(ref, xs, sizeof(float) * T * W);
    ref_hc_add(ref, y, inj, T, S, D);
    expect("hc_add", "5 x 3 streams of 19", got, ref, T * W, 1e-5);
    free(got);
    /* ple_gate; one stream's key zero makes z = 0 exactly (sign 0: gate 1/2) */
    float *key = randn(r, T * W, 1);
    memset(key + W + D, 0, sizeof(float) * D);
    d = upf(NULL, T * W);
    X->ops->ple_gate(X, upf(key, T * W), upf(xs, T * W), upf(y, T * D), d, T, S, D);
    got = down(d, T * W);
    ref_ple_gate(key, xs, y, ref, T, S, D);
    expect("ple_gate", "5 x 3 streams of 19, a zero score", got, ref, T * W, 1e-5);
    free(got), free(key), free(wd);
    /* conv1d_dilated_silu: kernel 4, dilation 3 (a 9-row history), runs longer and shorter than it */
    for (int Tc = 2; Tc <= 11; Tc += 9) {
        const int Ch = 13, K = 4, dil = 3, Hs = (K - 1) * dil;
        void *cd;
        weight cw;
        gguf_tensor gt;
        CHECK(make_weight(r, QT_F32, K, Ch, 1, &cw, &cd, &gt));
        float *x = randn(r, Tc * Ch, 1), *st = randn(r, Hs * Ch, 1);
        float *dst = upf(st, Hs * Ch), *dy = upf(NULL, Tc * Ch);
        X->ops->conv1d_dilated_silu(X, upf(x, Tc * Ch), dst, &cw, dy, Tc, Ch, K, dil);
        float *yc = down(dy, Tc * Ch), *s2 = down(dst, Hs * Ch), *yr = malloc(sizeof(float) * Tc * Ch);
        ref_conv1d_dilated_silu(x, st, cd, yr, Tc, Ch, K, dil);
        char what[64];
        snprintf(what, sizeof what, "%d x 13, K 4, dilation 3: output", Tc);
        expect("conv1d_dilated_silu", what, yc, yr, Tc * Ch, 1e-5);
        snprintf(what, sizeof what, "%d x 13, K 4, dilation 3: state", Tc);
        expect("conv1d_dilated_silu", what, s2, st, Hs * Ch, 1e-5);
        free(x), free(st), free(yc), free(s2), free(yr), free(cd);
    }
    free(xs), free(g), free(y), free(inj), free(ref);
}

static void check_ngram_qsa_ops(rng *r) {
    /* ngram_rows: 3-grams, 2 heads per order, eos 7 inside the run, a history with one token */
    {
        const ngram_hash h = {.n = 3, .heads_per = 2, .eos = 7, .mult = {23703573157769ull, 20109073645365ull,
                                                                          8052911324071ull},
                              .size = {1009, 1013, 1019, 1021}, .offset = {0, 1009, 2022, 3041}};
        const int T = 9;
        int32_t ids[9] = {5, 300, 7, 7, 12, 248319, 0, 7, 44};
        float hist[2] = {0, 101}, hist_ref[2] = {0, 101};
        int32_t *drows = up(NULL, sizeof(int32_t) * T * 4);
        float *dh = upf(hist, 2);
        X->ops->ngram_rows(X, up(ids, sizeof ids), dh, drows, T, &h);
        int32_t rows[36], rr[36];
        X->ops->download(X, rows, drows, sizeof rows);
        float *h2 = down(dh, 2);
        ref_ngram_rows(ids, hist_ref, rr, T, &h);
        float fr[36], fg[36];
        for (int i = 0; i < 36; i++) fr[i] = (float)rr[i], fg[i] = (float)rows[i];
        expect("ngram_rows", "9 tokens, 4 heads, eos runs: rows", fg, fr, 36, 0);
        expect("ngram_rows", "9 tokens: history", h2, hist_ref, 2, 0);
        free(h2);
    }
    /* qsa_block_keys: blocks 1..4 of 4 raw keys of 16 dims, rope on the first 8 */
    const int c = 4, Di = 16, nb = 16, Hi = 3;
    const rope_params rp = {ROPE_NEOX, 8, 1e4f, 1.0f};
    void *nd;
    weight wn = f32_weight(r, Di, &nd);
    float *raw = randn(r, nb * c * Di, 1), *blk = randn(r, nb * Di, 1), *bref = malloc(sizeof(float) * nb * Di);
    memcpy(bref, blk, sizeof(float) * nb * Di);
    float *db = upf(blk, nb * Di);
    X->ops->qsa_block_keys(X, upf(raw, nb * c * Di), db, 1, 5, c, Di, &wn, 1e-6f, &rp);
    float *got = down(db, nb * Di);
    ref_qsa_block_keys(raw, bref, 1, 5, c, Di, nd, 1e-6f, &rp);
    expect("qsa_block_keys", "blocks 1..4 of 4 x 16, rope 8", got, bref, nb * Di, 1e-5);
    free(got);
    /* qsa_select: 6 queries from dense (8 visible tokens) to 16 blocks; blocks 3 and 9 share a key (ties) */
    ref_qsa_block_keys(raw, bref, 0, nb, c, Di, nd, 1e-6f, &rp);
    memcpy(bref + 9 * Di, bref + 3 * Di, sizeof(float) * Di);
    const int T = 6, n_sel = 3;
    int32_t qpos[6] = {7, 12, 15, 30, 47, 63}, sel[18], sref[18];
    float *q = randn(r, T * Hi * Di, 1), *sc = malloc(sizeof(float) * nb);
    int32_t *dsel = up(NULL, sizeof sel), *dqpos = up(qpos, sizeof qpos);
    X->ops->qsa_select(X, upf(q, T * Hi * Di), upf(bref, nb * Di), dqpos, dsel, T, Hi, Di, c, n_sel);
    X->ops->download(X, sel, dsel, sizeof sel);
    ref_qsa_select(q, bref, qpos, sref, T, Hi, Di, c, n_sel, sc);
    float fs[18], fr[18];
    for (int i = 0; i < 18; i++) fs[i] = (float)sel[i], fr[i] = (float)sref[i];
    expect("qsa_select", "6 queries, 3 of up to 16 blocks, a tie", fs, fr, 18, 0);
    /* fewer queries than threads (a decode step: the blocks are split over the threads, the ranges' bests
     * merged), 5 indexer heads (four scored side by side, one alone): random keys, then every block the same
     * key, where the lowest indices must win across ranges */
    const int Hi5 = 5;
    float *q5 = randn(r, 2 * Hi5 * Di, 1);
    for (int same = 0; same < 2; same++) {
        float *bk = malloc(sizeof(float) * nb * Di);
        memcpy(bk, bref, sizeof(float) * nb * Di);
        for (int b = 0; same && b < nb; b++) memcpy(bk + b * Di, bref + 5 * Di, sizeof(float) * Di);
        int32_t qp2[2] = {63, 50}, s2[6], r2[6];
        int32_t *ds2 = up(NULL, sizeof s2);
        X->ops->qsa_select(X, upf(q5, 2 * Hi5 * Di), upf(bk, nb * Di), up(qp2, sizeof qp2), ds2, 2, Hi5, Di, c, n_sel);
        X->ops->download(X, s2, ds2, sizeof s2);
        ref_qsa_select(q5, bk, qp2, r2, 2, Hi5, Di, c, n_sel, sc);
        float g2[6], f2[6];
        for (int i = 0; i < 6; i++) g2[i] = (float)s2[i], f2[i] = (float)r2[i];
        expect("qsa_select", same ? "2 queries (split), 5 heads, 16 equal blocks: lowest ids"
                                  : "2 queries (split), 5 heads, 3 of 16 and 12 blocks",
               g2, f2, 6, 0);
        free(bk);
    }
    free(q5);
    /* attention_sparse over those selections, GQA 6/2, f32 and f16 caches */
    const int Hq = 6, Hkv = 2, D = 16, Sk = 64;
    float *qa = randn(r, T * Hq * D, 1), *k = randn(r, Sk * Hkv * D, 1), *v = randn(r, Sk * Hkv * D, 1);
    float *ref = malloc(sizeof(float) * T * Hq * D), *ssc = malloc(sizeof(float) * (n_sel * c + c));
    const enum qtype types[] = {QT_F32, QT_F16};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const enum qtype t = types[ti];
        const size_t rb = qtype_row_bytes(t, Hkv * D);
        void *kc = up(NULL, rb * Sk), *vc = up(NULL, rb * Sk);
        X->ops->store_rows(X, kc, t, upf(k, Sk * Hkv * D), Sk, Hkv * D);
        X->ops->store_rows(X, vc, t, upf(v, Sk * Hkv * D), Sk, Hkv * D);
        float *kd = down(kc, (int64_t)(rb * Sk / sizeof(float))), *vd = down(vc, (int64_t)(rb * Sk / sizeof(float)));
        float *kf = malloc(sizeof(float) * Sk * Hkv * D), *vf = malloc(sizeof(float) * Sk * Hkv * D);
        const quant_ops *qo = quant_ops_get(t, QUANT_ISA_SCALAR);
        for (int i = 0; i < Sk; i++) {
            qo->to_float((const char *)kd + i * rb, kf + i * Hkv * D, Hkv * D);
            qo->to_float((const char *)vd + i * rb, vf + i * Hkv * D, Hkv * D);
        }
        float *dout = upf(NULL, T * Hq * D);
        X->ops->attention_sparse(X, upf(qa, T * Hq * D), kc, vc, t, t, dout, dqpos, dsel, T, Hq, Hkv, D, 0.25f, c,
                                 n_sel);
        got = down(dout, T * Hq * D);
        ref_attention_sparse(qa, kf, vf, ref, qpos, sref, T, Hq, Hkv, D, 0.25f, c, n_sel, ssc);
        char what[64];
        snprintf(what, sizeof what, "6 queries, GQA 6/2, 3 blocks of 4 + tail, %s cache", qtype_get((uint32_t)t)->name);
        expect("attention_sparse", what, got, ref, T * Hq * D, 1e-5);
        free(got), free(kd), free(vd), free(kf), free(vf);
    }
    free(qa), free(k), free(v), free(ref), free(ssc), free(raw), free(blk), free(bref), free(q), free(sc), free(nd);
}
