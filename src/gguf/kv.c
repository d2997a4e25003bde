/* kv: the metadata side of a gguf_file: value type names and sizes, lookup by key, and the typed getters
 * with their conversion rules (gguf.h: integers convert when the value fits, floats from float32/64). */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "gguf/gguf_impl.h"

const char *gguf_vtype_name(uint32_t t) {
    static const char *const names[GGUF_VTYPE_COUNT] = {
        [GGUF_UINT8] = "uint8",     [GGUF_INT8] = "int8",     [GGUF_UINT16] = "uint16", [GGUF_INT16] = "int16",
        [GGUF_UINT32] = "uint32",   [GGUF_INT32] = "int32",   [GGUF_FLOAT32] = "float32", [GGUF_BOOL] = "bool",
        [GGUF_STRING] = "string",   [GGUF_ARRAY] = "array",   [GGUF_UINT64] = "uint64", [GGUF_INT64] = "int64",
        [GGUF_FLOAT64] = "float64",
    };
    return t < GGUF_VTYPE_COUNT ? names[t] : "?";
}

uint64_t gguf_vtype_size(uint32_t t) {
    switch (t) {
    case GGUF_UINT8: case GGUF_INT8: case GGUF_BOOL: return 1;
    case GGUF_UINT16: case GGUF_INT16: return 2;
    case GGUF_UINT32: case GGUF_INT32: case GGUF_FLOAT32: return 4;
    case GGUF_UINT64: case GGUF_INT64: case GGUF_FLOAT64: return 8;
    }
    return 0;
}

bool gguf_value_as_int(const gguf_value *v, bool *neg, uint64_t *mag) {
    int64_t s;
    switch (v->type) {
    case GGUF_UINT8: *neg = false; *mag = v->v.u8; return true;
    case GGUF_UINT16: *neg = false; *mag = v->v.u16; return true;
    case GGUF_UINT32: *neg = false; *mag = v->v.u32; return true;
    case GGUF_UINT64: *neg = false; *mag = v->v.u64; return true;
    case GGUF_INT8: s = v->v.i8; break;
    case GGUF_INT16: s = v->v.i16; break;
    case GGUF_INT32: s = v->v.i32; break;
    case GGUF_INT64: s = v->v.i64; break;
    default: return false;
    }
    *neg = s < 0;
    /* -(s + 1) + 1 avoids negating INT64_MIN */
    *mag = s < 0 ? (uint64_t)(-(s + 1)) + 1 : (uint64_t)s;
    return true;
}

uint64_t gguf_n_kv(const gguf_file *f) { return f->parts[0].n_kv; }

const gguf_kv *gguf_kv_at(const gguf_file *f, uint64_t i) {
    return i < f->parts[0].n_kv ? &f->parts[0].kvs[i] : NULL;
}

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key) {
    const gguf_part *p = &f->parts[0];
    int64_t i = gguf_index_find(&f->kv_index, key, p->kvs, sizeof *p->kvs);
    return i >= 0 ? &p->kvs[i] : NULL;
}

const gguf_kv *gguf_part_find_kv(const gguf_part *p, const char *key) {
    for (uint64_t i = 0; i < p->n_kv; i++)
        if (strcmp(p->kvs[i].key, key) == 0) return &p->kvs[i];
    return NULL;
}

static int find(const gguf_file *f, const char *key, const gguf_kv **kv, err *e) {
    *kv = gguf_find_kv(f, key);
    return *kv ? 0 : err_set(e, ERR_NOTFOUND, "key '%s' is not in the file", key);
}

static int wrong_type(const gguf_kv *kv, const char *expected, err *e) {
    return err_set(e, ERR_FORMAT, "key '%s' (at byte %" PRIu64 ") has type %s, expected %s", kv->key, kv->offset,
                   gguf_vtype_name(kv->value.type), expected);
}

/* An integer value that must lie in [lo, hi] (lo <= 0 <= hi); on success *out holds it. */
static int get_int(const gguf_file *f, const char *key, int64_t lo, uint64_t hi, const char *tname, bool *neg,
                   uint64_t *mag, err *e) {
    const gguf_kv *kv;
    int rc = find(f, key, &kv, e);
    if (rc) return rc;
    if (!gguf_value_as_int(&kv->value, neg, mag)) return wrong_type(kv, "an integer", e);
    uint64_t lo_mag = lo < 0 ? (uint64_t)(-(lo + 1)) + 1 : 0;
    if ((*neg && *mag > lo_mag) || (!*neg && *mag > hi))
        return err_set(e, ERR_FORMAT, "key '%s' (at byte %" PRIu64 ") is %s%" PRIu64 ", which does not fit %s",
                       kv->key, kv->offset, *neg ? "-" : "", *mag, tname);
    return 0;
}

/* The value as int64: mag <= 2^63 when neg (checked by get_int's range). */
static int64_t to_i64(bool neg, uint64_t mag) { return neg ? (int64_t)(0 - mag) : (int64_t)mag; }

int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out, err *e) {
    bool neg;
    uint64_t mag;
    int rc = get_int(f, key, 0, UINT32_MAX, "uint32", &neg, &mag, e);
    if (!rc) *out = (uint32_t)mag;
    return rc;
}

int gguf_get_i32(const gguf_file *f, const char *key, int32_t *out, err *e) {
    bool neg;
    uint64_t mag;
    int rc = get_int(f, key, INT32_MIN, INT32_MAX, "int32", &neg, &mag, e);
    if (!rc) *out = (int32_t)to_i64(neg, mag);
    return rc;
}

int gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out, err *e) {
    bool neg;
    uint64_t mag;
    int rc = get_int(f, key, 0, UINT64_MAX, "uint64", &neg, &mag, e);
    if (!rc) *out = mag;
    return rc;
}

int gguf_get_i64(const gguf_file *f, const char *key, int64_t *out, err *e) {
    bool neg;
    uint64_t mag;
    int rc = get_int(f, key, INT64_MIN, INT64_MAX, "int64", &neg, &mag, e);
    if (!rc) *out = to_i64(neg, mag);
    return rc;
}

int gguf_get_f32(const gguf_file *f, const char *key, float *out, err *e) {
    const gguf_kv *kv;
    int rc = find(f, key, &kv, e);
    if (rc) return rc;
    if (kv->value.type == GGUF_FLOAT32) {
        *out = kv->value.v.f32;
        return 0;
    }
    if (kv->value.type != GGUF_FLOAT64) return wrong_type(kv, "float32 or float64", e);
    double d = kv->value.v.f64;
    /* Rounding to float is accepted; a finite double beyond float's range is not (it would become inf). */
    if (isfinite(d) && fabs(d) > FLT_MAX)
        return err_set(e, ERR_FORMAT, "key '%s' (at byte %" PRIu64 ") is %g, which does not fit float32", kv->key,
                       kv->offset, d);
    *out = (float)d;
    return 0;
}

int gguf_get_bool(const gguf_file *f, const char *key, bool *out, err *e) {
    const gguf_kv *kv;
    int rc = find(f, key, &kv, e);
    if (rc) return rc;
    if (kv->value.type != GGUF_BOOL) return wrong_type(kv, "bool", e);
    *out = kv->value.v.b;
    return 0;
}

int gguf_get_str(const gguf_file *f, const char *key, gguf_str *out, err *e) {
    const gguf_kv *kv;
    int rc = find(f, key, &kv, e);
    if (rc) return rc;
    if (kv->value.type != GGUF_STRING) return wrong_type(kv, "string", e);
    *out = kv->value.v.str;
    return 0;
}

int gguf_get_arr(const gguf_file *f, const char *key, int type, gguf_array *out, err *e) {
    const gguf_kv *kv;
    int rc = find(f, key, &kv, e);
    if (rc) return rc;
    if (kv->value.type != GGUF_ARRAY) return wrong_type(kv, "array", e);
    if (type >= 0 && kv->value.v.arr.type != (enum gguf_vtype)type)
        return err_set(e, ERR_FORMAT, "key '%s' (at byte %" PRIu64 ") is an array of %s, expected an array of %s",
                       kv->key, kv->offset, gguf_vtype_name(kv->value.v.arr.type), gguf_vtype_name((uint32_t)type));
    *out = kv->value.v.arr;
    return 0;
}

int gguf_get_cstr(const gguf_file *f, const char *key, char *buf, size_t cap, err *e) {
    gguf_str s;
    int rc = gguf_get_str(f, key, &s, e);
    if (rc) return rc;
    if (s.len >= cap)
        return err_set(e, ERR_RANGE, "key '%s' is a string of %" PRIu64 " bytes, too long for a buffer of %zu",
                       key, s.len, cap);
    memcpy(buf, s.ptr, (size_t)s.len);
    buf[s.len] = 0;
    return 0;
}
