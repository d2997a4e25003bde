/* model: loading through the architecture registry (models/registry.c) and the loader helpers every
 * architecture file shares. */
#include "engine/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"

int model_get_u32(model *m, const char *key, int *out, err *e) {
    char full[160];
    snprintf(full, sizeof full, "%s.%s", model_arch_name(m->arch), key);
    uint32_t v;
    int rc = gguf_get_u32(m->gguf, full, &v, e);
    if (rc) return rc;
    if (v > (uint32_t)INT32_MAX) return err_set(e, ERR_RANGE, "%s = %u is out of range", full, v);
    *out = (int)v;
    return 0;
}

int model_get_f32(model *m, const char *key, float *out, bool required, err *e) {
    char full[160];
    snprintf(full, sizeof full, "%s.%s", model_arch_name(m->arch), key);
    if (!required && !gguf_find_kv(m->gguf, full)) return 0;
    return gguf_get_f32(m->gguf, full, out, e);
}

static void shape_str(char *buf, size_t cap, int n, const int64_t *ne) {
    size_t off = 0;
    off += (size_t)snprintf(buf + off, cap - off, "{");
    for (int i = 0; i < n && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%lld", i ? ", " : "", (long long)ne[i]);
    if (off < cap) snprintf(buf + off, cap - off, "}");
}

/* The tensor `name`, or NULL (and an error if required) */
static const gguf_tensor *find_tensor(model *m, const char *name, bool required, int *rc, err *e) {
    const gguf_tensor *t = gguf_find_tensor(m->gguf, name);
    *rc = t || !required ? 0
                         : err_set(e, ERR_NOTFOUND, "tensor '%s' is missing (a %s model needs it)", name,
                                   model_arch_name(m->arch));
    return t;
}

/* Whether t has the shape ne[0..n_dims) (an error naming it if not). */
static int check_shape(const gguf_tensor *t, const char *name, int n_dims, const int64_t *ne, err *e) {
    /* trailing dims of 1 are allowed either way (converters differ on {C} vs {C, 1}) */
    int nd = (int)t->n_dims;
    while (nd > n_dims && t->ne[nd - 1] == 1) nd--;
    bool ok = nd == n_dims;
    for (int i = 0; ok && i < n_dims; i++) ok = t->ne[i] == ne[i];
    if (ok) return 0;
    char want[96], got[96];
    shape_str(want, sizeof want, n_dims, ne);
    shape_str(got, sizeof got, (int)t->n_dims, t->ne);
    return err_set(e, ERR_FORMAT, "tensor '%s' has shape %s, expected %s", name, got, want);
}

static int bind_tensor(model *m, weight *w, const gguf_tensor *t, int n_dims, err *e) {
    int rc = m->be->ops->weight_init(m->be, w, t, e);
    if (rc) return rc;
    w->n_dims = n_dims;
    return 0;
}

int model_bind(model *m, weight *w, const char *name, int n_dims, const int64_t *ne, bool required, err *e) {
    memset(w, 0, sizeof *w);
    int rc;
    const gguf_tensor *t = find_tensor(m, name, required, &rc, e);
    if (!t) return rc;
    return (rc = check_shape(t, name, n_dims, ne, e)) ? rc : bind_tensor(m, w, t, n_dims, e);
}

int model_bind_f32(model *m, weight *w, const char *name, int n_dims, const int64_t *ne, bool required, err *e) {
    memset(w, 0, sizeof *w);
    int rc;
    const gguf_tensor *t = find_tensor(m, name, required, &rc, e);
    if (!t) return rc;
    if ((rc = check_shape(t, name, n_dims, ne, e))) return rc;
    if (t->type != QT_F16 && t->type != QT_BF16) {
        if (t->type == QT_F32) return bind_tensor(m, w, t, n_dims, e);
        const qtype_info *in = qtype_get(t->type);
        return err_set(e, ERR_UNSUPPORTED, "tensor '%s' has type %s; this op needs F32 (F16 and BF16 are widened)",
                       name, in ? in->name : "?");
    }
    /* the widened copy: same name and shape, type F32, data owned by the model */
    float *f = malloc(sizeof(float) * (size_t)t->n_elements);
    void **owned = realloc(m->owned, sizeof(void *) * (size_t)(m->n_owned + 1));
    if (owned) m->owned = owned;
    if (!f || !owned) {
        free(f);
        return err_set(e, ERR_NOMEM, "out of memory widening tensor '%s' to F32", name);
    }
    m->owned[m->n_owned++] = f;
    quant_ops_get((enum qtype)t->type, QUANT_ISA_SCALAR)->to_float(t->data, f, t->n_elements);
    gguf_tensor wide = *t;
    wide.type = QT_F32;
    wide.nbytes = sizeof(float) * (uint64_t)t->n_elements;
    wide.data = f;
    return bind_tensor(m, w, &wide, n_dims, e);
}

int model_require_f32(const weight *w, err *e) {
    if (!w->data || w->type == QT_F32) return 0;
    const qtype_info *in = qtype_get(w->type);
    return err_set(e, ERR_UNSUPPORTED, "tensor '%s' has type %s; this op needs F32", w->name,
                   in ? in->name : "?");
}

int model_load(model **out, const char *path, backend *be, err *e) {
    *out = NULL;
    model *m = calloc(1, sizeof *m);
    if (!m) return err_set(e, ERR_NOMEM, "out of memory");
    m->be = be;
    int rc = gguf_open(&m->gguf, path, e);
    if (rc) {
        free(m);
        return rc;
    }
    char arch[64];
    rc = gguf_get_cstr(m->gguf, "general.architecture", arch, sizeof arch, e);
    if (rc) goto fail;
    m->def = arch_find(arch);
    if (!m->def) {
        rc = err_set(e, ERR_UNSUPPORTED, "architecture '%s' is not supported (supported: %s)", arch, arch_names());
        goto fail;
    }
    m->arch = m->def->id;
    if ((rc = m->def->load(m, e))) goto fail;
    *out = m;
    return 0;
fail:
    err_wrap(e, "%s", path);
    model_free(m);
    return rc;
}

void model_free(model *m) {
    if (!m) return;
    free(m->layers);
    for (int i = 0; i < m->n_owned; i++) free(m->owned[i]);
    free(m->owned);
    gguf_close(m->gguf);
    free(m);
}
