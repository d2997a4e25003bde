/* conformance_gdn: the conformance case of gdn_decode (a Gated DeltaNet layer's decode step), included by
 * src/backends/conformance.c after its helpers (randn, upf, down, expect, make_weight, sigm, silu, the
 * executor X). */

/* gdn_decode: n one-token sequences against the reference chain (gates, conv step, l2 norms, delta rule,
 * gated norm) per sequence: o and S within 1e-5 of their largest value, the conv states exact (copies),
 * each sequence alone the bits it has in the batch; then a Q4_K matmul over o (a pass of n one-token
 * spans) equals the same matmul over a copy of o (a backend that hands o's quantized rows from the fused
 * op to the next matmul must hand the rows a plain quantization gives). Shape 0 (D 128, Hv = the plan's
 * 4) is a GPU's fused kernel; shape 1 (D 16 / 12) its op-by-op path. */
static void check_gdn_decode(rng *r) {
    for (int k2 = 0; k2 < 2; k2++) {
        const int n = k2 ? 2 : 3, Kc = 4;
        const gdn_shape sh = {2, 4, k2 ? 16 : 128, k2 ? 12 : 128, Kc, 1e-6f, GDN_HEADS_TILED};
        const int Hk = sh.Hk, Hv = sh.Hv, Dk = sh.Dk, Dv = sh.Dv;
        const int64_t qk = (int64_t)Hk * Dk, vw = (int64_t)Hv * Dv, dc = 2 * qk + vw, nst = (Kc - 1) * dc;
        const int64_t nS = (int64_t)Hv * Dk * Dv;
        weight wc, wa, wdt, wn;
        void *dcw, *da, *ddt, *dn;
        gguf_tensor gt;
        CHECK(make_weight(r, QT_F32, Kc, dc, 1, &wc, &dcw, &gt));
        CHECK(make_weight(r, QT_F32, Hv, 1, 1, &wa, &da, &gt));
        CHECK(make_weight(r, QT_F32, Hv, 1, 1, &wdt, &ddt, &gt));
        CHECK(make_weight(r, QT_F32, Dv, 1, 1, &wn, &dn, &gt));
        const gdn_weights gw = {&wc, &wa, &wdt, &wn};
        float *qkv = randn(r, n * dc, 1), *al = randn(r, n * Hv, 1), *be = randn(r, n * Hv, 1);
        float *z = randn(r, n * vw, 1), *cs = randn(r, n * nst, 1), *S = randn(r, n * nS, 0.2f);
        float *dqkv = upf(qkv, n * dc), *dz = upf(z, n * vw), *dal = upf(NULL, n * Hv), *dbe = upf(NULL, n * Hv);
        float *dwork = upf(NULL, n * dc), *dO = upf(NULL, n * vw), *dO1 = upf(NULL, vw);
        gdn_seq seqs[3], one[1];
        for (int i = 0; i < n; i++) seqs[i] = (gdn_seq){upf(cs + i * nst, nst), upf(S + i * nS, nS)};
        X->ops->upload(X, dal, al, sizeof(float) * (size_t)(n * Hv));
        X->ops->upload(X, dbe, be, sizeof(float) * (size_t)(n * Hv));
        X->ops->gdn_decode(X, seqs, n, dqkv, dal, dbe, dz, &gw, dwork, dO, &sh);
        float *o = down(dO, n * vw), *so = malloc(sizeof(float) * (size_t)(n * nS)), *co = malloc(sizeof(float) * (size_t)(n * nst));
        for (int i = 0; i < n; i++) {
            float *t = down(seqs[i].S, nS), *c = down(seqs[i].conv, nst);
            memcpy(so + i * nS, t, sizeof(float) * (size_t)nS), memcpy(co + i * nst, c, sizeof(float) * (size_t)nst);
            free(t), free(c);
        }
        /* each sequence alone from the same states: the bits it had in the batch */
        float *alone = malloc(sizeof(float) * (size_t)(n * vw));
        for (int i = 0; i < n; i++) {
            one[0] = (gdn_seq){upf(cs + i * nst, nst), upf(S + i * nS, nS)};
            X->ops->upload(X, dal, al + i * Hv, sizeof(float) * (size_t)Hv);
            X->ops->upload(X, dbe, be + i * Hv, sizeof(float) * (size_t)Hv);
            float *dq1 = upf(qkv + i * dc, dc), *dz1 = upf(z + i * vw, vw);
            X->ops->gdn_decode(X, one, 1, dq1, dal, dbe, dz1, &gw, dwork, dO1, &sh);
            float *t = down(dO1, vw);
            memcpy(alone + i * vw, t, sizeof(float) * (size_t)vw);
            free(t);
        }
        /* the reference chain */
        float *conv = malloc(sizeof(float) * (size_t)dc), *g = malloc(sizeof(float) * Hv), *b = malloc(sizeof(float) * Hv);
        float *oref = malloc(sizeof(float) * (size_t)(n * vw)), *on = malloc(sizeof(float) * (size_t)vw);
        for (int i = 0; i < n; i++) {
            ref_conv1d_silu(qkv + i * dc, cs + i * nst, dcw, conv, 1, (int)dc, Kc);
            ref_l2_norm(conv, 1, Hk, Dk, sh.eps, 1.0f / sqrtf((float)Dk));
            ref_l2_norm(conv + qk, 1, Hk, Dk, sh.eps, 1.0f);
            for (int j = 0; j < Hv; j++) {
                double a = (double)al[i * Hv + j] + ((float *)ddt)[j];
                g[j] = (float)(((float *)da)[j] * (a > 20 ? a : log1p(exp(a))));
                b[j] = (float)sigm(be[i * Hv + j]);
            }
            ref_gdn_step(S + i * nS, conv, conv + qk, conv + 2 * qk, g, b, on, Hk, Hv, Dk, Dv, sh.map);
            ref_rms_norm(on, dn, oref + i * vw, Hv, Dv, sh.eps);
            for (int64_t c = 0; c < vw; c++) oref[i * vw + c] = (float)(oref[i * vw + c] * silu(z[i * vw + c]));
        }
        char what[96];
        const char *shape = k2 ? "Hk 2 Hv 4 Dk 16 Dv 12" : "Hk 2 Hv 4 D 128";
        snprintf(what, sizeof what, "%d sequences, %s: output", n, shape);
        expect("gdn_decode", what, o, oref, n * vw, 1e-5);
        snprintf(what, sizeof what, "%d sequences, %s: state", n, shape);
        expect("gdn_decode", what, so, S, n * nS, 1e-5);
        snprintf(what, sizeof what, "%d sequences, %s: conv state", n, shape);
        expect("gdn_decode", what, co, cs, n * nst, 0);
        snprintf(what, sizeof what, "%d sequences, %s: each alone = in the batch", n, shape);
        expect("gdn_decode", what, alone, o, n * vw, 0);
        /* the matmul after it */
        weight wm;
        void *dm;
        if (vw % 256 == 0 && make_weight(r, QT_Q4_K, vw, 37, 1, &wm, &dm, &gt)) {
            pass_span ps[3] = {{1, 1}, {1, 1}, {1, 1}};
            float *dy1 = upf(NULL, n * 37), *dy2 = upf(NULL, n * 37), *dcopy = upf(NULL, n * vw);
            for (int i = 0; i < n; i++) seqs[i] = (gdn_seq){upf(cs + i * nst, nst), upf(so + i * nS, nS)};
            X->ops->upload(X, dal, al, sizeof(float) * (size_t)(n * Hv));
            X->ops->upload(X, dbe, be, sizeof(float) * (size_t)(n * Hv));
            X->ops->begin_pass(X, ps, n);
            X->ops->gdn_decode(X, seqs, n, dqkv, dal, dbe, dz, &gw, dwork, dO, &sh);
            X->ops->matmul(X, &wm, 0, dO, dy1, n, MM_ROWS_PASS);
            X->ops->copy(X, dcopy, dO, n * vw);
            X->ops->matmul(X, &wm, 0, dcopy, dy2, n, MM_ROWS_PASS);
            float *y1 = down(dy1, n * 37), *y2 = down(dy2, n * 37);
            snprintf(what, sizeof what, "%d sequences, %s: a matmul of o = of its copy", n, shape);
            expect("gdn_decode", what, y1, y2, n * 37, 0);
            free(y1), free(y2), free(dm);
        }
        free(qkv), free(al), free(be), free(z), free(cs), free(S), free(o), free(so), free(co), free(alone);
        free(conv), free(g), free(b), free(oref), free(on), free(dcw), free(da), free(ddt), free(dn);
    }
}
