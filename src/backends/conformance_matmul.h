/* conformance_matmul: the conformance cases of matmul, get_rows and matmul_experts over every weight
 * type, included by src/backends/conformance.c after its helpers (randn, upf, down, expect, make_weight,
 * the executor X). Tolerance: per output element, an error model of the activations' rounding to the
 * type's vec_dot input (expect_matmul); get_rows exact. */

static void dequant(const weight *w, const void *data, int64_t rows, float *out) {
    const quant_ops *q = quant_ops_get(w->type, QUANT_ISA_SCALAR);
    const size_t rb = qtype_row_bytes(w->type, w->ne[0]);
    for (int64_t i = 0; i < rows; i++) q->to_float((const char *)data + (size_t)i * rb, out + i * w->ne[0], w->ne[0]);
}

/* rounding bound of each activation value and whether blocks carry an f16 scale (see the header) */
static int act_delta(enum qtype vt, const float *x, int64_t K, double *delta) {
    int blk = vt == QT_Q8_K ? 256 : 32;
    for (int64_t b = 0; b < K; b += blk) {
        double amax = 0;
        for (int64_t i = b; i < b + blk && i < K; i++) amax = fabs(x[i]) > amax ? fabs(x[i]) : amax;
        for (int64_t i = b; i < b + blk && i < K; i++) {
            switch (vt) {
            case QT_F32: delta[i] = 0; break;
            case QT_F16: delta[i] = fabs(x[i]) * 0x1p-11; break;
            case QT_BF16: delta[i] = fabs(x[i]) * 0x1p-8; break;
            default: delta[i] = amax / 254.0; break; /* half a step of amax / 127 */
            }
        }
    }
    return vt == QT_Q8_0 || vt == QT_Q8_1 ? 32 : 0; /* q8_K's scale is an f32 */
}

/* y[t][n] vs rows of wd (dequantized, [N][K]) . x[t]: per-element bound */
static void expect_matmul(const char *op, const char *what, enum qtype wt, const float *got, const float *wd,
                          const float *x, const int32_t *xrow, int T, int64_t N, int64_t K, const int32_t *wrow0) {
    tested(op);
    const enum qtype vt = quant_ops_get(wt, QUANT_ISA_SCALAR)->vec_dot_type;
    double *delta = malloc(sizeof(double) * (size_t)K), worst = 0;
    bool ok = true;
    for (int t = 0; t < T; t++) {
        const float *xt = x + (int64_t)xrow[t] * K;
        const int sblk = act_delta(vt, xt, K, delta);
        for (int64_t n = 0; n < N; n++) {
            const float *w = wd + ((int64_t)(wrow0 ? wrow0[t] : 0) * N + n) * K;
            double ref = 0, var = 0, mag = 0, corr = 0, part = 0;
            for (int64_t i = 0; i < K; i++) {
                ref += (double)w[i] * xt[i];
                part += (double)w[i] * xt[i];
                var += (double)w[i] * w[i] * delta[i] * delta[i] / 3;
                mag += fabs((double)w[i] * xt[i]);
                if (sblk && (i + 1) % sblk == 0) corr += fabs(part) * 0x1p-11, part = 0;
            }
            const double b = 6 * sqrt(var) + corr + (double)K * 0x1p-22 * mag + 1e-30;
            double d = fabs(got[(int64_t)t * N + n] - ref);
            if (!(d <= b)) ok = false;
            worst = d / b > worst ? d / b : worst;
        }
    }
    printf("| %s | %s | %s | %.2f of bound | 1 |\n", device_name, op, what, worst);
    CHECKF(ok, "%s %s %s: an element is %.2f x its error bound", device_name, op, what, worst);
    free(delta);
}

/* the spans of one pass (their tokens' rows in order) through a fresh N x K weight of type t: every output
 * within expect_matmul's bound; label names the case after the type */
static void check_matmul_spans(rng *r, enum qtype t, const char *name, int64_t K, int64_t N, const pass_span *spans,
                               int n_spans, const char *label) {
    weight w;
    void *d;
    gguf_tensor g;
    if (!make_weight(r, t, K, N, 1, &w, &d, &g)) return;
    int T = 0;
    for (int i = 0; i < n_spans; i++) T += spans[i].n;
    float *wd = malloc(sizeof(float) * (size_t)(K * N));
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)T);
    dequant(&w, d, N, wd);
    for (int i = 0; i < T; i++) idx[i] = i;
    float *x = randn(r, T * K, 1), *dx = upf(x, T * K), *dy = upf(NULL, T * N);
    X->ops->begin_pass(X, spans, n_spans);
    X->ops->matmul(X, &w, 0, dx, dy, T, MM_ROWS_PASS);
    float *y = down(dy, T * N);
    char what[80];
    snprintf(what, sizeof what, "%s, %s", name, label);
    expect_matmul("matmul", what, t, y, wd, x, idx, T, N, K, NULL);
    free(x), free(y), free(wd), free(d), free(idx);
}

/* one span of T tokens (its last n_out output rows) */
static void check_matmul_pass(rng *r, enum qtype t, const char *name, int64_t K, int64_t N, int T, int n_out,
                              const char *label) {
    const pass_span ps = {T, n_out};
    check_matmul_spans(r, t, name, K, N, &ps, 1, label);
}

/* Three one-token sequences in one pass, then each alone: every output within expect_matmul's bound, and each
 * token's row alone bit for bit its row in the pass (a sequence's results never depend on its batch; a GPU's
 * float matmul runs one-token blocks through their own unrolled kernel, whose loop over K >= 1024 with a tail
 * this K exercises). */
static void check_matmul_alone(rng *r, enum qtype t, const char *name, int64_t K, int64_t N) {
    enum { T = 3 };
    weight w;
    void *d;
    gguf_tensor g;
    if (!make_weight(r, t, K, N, 1, &w, &d, &g)) return;
    float *wd = malloc(sizeof(float) * (size_t)(K * N));
    int32_t idx[T] = {0, 1, 2};
    dequant(&w, d, N, wd);
    float *x = randn(r, T * K, 1), *dx = upf(x, T * K), *dy = upf(NULL, T * N);
    const pass_span three[T] = {{1, 1}, {1, 1}, {1, 1}}, one = {1, 1};
    X->ops->begin_pass(X, three, T);
    X->ops->matmul(X, &w, 0, dx, dy, T, MM_ROWS_PASS);
    float *y = down(dy, T * N);
    char what[96];
    snprintf(what, sizeof what, "%s, K = %d, 3 one-token sequences", name, (int)K);
    expect_matmul("matmul", what, t, y, wd, x, idx, T, N, K, NULL);
    int64_t off = 0;
    for (int i = 0; i < T; i++) {
        X->ops->begin_pass(X, &one, 1);
        X->ops->matmul(X, &w, 0, dx + (int64_t)i * K, dy, 1, MM_ROWS_PASS);
        float *y1 = down(dy, N);
        for (int64_t n = 0; n < N; n++) off += memcmp(&y1[n], &y[(int64_t)i * N + n], 4) != 0;
        free(y1);
    }
    tested("matmul");
    printf("| %s | matmul | %s, K = %d, each token alone = in the pass of 3 | %lld values differ | 0 |\n", device_name,
           name, (int)K, (long long)off);
    CHECKF(off == 0, "%s matmul %s K = %d: a token alone differs from the pass of 3 in %lld values", device_name, name,
           (int)K, (long long)off);
    free(x), free(y), free(wd), free(d);
}

/* S one-token sequences in one pass (a batched decode step: a GPU takes 64 such rows or more through a
 * tensor-core product of other bits than its one-row form): every output within expect_matmul's bound. Alone
 * against in the batch is compared by check_matmul_alone's 3, where the bits must match. */
static void check_matmul_seqs(rng *r, enum qtype t, const char *name, int64_t K, int64_t N, int S) {
    pass_span *spans = malloc(sizeof(pass_span) * (size_t)S);
    for (int i = 0; i < S; i++) spans[i] = (pass_span){1, 1};
    char label[48];
    snprintf(label, sizeof label, "%d one-token sequences", S);
    check_matmul_spans(r, t, name, K, N, spans, S, label);
    free(spans);
}

/* Two matrices of one type over the same input back to back (an MoE's router and its shared expert's gate,
 * N2 = 1: the CUDA executor launches them as one), then a float matmul that reads the first one's output
 * (it must run after them): each output within expect_matmul's bound, and each of the pair bit for bit what
 * it gives alone. */
static void check_matmul_pair(rng *r, enum qtype t, const char *name, int64_t K, int64_t N1, int64_t N2, int T) {
    weight w1, w2, w3;
    void *d1, *d2, *d3;
    gguf_tensor g1, g2, g3;
    const int64_t N3 = 5;
    if (!make_weight(r, t, K, N1, 1, &w1, &d1, &g1)) return;
    if (!make_weight(r, t, K, N2, 1, &w2, &d2, &g2)) {
        free(d1);
        return;
    }
    CHECK(make_weight(r, QT_F32, N1, N3, 1, &w3, &d3, &g3));
    float *wd1 = malloc(sizeof(float) * (size_t)(K * N1)), *wd2 = malloc(sizeof(float) * (size_t)(K * N2));
    float *wd3 = malloc(sizeof(float) * (size_t)(N1 * N3));
    dequant(&w1, d1, N1, wd1), dequant(&w2, d2, N2, wd2), dequant(&w3, d3, N3, wd3);
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)T);
    for (int i = 0; i < T; i++) idx[i] = i;
    float *x = randn(r, T * K, 1), *dx = upf(x, T * K);
    float *dy1 = upf(NULL, T * N1), *dy2 = upf(NULL, T * N2), *dy3 = upf(NULL, T * N3);
    pass_span ps = {T, T};
    X->ops->begin_pass(X, &ps, 1);
    X->ops->matmul(X, &w1, 0, dx, dy1, T, MM_ROWS_PASS);
    X->ops->matmul(X, &w2, 0, dx, dy2, T, MM_ROWS_PASS);
    X->ops->matmul(X, &w3, 0, dy1, dy3, T, MM_ROWS_PASS);
    float *y1 = down(dy1, T * N1), *y2 = down(dy2, T * N2), *y3 = down(dy3, T * N3);
    char what[96];
    snprintf(what, sizeof what, "%s, N %d then N %d over one input, pass of %d: the first", name, (int)N1, (int)N2, T);
    expect_matmul("matmul", what, t, y1, wd1, x, idx, T, N1, K, NULL);
    snprintf(what, sizeof what, "%s, N %d then N %d over one input, pass of %d: the second", name, (int)N1, (int)N2, T);
    expect_matmul("matmul", what, t, y2, wd2, x, idx, T, N2, K, NULL);
    snprintf(what, sizeof what, "%s, pass of %d: f32 over the first one's output, right after", name, T);
    expect_matmul("matmul", what, QT_F32, y3, wd3, y1, idx, T, N3, N1, NULL);
    int64_t off = 0;
    X->ops->begin_pass(X, &ps, 1);
    X->ops->matmul(X, &w1, 0, dx, dy1, T, MM_ROWS_PASS);
    float *a1 = down(dy1, T * N1);
    X->ops->begin_pass(X, &ps, 1);
    X->ops->matmul(X, &w2, 0, dx, dy2, T, MM_ROWS_PASS);
    float *a2 = down(dy2, T * N2);
    for (int64_t i = 0; i < T * N1; i++) off += memcmp(&a1[i], &y1[i], 4) != 0;
    for (int64_t i = 0; i < T * N2; i++) off += memcmp(&a2[i], &y2[i], 4) != 0;
    tested("matmul");
    printf("| %s | matmul | %s, N %d then N %d over one input, pass of %d: each alone = in the pair | %lld values "
           "differ | 0 |\n",
           device_name, name, (int)N1, (int)N2, T, (long long)off);
    CHECKF(off == 0, "%s matmul %s: a matrix alone differs from the pair in %lld values", device_name, name,
           (long long)off);
    free(a1), free(a2), free(y1), free(y2), free(y3), free(x), free(idx);
    free(wd1), free(wd2), free(wd3), free(d1), free(d2), free(d3);
}

/* Three matmuls over one input, then a bias on each output (a GPU adds each in its GEMV's epilogue), the
 * third's twice (the second must come after the first), then a matmul, its bias and an add of its output
 * into a residual (o with a bias), then the three again with each bias right after its matmul (a qwen2
 * layer's q, k and v): each output bit for bit the matrix alone plus its biases rounded once in order, the
 * residual plus that. */
static void check_matmul_bias(rng *r, enum qtype t, const char *name, int64_t K, int T) {
    enum { NM = 3 };
    const int64_t Nm[NM] = {37, 29, 29};
    weight w[NM], wb[NM];
    void *d[NM], *db[NM];
    gguf_tensor g[NM], gb[NM];
    int made = 0, madeb = 0;
    for (; made < NM && make_weight(r, t, K, Nm[made], 1, &w[made], &d[made], &g[made]); made++) {}
    for (; madeb < NM && made == NM && make_weight(r, QT_F32, Nm[madeb], 1, 1, &wb[madeb], &db[madeb], &gb[madeb]); madeb++) {}
    if (made < NM || madeb < NM) {
        for (int i = 0; i < made; i++) free(d[i]);
        for (int i = 0; i < madeb; i++) free(db[i]);
        return;
    }
    float *x = randn(r, T * K, 1), *dx = upf(x, T * K), *dy[NM], *a[NM], *y[NM];
    for (int i = 0; i < NM; i++) dy[i] = upf(NULL, T * Nm[i]);
    pass_span ps = {T, T};
    for (int i = 0; i < NM; i++) { /* each matrix alone, no bias */
        X->ops->begin_pass(X, &ps, 1);
        X->ops->matmul(X, &w[i], 0, dx, dy[i], T, MM_ROWS_PASS);
        a[i] = down(dy[i], T * Nm[i]);
    }
    float *res = randn(r, T * Nm[0], 1), *dres = upf(res, T * Nm[0]);
    X->ops->begin_pass(X, &ps, 1);
    for (int i = 0; i < NM; i++) X->ops->matmul(X, &w[i], 0, dx, dy[i], T, MM_ROWS_PASS);
    X->ops->add_bias(X, dy[0], &wb[0], T, (int)Nm[0]);
    X->ops->add_bias(X, dy[2], &wb[2], T, (int)Nm[2]);
    X->ops->add_bias(X, dy[1], &wb[1], T, (int)Nm[1]);
    X->ops->add_bias(X, dy[2], &wb[1], T, (int)Nm[2]); /* a second bias on the third: after its first */
    for (int i = 0; i < NM; i++) y[i] = down(dy[i], T * Nm[i]);
    X->ops->begin_pass(X, &ps, 1);
    X->ops->matmul(X, &w[0], 0, dx, dy[0], T, MM_ROWS_PASS);
    X->ops->add_bias(X, dy[0], &wb[0], T, (int)Nm[0]);
    X->ops->add(X, dres, dy[0], T * Nm[0]);
    float *y0 = down(dy[0], T * Nm[0]), *r1 = down(dres, T * Nm[0]);
    /* each bias right after its matmul (a qwen2 layer's order): the same values */
    float *z[NM];
    X->ops->begin_pass(X, &ps, 1);
    for (int i = 0; i < NM; i++) {
        X->ops->matmul(X, &w[i], 0, dx, dy[i], T, MM_ROWS_PASS);
        X->ops->add_bias(X, dy[i], &wb[i], T, (int)Nm[i]);
    }
    for (int i = 0; i < NM; i++) z[i] = down(dy[i], T * Nm[i]);
    int64_t off = 0;
    for (int i = 0; i < NM; i++)
        for (int64_t j = 0; j < T * Nm[i]; j++) {
            const int64_t c = j % Nm[i];
            float want = a[i][j] + ((const float *)db[i])[c];
            if (i == 2) want = want + ((const float *)db[1])[c]; /* its second bias, after the first */
            off += memcmp(&y[i][j], &want, 4) != 0;
        }
    for (int i = 0; i < NM; i++)
        for (int64_t j = 0; j < T * Nm[i]; j++) {
            const float want = a[i][j] + ((const float *)db[i])[j % Nm[i]];
            off += memcmp(&z[i][j], &want, 4) != 0;
        }
    for (int64_t j = 0; j < T * Nm[0]; j++) {
        const float v = a[0][j] + ((const float *)db[0])[j % Nm[0]], want = res[j] + v;
        off += memcmp(&y0[j], &v, 4) != 0 || memcmp(&r1[j], &want, 4) != 0;
    }
    tested("add_bias");
    printf("| %s | add_bias | %s, N 37 / 29 / 29 over one input, a bias on each (the third twice), then N 37, its bias "
           "and a residual add, then each bias right after its matmul, pass of %d: = each alone + its biases | %lld "
           "values differ | 0 |\n",
           device_name, name, T, (long long)off);
    CHECKF(off == 0, "%s add_bias %s after matmuls: %lld values differ from the matrix alone + its biases", device_name,
           name, (long long)off);
    for (int i = 0; i < NM; i++) free(a[i]), free(y[i]), free(z[i]), free(d[i]), free(db[i]);
    free(x), free(res), free(y0), free(r1);
}

/* A converted input gone stale: five matmuls over spans of 19 rows in one pass (a GPU's GEMM rows, whose
 * input it converts to bf16 once for every projection of one input), a 256 x 256 matrix of the type over
 * x, over x again after an add rewrote it in place, then an f32 matrix (it converts nothing) over that
 * output into x, the type's matrix over x once more and over that one's output. Each output within
 * expect_matmul's bound of the values its input held then: a backend that keeps a converted copy of an
 * input must notice a write by an op and by a matmul's output. */
static void check_matmul_stale_input(rng *r, enum qtype t, const char *name) {
    enum { T = 19, NY = 4 };
    const int64_t K = 256; /* N = K: each output is the next one's input */
    weight w, wf;
    void *d, *df;
    gguf_tensor g, gf;
    if (!make_weight(r, t, K, K, 1, &w, &d, &g)) return;
    CHECK(make_weight(r, QT_F32, K, K, 1, &wf, &df, &gf));
    float *wd = malloc(sizeof(float) * (size_t)(K * K));
    dequant(&w, d, K, wd);
    int32_t idx[T];
    for (int i = 0; i < T; i++) idx[i] = i;
    float *x = randn(r, T * K, 1), *a = randn(r, T * K, 1), *dx = upf(x, T * K), *da = upf(a, T * K), *dy[NY];
    for (int i = 0; i < NY; i++) dy[i] = upf(NULL, T * K);
    const pass_span ps = {T, T};
    X->ops->begin_pass(X, &ps, 1);
    X->ops->matmul(X, &w, 0, dx, dy[0], T, MM_ROWS_PASS);
    X->ops->add(X, dx, da, T * K); /* x += a */
    X->ops->matmul(X, &w, 0, dx, dy[1], T, MM_ROWS_PASS);
    X->ops->matmul(X, &wf, 0, dy[1], dx, T, MM_ROWS_PASS); /* x = the f32 matrix . y1 */
    X->ops->matmul(X, &w, 0, dx, dy[2], T, MM_ROWS_PASS);
    X->ops->matmul(X, &w, 0, dy[2], dy[3], T, MM_ROWS_PASS);
    float *x2 = down(dx, T * K), *y[NY];
    for (int i = 0; i < NY; i++) y[i] = down(dy[i], T * K);
    for (int64_t i = 0; i < T * K; i++) a[i] += x[i]; /* x + a, as the add rounds it */
    const float *in[NY] = {x, a, x2, y[2]};
    const char *when[NY] = {"x", "x after an add into it", "x after a matmul wrote it", "the one before's output"};
    char what[128];
    snprintf(what, sizeof what, "%s, 256 x 256 over 19 rows: f32 over the second's output into x", name);
    expect_matmul("matmul", what, QT_F32, x2, df, y[1], idx, T, K, K, NULL);
    for (int i = 0; i < NY; i++) {
        snprintf(what, sizeof what, "%s, 256 x 256 over 19 rows, one pass: over %s", name, when[i]);
        expect_matmul("matmul", what, t, y[i], wd, in[i], idx, T, K, K, NULL);
    }
    for (int i = 0; i < NY; i++) free(y[i]);
    free(x), free(a), free(x2), free(wd), free(d), free(df);
}

/* The routed experts in shapes a GPU's grouped tensor-core product takes (N even, K % 64 == 0; used for the
 * slots of spans of more than 8 tokens): random experts for 40 tokens x 2, one span of 40, then spans of 19,
 * 1 and 20 (the 1-token span's slots take a GPU's GEMV), inputs per token and per slot, every output within
 * expect_matmul's bound; the last span alone in a pass gives the bits it had in the pass of three (a
 * sequence's results never depend on its batch). */
static void check_experts_spans(rng *r, enum qtype t, const char *name) {
    enum { SK = 2, ST = 40 };
    const int64_t K = 768, N = 38, E = 5;
    weight we;
    void *edata;
    gguf_tensor gte;
    if (!make_weight(r, t, K, N, E, &we, &edata, &gte)) return;
    float *wd = malloc(sizeof(float) * (size_t)(N * E * K));
    dequant(&we, edata, N * E, wd);
    int32_t sel[ST * SK], wrow[ST * SK], xr[ST * SK];
    for (int i = 0; i < ST; i++) {
        sel[i * SK] = (int32_t)(rng_u64(r) % E);
        sel[i * SK + 1] = (int32_t)((sel[i * SK] + 1 + rng_u64(r) % (E - 1)) % E);
    }
    int32_t *dsel = up(sel, sizeof sel);
    float *x = randn(r, ST * SK * K, 1), *dx = upf(x, ST * SK * K), *dy = upf(NULL, ST * SK * N);
    const pass_span one = {ST, 1}, three[3] = {{19, 1}, {1, 1}, {20, 1}}, last = {20, 1};
    float *kept[2] = {NULL, NULL}; /* the pass of three's outputs, per input layout */
    for (int layout = 0; layout < 2; layout++)
        for (int per_slot = 0; per_slot < 2; per_slot++) {
            X->ops->begin_pass(X, layout ? three : &one, layout ? 3 : 1);
            X->ops->matmul_experts(X, &we, dsel, SK, dx, per_slot, dy, ST);
            float *y = down(dy, ST * SK * N);
            for (int i = 0; i < ST * SK; i++) wrow[i] = sel[i], xr[i] = per_slot ? i : i / SK;
            char what[96];
            snprintf(what, sizeof what, "%s, N %d x %d experts, %s, input per %s", name, (int)N, (int)E,
                     layout ? "spans of 19, 1, 20" : "one span of 40", per_slot ? "slot" : "token");
            expect_matmul("matmul_experts", what, t, y, wd, x, xr, ST * SK, N, K, wrow);
            if (layout) kept[per_slot] = y;
            else free(y);
        }
    for (int per_slot = 0; per_slot < 2; per_slot++) {
        X->ops->begin_pass(X, &last, 1);
        X->ops->matmul_experts(X, &we, dsel + 20 * SK, SK, dx + (per_slot ? 20 * SK : 20) * K, per_slot, dy, 20);
        float *y = down(dy, 20 * SK * N);
        int64_t off = 0;
        for (int64_t i = 0; i < 20 * SK * N; i++) off += memcmp(&y[i], &kept[per_slot][20 * SK * N + i], 4) != 0;
        tested("matmul_experts");
        printf("| %s | matmul_experts | %s, the span of 20 alone = in the pass of three, input per %s | %lld values "
               "differ | 0 |\n", device_name, name, per_slot ? "slot" : "token", (long long)off);
        CHECKF(off == 0, "%s matmul_experts %s: the span alone differs from the pass of three in %lld values",
               device_name, name, (long long)off);
        free(y), free(kept[per_slot]);
    }
    free(x), free(wd), free(edata);
}

/* ---------------------------------------------------------------- matmuls over every type */

static void check_matmuls(rng *r) {
    const int64_t K = 768, N = 37, E = 3;
    const int TK = 2, TE = 40;
    int n_types = 0;
    for (int ti = 0; ti < QT_COUNT; ti++) {
        enum qtype t = (enum qtype)ti;
        const quant_ops *sq = quant_ops_get(t, QUANT_ISA_SCALAR);
        if (!qtype_get((uint32_t)t) || !sq || !sq->to_float || !sq->vec_dot || t == QT_Q8_K || t == QT_Q8_1) continue;
        const char *name = qtype_get((uint32_t)t)->name;
        weight w, we;
        void *data, *edata;
        gguf_tensor gt, gte;
        if (!make_weight(r, t, K, N, 1, &w, &data, &gt)) {
            printf("| %s | matmul | %s | not generated or not accepted | - |\n", device_name, name);
            continue;
        }
        n_types++;
        float *wd = malloc(sizeof(float) * (size_t)(K * N * E));
        dequant(&w, data, N, wd);
        int32_t idx[64];
        for (int i = 0; i < 64; i++) idx[i] = i;
        /* row-by-row (5 tokens), bulk (one span of 19), output rows, no structure */
        const int Ts[2] = {5, 19};
        for (int k = 0; k < 2; k++) {
            int T = Ts[k];
            float *x = randn(r, T * K, 1), *dx = upf(x, T * K), *dy = upf(NULL, T * N);
            pass_span ps = {T, 3};
            X->ops->begin_pass(X, &ps, 1);
            char what[64];
            X->ops->matmul(X, &w, 0, dx, dy, T, MM_ROWS_PASS);
            float *y = down(dy, T * N);
            snprintf(what, sizeof what, "%s, pass of %d", name, T);
            expect_matmul("matmul", what, t, y, wd, x, idx, T, N, K, NULL);
            X->ops->matmul(X, &w, 0, dx, dy, 3, (mm_rows){MM_OUT, 0});
            free(y);
            y = down(dy, 3 * N);
            snprintf(what, sizeof what, "%s, 3 output rows of %d", name, T);
            expect_matmul("matmul", what, t, y, wd, x, idx, 3, N, K, NULL);
            X->ops->matmul(X, &w, 0, dx, dy, T, (mm_rows){MM_ROWWISE, 0});
            free(y);
            y = down(dy, T * N);
            snprintf(what, sizeof what, "%s, %d unstructured rows", name, T);
            expect_matmul("matmul", what, t, y, wd, x, idx, T, N, K, NULL);
            /* the input rewritten in place between two matmuls of one pass: the second must see the new
             * values (a backend that keeps its quantized copy of an input must notice the write) */
            X->ops->begin_pass(X, &ps, 1);
            X->ops->matmul(X, &w, 0, dx, dy, T, MM_ROWS_PASS);
            X->ops->scale(X, dx, -3.0f, T * K);
            X->ops->matmul(X, &w, 0, dx, dy, T, MM_ROWS_PASS);
            free(y);
            y = down(dy, T * N);
            for (int64_t i = 0; i < T * K; i++) x[i] *= -3.0f;
            snprintf(what, sizeof what, "%s, %d rows after their input changed", name, T);
            expect_matmul("matmul", what, t, y, wd, x, idx, T, N, K, NULL);
            free(x), free(y);
        }
        /* an even row count and one span of 19 (a GPU's tensor-core GEMM takes these shapes; the bound is
         * the same: bf16 activations and weights round by at most 2^-8 relative, under half a q8 step of
         * the block's amax for all but the largest values) */
        check_matmul_pass(r, t, name, K, 38, 19, 19, "38 rows, pass of 19");
        check_matmul_seqs(r, t, name, K, 38, 72); /* 72: a GPU's int8 batched product, two 64-row tiles */
        check_matmul_bias(r, t, name, K, 1); /* one token (decode) and a span of 5 */
        check_matmul_bias(r, t, name, K, 5);
        /* float weights with K % 4 != 0, 3 rows (a GPU's 4-values-a-load kernel needs K % 4 == 0: its other
         * kernel) */
        if (t == QT_F32 || t == QT_F16 || t == QT_BF16) {
            check_matmul_pass(r, t, name, 90, 5, 3, 1, "K = 90, pass of 3");
            check_matmul_alone(r, t, name, 2088, 6); /* K past 1024 with a tail (a GPU's one-token loop) */
            check_matmul_pair(r, t, name, K, 37, 1, 1); /* one token (decode) and a span of 5 */
            check_matmul_pair(r, t, name, K, 37, 1, 5);
        }
        /* a span of 300 tokens (a GPU dequantizes the whole matrix first from 256 rows on: the same bound) */
        check_matmul_pass(r, t, name, K, 38, 300, 1, "38 rows, pass of 300");
        check_matmul_stale_input(r, t, name);
        /* get_rows: exact dequantization */
        {
            int32_t ids[4] = {36, 0, 17, 5};
            int32_t *dids = up(ids, sizeof ids);
            float *dy = upf(NULL, 4 * K);
            X->ops->get_rows(X, &w, dids, dy, 4);
            float *y = down(dy, 4 * K), *ref = malloc(sizeof(float) * 4 * (size_t)K);
            for (int i = 0; i < 4; i++) memcpy(ref + i * K, wd + ids[i] * K, sizeof(float) * (size_t)K);
            char what[64];
            snprintf(what, sizeof what, "%s", name);
            expect("get_rows", what, y, ref, 4 * K, 0);
            free(y), free(ref);
        }
        /* the grouped expert matmul: 40 tokens, 2 of 3 experts each (rows per expert >= 16: bulk) */
        if (make_weight(r, t, K, N, E, &we, &edata, &gte)) {
            dequant(&we, edata, N * E, wd);
            int32_t sel[TE * TK], wrow[TE * TK], xr[TE * TK];
            for (int i = 0; i < TE; i++) {
                sel[i * TK] = i % 3;
                sel[i * TK + 1] = (i + 1 + i / 7) % 3 == i % 3 ? (i + 2) % 3 : (i + 1 + i / 7) % 3;
            }
            int32_t *dsel = up(sel, sizeof sel);
            float *x = randn(r, TE * TK * K, 1), *dx = upf(x, TE * TK * K), *dy = upf(NULL, TE * TK * N);
            pass_span ps = {TE, 1};
            X->ops->begin_pass(X, &ps, 1);
            for (int per_slot = 0; per_slot < 2; per_slot++) {
                X->ops->matmul_experts(X, &we, dsel, TK, dx, per_slot, dy, TE);
                float *y = down(dy, TE * TK * N);
                for (int i = 0; i < TE * TK; i++) wrow[i] = sel[i], xr[i] = per_slot ? i : i / TK;
                char what[64];
                snprintf(what, sizeof what, "%s, %d tokens x %d of %d, input per %s", name, TE, TK, (int)E,
                         per_slot ? "slot" : "token");
                expect_matmul("matmul_experts", what, t, y, wd, x, xr, TE * TK, N, K, wrow);
                free(y);
            }
            /* two expert sets over the same input, one after the other (an MoE's gate and up: the CUDA
             * executor launches them as one), then over other routed slots (it must not join those) */
            weight we2;
            void *edata2;
            gguf_tensor gte2;
            const int64_t N2 = 29;
            if (make_weight(r, t, K, N2, E, &we2, &edata2, &gte2)) {
                float *wd2 = malloc(sizeof(float) * (size_t)(N2 * E * K));
                dequant(&we2, edata2, N2 * E, wd2);
                int32_t sel2[TE * TK], wrow2[TE * TK];
                for (int i = 0; i < TE * TK; i++) sel2[i] = sel[TE * TK - 1 - i];
                int32_t *dsel2 = up(sel2, sizeof sel2);
                float *dy2 = upf(NULL, TE * TK * N2);
                for (int other = 0; other < 2; other++) {
                    X->ops->matmul_experts(X, &we, dsel, TK, dx, false, dy, TE);
                    X->ops->matmul_experts(X, &we2, other ? dsel2 : dsel, TK, dx, false, dy2, TE);
                    float *y = down(dy, TE * TK * N), *y2 = down(dy2, TE * TK * N2);
                    for (int i = 0; i < TE * TK; i++)
                        wrow[i] = sel[i], wrow2[i] = other ? sel2[i] : sel[i], xr[i] = i / TK;
                    char what[96];
                    snprintf(what, sizeof what, "%s, two expert sets back to back, %s slots: the first", name,
                             other ? "other" : "the same");
                    expect_matmul("matmul_experts", what, t, y, wd, x, xr, TE * TK, N, K, wrow);
                    snprintf(what, sizeof what, "%s, two expert sets back to back, %s slots: the second", name,
                             other ? "other" : "the same");
                    expect_matmul("matmul_experts", what, t, y2, wd2, x, xr, TE * TK, N2, K, wrow2);
                    free(y), free(y2);
                }
                free(wd2), free(edata2);
            }
            free(x), free(edata);
        }
        check_experts_spans(r, t, name);
        free(wd), free(data);
    }
    CHECKF(n_types >= 10, "the matmuls ran %d weight types", n_types);
}
