/* writer: builds a GGUF v3 file (gguf.h's writer section).
 *
 * The writer owns deep copies of every key, value and copied tensor buffer; fill callbacks and their ctx
 * stay the caller's. Metadata is kept in insertion order (replacing a key keeps its slot), tensors in
 * add order, each tensor's data at the next multiple of the alignment (zero padding), which is read from
 * the `general.alignment` key at write time so that a value copied from another file also takes effect.
 * The header is built in memory (it is small: a 260k-token vocab is a few MB); tensor data is streamed in
 * chunks, so a multi-GB model is never held whole. The output goes to PATH.tmp and is renamed over PATH
 * only once every write, the flush and the fsync succeeded. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf_impl.h"
#include "quant/qtype.h"

#define FILL_CHUNK (4u << 20) /* bytes per fill callback call */

typedef struct wkv {
    char *key; /* first field: gguf_index reads it */
    gguf_value value; /* owns its strings and element tables */
} wkv;

typedef struct wtensor {
    char *name; /* first field: gguf_index reads it */
    uint32_t type, n_dims;
    int64_t ne[GGUF_MAX_DIMS];
    uint64_t nbytes, offset;
    void *data; /* owned copy, or NULL when fill is set */
    gguf_fill_fn fill;
    void *ctx;
} wtensor;

struct gguf_writer {
    wkv *kvs;
    uint64_t n_kv, cap_kv;
    gguf_index kv_ix;
    wtensor *ts;
    uint64_t n_t, cap_t;
    gguf_index t_ix;
};

gguf_writer *gguf_writer_new(void) { return calloc(1, sizeof(gguf_writer)); }

static void free_value(gguf_value *v) {
    if (v->type == GGUF_STRING) {
        free((void *)v->v.str.ptr);
    } else if (v->type == GGUF_ARRAY) {
        gguf_array *a = &v->v.arr;
        free((void *)a->data);
        if (a->strs)
            for (uint64_t i = 0; i < a->n; i++) free((void *)a->strs[i].ptr);
        if (a->arrs)
            for (uint64_t i = 0; i < a->n; i++) free_value((gguf_value *)&a->arrs[i]);
        free((void *)a->strs);
        free((void *)a->arrs);
    }
    memset(v, 0, sizeof *v);
}

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (uint64_t i = 0; i < w->n_kv; i++) {
        free(w->kvs[i].key);
        free_value(&w->kvs[i].value);
    }
    for (uint64_t i = 0; i < w->n_t; i++) {
        free(w->ts[i].name);
        free(w->ts[i].data);
    }
    free(w->kvs);
    free(w->ts);
    gguf_index_free(&w->kv_ix);
    gguf_index_free(&w->t_ix);
    free(w);
}

static char *dup_bytes(const char *s, uint64_t n) {
    if (n > SIZE_MAX - 1) return NULL;
    char *d = malloc((size_t)n + 1);
    if (d) {
        if (n) memcpy(d, s, (size_t)n);
        d[n] = 0;
    }
    return d;
}

static int copy_value(gguf_value *dst, const gguf_value *src, int depth);

static int copy_array(gguf_array *d, const gguf_array *s, int depth) {
    memset(d, 0, sizeof *d);
    d->type = s->type;
    d->n = s->n;
    if (depth > GGUF_MAX_DEPTH || s->n > GGUF_MAX_ARRAY) return ERR_RANGE;
    if (s->n == 0) return 0;
    uint64_t esz = gguf_vtype_size(s->type);
    if (esz) {
        if (!s->data) return ERR_ARG;
        void *p = malloc((size_t)(s->n * esz));
        if (!p) return ERR_NOMEM;
        memcpy(p, s->data, (size_t)(s->n * esz));
        d->data = p;
        return 0;
    }
    if (s->type == GGUF_STRING) {
        if (!s->strs) return ERR_ARG;
        gguf_str *strs = calloc((size_t)s->n, sizeof *strs);
        if (!strs) return ERR_NOMEM;
        d->strs = strs;
        for (uint64_t i = 0; i < s->n; i++) {
            if (s->strs[i].len > GGUF_MAX_STRING || (s->strs[i].len && !s->strs[i].ptr)) return ERR_ARG;
            if (!(strs[i].ptr = dup_bytes(s->strs[i].ptr, s->strs[i].len))) return ERR_NOMEM;
            strs[i].len = s->strs[i].len;
        }
        return 0;
    }
    if (s->type != GGUF_ARRAY || !s->arrs) return ERR_ARG;
    gguf_value *arrs = calloc((size_t)s->n, sizeof *arrs);
    if (!arrs) return ERR_NOMEM;
    d->arrs = arrs;
    for (uint64_t i = 0; i < s->n; i++) {
        if (s->arrs[i].type != GGUF_ARRAY) return ERR_ARG;
        int rc = copy_value(&arrs[i], &s->arrs[i], depth + 1);
        if (rc) return rc;
    }
    return 0;
}

static int copy_value(gguf_value *dst, const gguf_value *src, int depth) {
    *dst = *src;
    if (src->type >= GGUF_VTYPE_COUNT) return ERR_ARG;
    if (src->type == GGUF_STRING) {
        dst->v.str.ptr = NULL;
        if (src->v.str.len > GGUF_MAX_STRING || (src->v.str.len && !src->v.str.ptr)) return ERR_ARG;
        if (!(dst->v.str.ptr = dup_bytes(src->v.str.ptr, src->v.str.len))) return ERR_NOMEM;
    } else if (src->type == GGUF_ARRAY) {
        return copy_array(&dst->v.arr, &src->v.arr, depth);
    }
    return 0;
}

static bool key_ok(const char *key) { return key && strlen(key) <= GGUF_MAX_KEY; }

/* Takes ownership of *v (freed on error). */
static int set_owned(gguf_writer *w, const char *key, gguf_value *v) {
    int64_t i = gguf_index_find(&w->kv_ix, key, w->kvs, sizeof *w->kvs);
    if (i >= 0) {
        free_value(&w->kvs[i].value);
        w->kvs[i].value = *v;
        return 0;
    }
    if (w->n_kv >= GGUF_MAX_KV) goto fail_range;
    if (w->n_kv == w->cap_kv) {
        uint64_t cap = w->cap_kv ? 2 * w->cap_kv : 16;
        wkv *nk = realloc(w->kvs, (size_t)cap * sizeof *nk);
        if (!nk) goto fail_nomem;
        w->kvs = nk;
        w->cap_kv = cap;
    }
    char *k = dup_bytes(key, strlen(key));
    if (!k) goto fail_nomem;
    w->kvs[w->n_kv] = (wkv){k, *v};
    if (gguf_index_insert(&w->kv_ix, w->n_kv, w->kvs, sizeof *w->kvs) == -2) {
        free(k);
        goto fail_nomem;
    }
    w->n_kv++;
    return 0;
fail_range:
    free_value(v);
    return ERR_RANGE;
fail_nomem:
    free_value(v);
    return ERR_NOMEM;
}

int gguf_writer_set_value(gguf_writer *w, const char *key, const gguf_value *v) {
    if (!w || !key_ok(key) || !v) return ERR_ARG;
    gguf_value c;
    int rc = copy_value(&c, v, 1);
    if (rc) {
        free_value(&c);
        return rc;
    }
    return set_owned(w, key, &c);
}

#define SETTER(fn, ctype, vt, field)                                \
    int fn(gguf_writer *w, const char *key, ctype x) {              \
        gguf_value v = {.type = vt};                                \
        v.v.field = x;                                              \
        return gguf_writer_set_value(w, key, &v);                   \
    }
SETTER(gguf_writer_set_u8, uint8_t, GGUF_UINT8, u8)
SETTER(gguf_writer_set_i8, int8_t, GGUF_INT8, i8)
SETTER(gguf_writer_set_u16, uint16_t, GGUF_UINT16, u16)
SETTER(gguf_writer_set_i16, int16_t, GGUF_INT16, i16)
SETTER(gguf_writer_set_u32, uint32_t, GGUF_UINT32, u32)
SETTER(gguf_writer_set_i32, int32_t, GGUF_INT32, i32)
SETTER(gguf_writer_set_u64, uint64_t, GGUF_UINT64, u64)
SETTER(gguf_writer_set_i64, int64_t, GGUF_INT64, i64)
SETTER(gguf_writer_set_f32, float, GGUF_FLOAT32, f32)
SETTER(gguf_writer_set_f64, double, GGUF_FLOAT64, f64)
SETTER(gguf_writer_set_bool, bool, GGUF_BOOL, b)
#undef SETTER

int gguf_writer_set_str(gguf_writer *w, const char *key, const char *s) {
    if (!s) return ERR_ARG;
    gguf_value v = {.type = GGUF_STRING};
    v.v.str = (gguf_str){s, strlen(s)};
    return gguf_writer_set_value(w, key, &v);
}

int gguf_writer_set_arr(gguf_writer *w, const char *key, enum gguf_vtype type, const void *data, uint64_t n) {
    if (gguf_vtype_size(type) == 0 || (n && !data)) return ERR_ARG;
    gguf_value v = {.type = GGUF_ARRAY};
    v.v.arr = (gguf_array){.type = type, .n = n, .data = data};
    return gguf_writer_set_value(w, key, &v);
}

int gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs, uint64_t n) {
    if (!w || !key_ok(key) || (n && !strs) || n > GGUF_MAX_ARRAY) return ERR_ARG;
    gguf_value v = {.type = GGUF_ARRAY};
    v.v.arr.type = GGUF_STRING;
    v.v.arr.n = n;
    if (n == 0) return set_owned(w, key, &v);
    gguf_str *ss = calloc((size_t)n, sizeof *ss);
    if (!ss) return ERR_NOMEM;
    v.v.arr.strs = ss;
    for (uint64_t i = 0; i < n; i++) {
        if (!strs[i] || !(ss[i].ptr = dup_bytes(strs[i], strlen(strs[i])))) {
            free_value(&v);
            return strs[i] ? ERR_NOMEM : ERR_ARG;
        }
        ss[i].len = strlen(strs[i]);
    }
    return set_owned(w, key, &v);
}

int gguf_writer_set_alignment(gguf_writer *w, uint32_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) return ERR_ARG;
    return gguf_writer_set_u32(w, "general.alignment", alignment);
}

static int add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne,
                      const void *data, gguf_fill_fn fill, void *ctx, err *e) {
    if (!w || !name || !ne) return err_set(e, ERR_ARG, "gguf_writer_add_tensor: NULL argument");
    if (strlen(name) > GGUF_MAX_KEY)
        return err_set(e, ERR_ARG, "tensor name of %zu bytes exceeds the cap of %llu", strlen(name), GGUF_MAX_KEY);
    if (n_dims == 0 || n_dims > GGUF_MAX_DIMS)
        return err_set(e, ERR_ARG, "tensor '%s': n_dims %" PRIu32 ", expected 1..%d", name, n_dims, GGUF_MAX_DIMS);
    const qtype_info *qi = qtype_get(type);
    if (!qi)
        return err_set(e, ERR_UNSUPPORTED, "tensor '%s': type id %" PRIu32 " is not a known ggml type (supported: %s)",
                       name, type, qtype_supported_list());
    wtensor t = {.type = type, .n_dims = n_dims, .ne = {1, 1, 1, 1}, .fill = fill, .ctx = ctx};
    int64_t n = 1;
    bool overflow = false;
    for (uint32_t j = 0; j < n_dims; j++) {
        if (ne[j] < 0) return err_set(e, ERR_ARG, "tensor '%s': ne[%" PRIu32 "] = %" PRId64 " < 0", name, j, ne[j]);
        t.ne[j] = ne[j];
        if (ne[j] && n > INT64_MAX / ne[j]) overflow = true;
        else n *= ne[j];
    }
    bool zero = t.ne[0] == 0 || t.ne[1] == 0 || t.ne[2] == 0 || t.ne[3] == 0;
    if (zero) n = 0;
    if ((overflow && !zero) || ne[0] % qi->blck != 0 || !qtype_nbytes(type, n, &t.nbytes))
        return err_set(e, ERR_ARG, "tensor '%s': ne[0] = %" PRId64 " must be a multiple of %s's block size %" PRId64
                       " and the size must be addressable", name, ne[0], qi->name, qi->blck);
    if (w->n_t >= GGUF_MAX_TENSORS)
        return err_set(e, ERR_RANGE, "more than %llu tensors", GGUF_MAX_TENSORS);
    if (w->n_t == w->cap_t) {
        uint64_t cap = w->cap_t ? 2 * w->cap_t : 16;
        wtensor *nt = realloc(w->ts, (size_t)cap * sizeof *nt);
        if (!nt) return err_set(e, ERR_NOMEM, "out of memory adding tensor '%s'", name);
        w->ts = nt;
        w->cap_t = cap;
    }
    if (!(t.name = dup_bytes(name, strlen(name)))) return err_set(e, ERR_NOMEM, "out of memory");
    if (!fill && t.nbytes) {
        if (!data) {
            free(t.name);
            return err_set(e, ERR_ARG, "tensor '%s': data is NULL", name);
        }
        if (!(t.data = malloc((size_t)t.nbytes))) {
            free(t.name);
            return err_set(e, ERR_NOMEM, "out of memory copying %" PRIu64 " bytes of tensor '%s'", t.nbytes, name);
        }
        memcpy(t.data, data, (size_t)t.nbytes);
    }
    w->ts[w->n_t] = t;
    int64_t dup = gguf_index_insert(&w->t_ix, w->n_t, w->ts, sizeof *w->ts);
    if (dup != -1) {
        free(t.name);
        free(t.data);
        return dup == -2 ? err_set(e, ERR_NOMEM, "out of memory")
                         : err_set(e, ERR_ARG, "duplicate tensor name '%s' (tensor %" PRId64 ")", name, dup);
    }
    w->n_t++;
    return 0;
}

int gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne,
                           const void *data, err *e) {
    return add_tensor(w, name, type, n_dims, ne, data, NULL, NULL, e);
}

int gguf_writer_add_tensor_fill(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                const int64_t *ne, gguf_fill_fn fill, void *ctx, err *e) {
    if (!fill) return err_set(e, ERR_ARG, "tensor '%s': fill callback is NULL", name ? name : "?");
    return add_tensor(w, name, type, n_dims, ne, NULL, fill, ctx, e);
}

/* ---- serialization ---- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} buf;

static void put(buf *b, const void *src, size_t n) {
    if (b->oom) return;
    if (n > b->cap - b->n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->n < n) {
            if (cap > SIZE_MAX / 2) {
                b->oom = true;
                return;
            }
            cap *= 2;
        }
        uint8_t *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(buf *b, const char *s, uint64_t n) {
    put_u64(b, n);
    put(b, s, (size_t)n);
}

static void put_value(buf *b, const gguf_value *v);

static void put_array(buf *b, const gguf_array *a) {
    put_u32(b, a->type);
    put_u64(b, a->n);
    uint64_t esz = gguf_vtype_size(a->type);
    if (esz) put(b, a->data, (size_t)(a->n * esz));
    else if (a->type == GGUF_STRING)
        for (uint64_t i = 0; i < a->n; i++) put_str(b, a->strs[i].ptr, a->strs[i].len);
    else
        for (uint64_t i = 0; i < a->n; i++) put_value(b, &a->arrs[i]);
}

static void put_value(buf *b, const gguf_value *v) {
    switch (v->type) {
    case GGUF_STRING: put_str(b, v->v.str.ptr, v->v.str.len); break;
    case GGUF_ARRAY: put_array(b, &v->v.arr); break;
    case GGUF_BOOL: {
        uint8_t x = v->v.b ? 1 : 0;
        put(b, &x, 1);
        break;
    }
    default: put(b, &v->v, (size_t)gguf_vtype_size(v->type)); break;
    }
}

static const uint8_t zeros[4096];

static int write_all(FILE *fp, const void *p, uint64_t n, const char *tmp, err *e) {
    if (n && fwrite(p, 1, (size_t)n, fp) != (size_t)n)
        return err_set(e, ERR_IO, "writing %s: %s", tmp, strerror(errno));
    return 0;
}

static int write_zeros(FILE *fp, uint64_t n, const char *tmp, err *e) {
    for (int rc; n; n -= n > sizeof zeros ? sizeof zeros : n)
        if ((rc = write_all(fp, zeros, n > sizeof zeros ? sizeof zeros : n, tmp, e))) return rc;
    return 0;
}

static uint64_t pad_to(uint64_t x, uint32_t al) { return (al - x % al) % al; }

static int write_tensor_data(FILE *fp, const wtensor *t, uint8_t **chunk, const char *tmp, err *e) {
    if (!t->fill) return write_all(fp, t->data, t->nbytes, tmp, e);
    if (!*chunk && !(*chunk = malloc(FILL_CHUNK))) return err_set(e, ERR_NOMEM, "out of memory for a write chunk");
    for (uint64_t off = 0; off < t->nbytes;) {
        uint64_t n = t->nbytes - off < FILL_CHUNK ? t->nbytes - off : FILL_CHUNK;
        /* A callback that fails without setting e still leaves a message (and never a 0 code). */
        err_set(e, ERR_IO, "the fill callback failed without a message");
        int rc = t->fill(t->ctx, *chunk, off, n, e);
        if (rc) {
            err_wrap(e, "filling tensor '%s' at byte %" PRIu64, t->name, off);
            return rc < 0 ? rc : ERR_IO;
        }
        if ((rc = write_all(fp, *chunk, n, tmp, e))) return rc;
        off += n;
    }
    return 0;
}

int gguf_writer_write(gguf_writer *w, const char *path, err *e) {
    if (!w || !path) return err_set(e, ERR_ARG, "gguf_writer_write: NULL argument");
    uint32_t al = GGUF_DEFAULT_ALIGNMENT;
    int64_t ai = gguf_index_find(&w->kv_ix, "general.alignment", w->kvs, sizeof *w->kvs);
    if (ai >= 0) {
        const gguf_value *v = &w->kvs[ai].value;
        if (v->type != GGUF_UINT32 || v->v.u32 == 0 || (v->v.u32 & (v->v.u32 - 1)) != 0)
            return err_set(e, ERR_ARG, "general.alignment must be a uint32 power of two (found %s)",
                           gguf_vtype_name(v->type));
        al = v->v.u32;
    }
    uint64_t off = 0;
    for (uint64_t i = 0; i < w->n_t; i++) {
        w->ts[i].offset = off;
        off += w->ts[i].nbytes;
        off += pad_to(off, al);
    }

    buf b = {0};
    put(&b, "GGUF", 4);
    put_u32(&b, 3);
    put_u64(&b, w->n_t);
    put_u64(&b, w->n_kv);
    for (uint64_t i = 0; i < w->n_kv; i++) {
        put_str(&b, w->kvs[i].key, strlen(w->kvs[i].key));
        put_u32(&b, w->kvs[i].value.type);
        put_value(&b, &w->kvs[i].value);
    }
    for (uint64_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->ts[i];
        put_str(&b, t->name, strlen(t->name));
        put_u32(&b, t->n_dims);
        for (uint32_t j = 0; j < t->n_dims; j++) put_u64(&b, (uint64_t)t->ne[j]);
        put_u32(&b, t->type);
        put_u64(&b, t->offset);
    }
    if (b.oom) {
        free(b.p);
        return err_set(e, ERR_NOMEM, "out of memory building the GGUF header");
    }

    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) {
        free(b.p);
        return err_set(e, ERR_NOMEM, "out of memory");
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    int rc = 0;
    uint8_t *chunk = NULL;
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        rc = err_set(e, errno == ENOENT ? ERR_NOTFOUND : ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    rc = write_all(fp, b.p, b.n, tmp, e);
    if (!rc) rc = write_zeros(fp, pad_to(b.n, al), tmp, e);
    for (uint64_t i = 0; i < w->n_t && !rc; i++) {
        rc = write_tensor_data(fp, &w->ts[i], &chunk, tmp, e);
        if (!rc) rc = write_zeros(fp, pad_to(w->ts[i].nbytes, al), tmp, e);
    }
    if (!rc && (fflush(fp) != 0 || fsync(fileno(fp)) != 0))
        rc = err_set(e, ERR_IO, "writing %s: %s", tmp, strerror(errno));
    if (fclose(fp) != 0 && !rc) rc = err_set(e, ERR_IO, "closing %s: %s", tmp, strerror(errno));
    if (!rc && rename(tmp, path) != 0)
        rc = err_set(e, ERR_IO, "renaming %s to %s: %s", tmp, path, strerror(errno));
    if (rc) unlink(tmp);
out:
    free(chunk);
    free(tmp);
    free(b.p);
    return rc;
}
