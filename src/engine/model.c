/* model: loading through the architecture registry (models/registry.c) and the loader helpers every
 * architecture file shares. */
#include "engine/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int model_bind(model *m, weight *w, const char *name, int n_dims, const int64_t *ne, bool required, err *e) {
    memset(w, 0, sizeof *w);
    const gguf_tensor *t = gguf_find_tensor(m->gguf, name);
    if (!t) {
        if (!required) return 0;
        return err_set(e, ERR_NOTFOUND, "tensor '%s' is missing (a %s model needs it)", name,
                       model_arch_name(m->arch));
    }
    /* trailing dims of 1 are allowed either way (converters differ on {C} vs {C, 1}) */
    int nd = (int)t->n_dims;
    while (nd > n_dims && t->ne[nd - 1] == 1) nd--;
    bool ok = nd == n_dims;
    for (int i = 0; ok && i < n_dims; i++) ok = t->ne[i] == ne[i];
    if (!ok) {
        char want[96], got[96];
        shape_str(want, sizeof want, n_dims, ne);
        shape_str(got, sizeof got, (int)t->n_dims, t->ne);
        return err_set(e, ERR_FORMAT, "tensor '%s' has shape %s, expected %s", name, got, want);
    }
    int rc = m->be->ops->weight_init(m->be, w, t, e);
    if (rc) return rc;
    w->n_dims = n_dims;
    return 0;
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
    gguf_close(m->gguf);
    free(m);
}
