/* backend: the executor's error record and the device registry (which devices this build has). */
#include "backends/backend.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

int exec_fail(exec *x, int code, const char *fmt, ...) {
    if (x->status) return x->status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->msg, sizeof x->msg, fmt, ap);
    va_end(ap);
    x->status = code ? code : ERR_NOMEM;
    return x->status;
}

void attend_decode_each(exec *x, const attn_seq *seqs, int n, const float *q, const float *k, const float *v,
                        float *out, enum qtype tk, enum qtype tv, const int32_t *kpos, int Hq, int Hkv, int D,
                        float scale, int window) {
    const int64_t qw = (int64_t)Hq * D, kw = (int64_t)Hkv * D;
    const size_t kb = qtype_row_bytes(tk, kw), vb = qtype_row_bytes(tv, kw);
    for (int i = 0; i < n && !x->status; i++) {
        const attn_seq *s = &seqs[i];
        x->ops->store_rows(x, (char *)s->k + (size_t)s->pos * kb, tk, k + s->row * kw, 1, kw);
        x->ops->store_rows(x, (char *)s->v + (size_t)s->pos * vb, tv, v + s->row * kw, 1, kw);
        x->ops->attention(x, q + s->row * qw, s->k, s->v, tk, tv, out + s->row * qw, s->qpos, kpos, 1, s->pos + 1, Hq,
                          Hkv, D, scale, window);
    }
}

void gdn_decode_each(exec *x, const gdn_seq *seqs, int n, const float *qkv, float *alpha, float *beta, const float *z,
                     const gdn_weights *w, float *work, float *o, const gdn_shape *sh) {
    const exec_ops *op = x->ops;
    const int Hk = sh->Hk, Hv = sh->Hv, Dk = sh->Dk, Dv = sh->Dv;
    const int64_t qk = (int64_t)Hk * Dk, vw = (int64_t)Hv * Dv, dc = 2 * qk + vw;
    op->gdn_gates(x, alpha, beta, w->a, w->dt, n, Hv);
    for (int i = 0; i < n; i++)
        op->conv1d_silu(x, qkv + i * dc, seqs[i].conv, w->conv, work + i * dc, 1, (int)dc, sh->Kc);
    for (int i = 0; i < n; i++) { /* a sequence's q | k | v are consecutive parts of its conv row */
        float *q = work + i * dc, *k = q + qk, *v = k + qk;
        op->l2_norm(x, q, 1, Hk, Dk, sh->eps, 1.0f / sqrtf((float)Dk));
        op->l2_norm(x, k, 1, Hk, Dk, sh->eps, 1.0f);
        op->gdn(x, seqs[i].S, q, k, v, alpha + (int64_t)i * Hv, beta + (int64_t)i * Hv, o + i * vw, 1, Hk, Hv, Dk, Dv,
                sh->map);
    }
    op->gated_norm(x, o, z, w->norm, n, Hv, Dv, sh->eps);
}

int exec_status(exec *x, err *e) {
    int rc = x->status;
    if (!rc) return 0;
    err_set(e, rc, "%s (%s executor)", x->msg, x->dev->name);
    x->status = 0;
    x->msg[0] = 0;
    return rc;
}

#define MAX_PROVIDERS 4
static const backend_provider *providers[MAX_PROVIDERS];
static int n_providers;

void backend_register(const backend_provider *p) {
    for (int i = 0; i < n_providers; i++)
        if (providers[i] == p) return;
    if (n_providers < MAX_PROVIDERS) providers[n_providers++] = p;
}

const char *backend_devices(void) {
    static char list[512];
    int o = snprintf(list, sizeof list, "cpu");
    for (int i = 0; i < n_providers && o < (int)sizeof list; i++) {
        const char *l = providers[i]->list();
        if (l && *l) o += snprintf(list + o, sizeof list - (size_t)o, ",%s", l);
    }
    return list;
}

enum qtype backend_default_cache_type(const backend *b) {
    if (b && b->ops->default_cache_type) return b->ops->default_cache_type(b);
    return QT_F32; /* cpu: f32 (backend.h says why) */
}

bool backend_cache_type_ok(const backend *b, enum qtype t, int64_t D) {
    if (b && b->ops->cache_type_ok) return b->ops->cache_type_ok(b, t, D);
    if (t == QT_F32 || t == QT_F16 || t == QT_BF16) return true;
    return t == QT_Q8_0 && D % 32 == 0;
}

void *backend_host_alloc(backend *b, size_t bytes) {
    if (b && b->ops->host_alloc) return b->ops->host_alloc(b, bytes);
    return malloc(bytes);
}

void backend_host_free(backend *b, void *p) {
    if (!p) return;
    if (b && b->ops->host_free) b->ops->host_free(b, p);
    else free(p);
}

backend *backend_open(const char *device, int n_threads, bool exact, err *e) {
    if (!device || !*device || !strcmp(device, "cpu")) return cpu_backend_new(n_threads, exact, e);
    for (int i = 0; i < n_providers; i++) {
        const size_t n = strlen(providers[i]->prefix);
        if (!strncmp(device, providers[i]->prefix, n) && (device[n] == 0 || device[n] == ':'))
            return providers[i]->open(device, n_threads, exact, e);
    }
    if (!strncmp(device, "cuda", 4))
        err_set(e, ERR_UNSUPPORTED,
                "device '%s' is not available: this build has no CUDA backend (configure with -DLLM170_CUDA=ON where "
                "nvcc is found); devices: %s",
                device, backend_devices());
    else
        err_set(e, ERR_UNSUPPORTED, "device '%s' is not available: this build has %s", device, backend_devices());
    return NULL;
}

int pass_rows_init(pass_rows *p, const exec_plan *plan, int min_bulk) {
    *p = (pass_rows){.max_tokens = plan->max_tokens, .min_bulk = min_bulk};
    p->R = plan->max_tokens > plan->max_out ? plan->max_tokens : plan->max_out;
    const size_t R = (size_t)(p->R > 0 ? p->R : 1);
    p->bulk = malloc(R), p->out_bulk = malloc(R), p->ones = malloc(R);
    p->span_of = malloc(sizeof(int32_t) * R);
    if (!p->bulk || !p->out_bulk || !p->ones || !p->span_of) {
        pass_rows_free(p);
        return ERR_NOMEM;
    }
    memset(p->ones, 1, R);
    return 0;
}

void pass_rows_free(pass_rows *p) {
    free(p->bulk), free(p->out_bulk), free(p->ones), free(p->span_of);
    p->bulk = p->out_bulk = p->ones = NULL, p->span_of = NULL;
}

void pass_rows_begin(exec *x, pass_rows *p, const pass_span *spans, int n_spans) {
    int T = 0, n_out = 0;
    for (int s = 0; s < n_spans; s++) T += spans[s].n, n_out += spans[s].n_out;
    p->T = p->n_spans = p->n_out = 0;
    if (T > p->max_tokens || n_out > T) {
        exec_fail(x, ERR_RANGE, "a pass of %d tokens (%d output rows): the context was planned for %d", T, n_out,
                  p->max_tokens);
        return;
    }
    for (int s = 0, t = 0, o = 0; s < n_spans; s++) {
        const uint8_t f = spans[s].n >= p->min_bulk;
        for (int i = 0; i < spans[s].n; i++, t++) p->bulk[t] = f, p->span_of[t] = s;
        for (int i = 0; i < spans[s].n_out; i++) p->out_bulk[o++] = f && spans[s].n_out == spans[s].n;
    }
    p->T = T, p->n_spans = n_spans, p->n_out = n_out;
}

bool pass_rows_family(exec *x, const pass_rows *p, const char *name, int T, mm_rows rows, const uint8_t **fam) {
    *fam = NULL;
    if (rows.kind == MM_PASS) {
        if (T != p->T) {
            exec_fail(x, ERR_ARG, "matmul '%s' over %d pass rows; the pass has %d", name, T, p->T);
            return false;
        }
        *fam = p->bulk;
    } else if (rows.kind == MM_OUT) {
        if (rows.first < 0 || rows.first + T > p->n_out) {
            exec_fail(x, ERR_ARG, "matmul '%s' over output rows %d..%d; the pass has %d", name, rows.first,
                      rows.first + T, p->n_out);
            return false;
        }
        *fam = p->out_bulk + rows.first;
    } else if (rows.kind == MM_RUN) {
        if (T > p->R) {
            exec_fail(x, ERR_ARG, "matmul '%s' over %d rows; the plan has %d", name, T, p->R);
            return false;
        }
        *fam = p->ones;
    }
    return true;
}
