/* reader: parses one GGUF v3 part (header, key/values, tensor infos) from a read-only mapping, and opens,
 * closes and answers the tensor questions of a gguf_file. The format and the checks are listed in gguf.h.
 *
 * Everything is read through a cursor whose every read first checks the bytes left (overflow-safe: we
 * compare n against size - pos, never pos + n against size). Counts are checked against the caps in
 * gguf.h AND against what the remaining bytes could possibly hold before anything is allocated, so the
 * memory a hostile file makes us allocate is bounded by a small multiple of its size. Values point into
 * the mapping (strings, fixed-size array elements); only tables of strings/arrays and the NUL-terminated
 * key and name copies are allocated (in the file's arena). Tensor data pages are never touched here. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf_impl.h"
#include "quant/qtype.h"

_Static_assert(offsetof(gguf_kv, key) == 0, "gguf_index needs the name as the first field");
_Static_assert(offsetof(gguf_tensor, name) == 0, "gguf_index needs the name as the first field");

/* The smallest encodings, used to refuse counts the rest of the file cannot hold: a key/value is at
 * least a key length (8) + type (4) + a 1-byte value; a tensor info at least a name length (8) + n_dims
 * (4) + one ne (8) + type (4) + offset (8); a string element 8, an array element type (4) + count (8). */
#define MIN_KV_BYTES 13u
#define MIN_TENSOR_INFO_BYTES 32u
#define MIN_STRING_BYTES 8u
#define MIN_ARRAY_BYTES 12u

typedef struct cursor {
    const uint8_t *p;
    uint64_t size, pos;
    err *e;
} cursor;

static uint64_t left(const cursor *c) { return c->size - c->pos; }

static int need(cursor *c, uint64_t n, const char *what) {
    if (n > left(c))
        return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": %s needs %" PRIu64
                       " bytes but only %" PRIu64 " are left in the file", c->pos, what, n, left(c));
    return 0;
}

static int rd(cursor *c, void *dst, uint64_t n, const char *what) {
    int rc = need(c, n, what);
    if (rc) return rc;
    memcpy(dst, c->p + c->pos, (size_t)n);
    c->pos += n;
    return 0;
}

static int rd_u32(cursor *c, uint32_t *v, const char *what) { return rd(c, v, 4, what); }
static int rd_u64(cursor *c, uint64_t *v, const char *what) { return rd(c, v, 8, what); }

/* A gguf string: u64 length then bytes, left in the mapping. */
static int rd_str(cursor *c, gguf_str *s, uint64_t cap, const char *what) {
    uint64_t at = c->pos, len;
    int rc = rd_u64(c, &len, what);
    if (rc) return rc;
    if (len > cap)
        return err_set(c->e, ERR_RANGE, "at byte %" PRIu64 ": %s length %" PRIu64 " exceeds the cap of %" PRIu64
                       " bytes", at, what, len, cap);
    if (len > left(c))
        return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": %s length %" PRIu64 " exceeds the %" PRIu64
                       " bytes left in the file", at, what, len, left(c));
    s->ptr = (const char *)c->p + c->pos;
    s->len = len;
    c->pos += len;
    return 0;
}

/* A key or tensor name: a gguf string of at most GGUF_MAX_KEY bytes without NUL, copied to the arena as
 * a C string (a NUL inside would make two different names compare equal as C strings). */
static int rd_name(gguf_file *f, cursor *c, const char **out, const char *what) {
    uint64_t at = c->pos;
    gguf_str s;
    int rc = rd_str(c, &s, GGUF_MAX_KEY, what);
    if (rc) return rc;
    if (memchr(s.ptr, 0, (size_t)s.len))
        return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": %s '%.*s...' contains a NUL byte", at, what,
                       (int)strnlen(s.ptr, (size_t)s.len), s.ptr);
    char *copy = gguf_arena_alloc(&f->arena, s.len + 1);
    if (!copy) return err_set(c->e, ERR_NOMEM, "out of memory copying a %" PRIu64 "-byte %s", s.len, what);
    memcpy(copy, s.ptr, (size_t)s.len);
    *out = copy;
    return 0;
}

/* Adds context to the message of a failed read and passes its code on (err_wrap returns e's code, which
 * would be wrong with e == NULL). */
static int wrapped(int rc, err *e, const char *kind, const char *name) {
    err_wrap(e, "%s '%s'", kind, name);
    return rc;
}

static int parse_value(gguf_file *f, cursor *c, uint32_t type, uint64_t type_at, int depth, gguf_value *out);

/* An array body (element type, count, elements) at nesting level `depth` (1 = a key's own value). */
static int parse_array(gguf_file *f, cursor *c, int depth, gguf_array *a) {
    uint64_t at = c->pos, n;
    uint32_t et;
    int rc = rd_u32(c, &et, "array element type");
    if (rc) return rc;
    if (et >= GGUF_VTYPE_COUNT)
        return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": array element type %" PRIu32
                       " is not a GGUF value type (expected 0..%d)", at, et, GGUF_VTYPE_COUNT - 1);
    if ((rc = rd_u64(c, &n, "array count"))) return rc;
    if (n > GGUF_MAX_ARRAY)
        return err_set(c->e, ERR_RANGE, "at byte %" PRIu64 ": array count %" PRIu64 " exceeds the cap of %"
                       PRIu64 " elements", at + 4, n, (uint64_t)GGUF_MAX_ARRAY);
    a->type = (enum gguf_vtype)et;
    a->n = n;
    uint64_t esz = gguf_vtype_size(et);
    if (esz) {
        if (n > left(c) / esz)
            return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": array count %" PRIu64 " of %s (%" PRIu64
                           " bytes each) exceeds the %" PRIu64 " bytes left in the file",
                           at + 4, n, gguf_vtype_name(et), esz, left(c));
        a->data = c->p + c->pos;
        c->pos += n * esz;
        return 0;
    }
    if (et == GGUF_ARRAY && depth >= GGUF_MAX_DEPTH)
        return err_set(c->e, ERR_RANGE, "at byte %" PRIu64 ": arrays nested deeper than %d levels (the cap)",
                       at, GGUF_MAX_DEPTH);
    uint64_t min = et == GGUF_STRING ? MIN_STRING_BYTES : MIN_ARRAY_BYTES;
    if (n > left(c) / min)
        return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": array count %" PRIu64 " of %s (at least %" PRIu64
                       " bytes each) exceeds the %" PRIu64 " bytes left in the file",
                       at + 4, n, gguf_vtype_name(et), min, left(c));
    if (n == 0) return 0;
    if (et == GGUF_STRING) {
        gguf_str *strs = gguf_arena_alloc(&f->arena, n * sizeof *strs);
        if (!strs) return err_set(c->e, ERR_NOMEM, "out of memory for an array of %" PRIu64 " strings", n);
        for (uint64_t i = 0; i < n; i++)
            if ((rc = rd_str(c, &strs[i], GGUF_MAX_STRING, "string"))) return rc;
        a->strs = strs;
        return 0;
    }
    gguf_value *arrs = gguf_arena_alloc(&f->arena, n * sizeof *arrs);
    if (!arrs) return err_set(c->e, ERR_NOMEM, "out of memory for an array of %" PRIu64 " arrays", n);
    for (uint64_t i = 0; i < n; i++)
        if ((rc = parse_value(f, c, GGUF_ARRAY, at, depth + 1, &arrs[i]))) return rc;
    a->arrs = arrs;
    return 0;
}

static int parse_value(gguf_file *f, cursor *c, uint32_t type, uint64_t type_at, int depth, gguf_value *out) {
    out->type = (enum gguf_vtype)type;
    switch (type) {
    case GGUF_UINT8: return rd(c, &out->v.u8, 1, "uint8 value");
    case GGUF_INT8: return rd(c, &out->v.i8, 1, "int8 value");
    case GGUF_UINT16: return rd(c, &out->v.u16, 2, "uint16 value");
    case GGUF_INT16: return rd(c, &out->v.i16, 2, "int16 value");
    case GGUF_UINT32: return rd(c, &out->v.u32, 4, "uint32 value");
    case GGUF_INT32: return rd(c, &out->v.i32, 4, "int32 value");
    case GGUF_FLOAT32: return rd(c, &out->v.f32, 4, "float32 value");
    case GGUF_UINT64: return rd(c, &out->v.u64, 8, "uint64 value");
    case GGUF_INT64: return rd(c, &out->v.i64, 8, "int64 value");
    case GGUF_FLOAT64: return rd(c, &out->v.f64, 8, "float64 value");
    case GGUF_BOOL: {
        /* Read as a byte: any nonzero byte is true (storing 2 into a C bool's bytes would be UB). */
        uint8_t b;
        int rc = rd(c, &b, 1, "bool value");
        out->v.b = b != 0;
        return rc;
    }
    case GGUF_STRING: return rd_str(c, &out->v.str, GGUF_MAX_STRING, "string");
    case GGUF_ARRAY: return parse_array(f, c, depth, &out->v.arr);
    }
    return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": value type %" PRIu32
                   " is not a GGUF value type (expected 0..%d)", type_at, type, GGUF_VTYPE_COUNT - 1);
}

static int parse_kvs(gguf_file *f, gguf_part *p, cursor *c, gguf_index *ix) {
    for (uint64_t i = 0; i < p->n_kv; i++) {
        gguf_kv *kv = &p->kvs[i];
        kv->offset = c->pos;
        uint32_t type;
        int rc = rd_name(f, c, &kv->key, "key");
        if (rc) return rc;
        uint64_t type_at = c->pos;
        if ((rc = rd_u32(c, &type, "value type"))) return wrapped(rc, c->e, "key", kv->key);
        if ((rc = parse_value(f, c, type, type_at, 1, &kv->value))) return wrapped(rc, c->e, "key", kv->key);
        int64_t dup = gguf_index_insert(ix, i, p->kvs, sizeof *p->kvs);
        if (dup == -2) return err_set(c->e, ERR_NOMEM, "out of memory indexing keys");
        if (dup >= 0)
            return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": duplicate key '%s' (first at byte %" PRIu64 ")",
                           kv->offset, kv->key, p->kvs[dup].offset);
    }
    p->alignment = GGUF_DEFAULT_ALIGNMENT;
    int64_t ai = gguf_index_find(ix, "general.alignment", p->kvs, sizeof *p->kvs);
    if (ai >= 0) {
        const gguf_kv *kv = &p->kvs[ai];
        if (kv->value.type != GGUF_UINT32)
            return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": general.alignment has type %s, expected uint32",
                           kv->offset, gguf_vtype_name(kv->value.type));
        uint32_t al = kv->value.v.u32;
        if (al == 0 || (al & (al - 1)) != 0)
            return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": general.alignment is %" PRIu32
                           ", expected a nonzero power of two", kv->offset, al);
        p->alignment = al;
    }
    return 0;
}

static int parse_tensor_info(gguf_file *f, gguf_part *p, cursor *c, gguf_tensor *t) {
    uint64_t at = c->pos;
    uint32_t n_dims, type;
    int rc = rd_name(f, c, &t->name, "tensor name");
    if (rc) return rc;
    if ((rc = rd_u32(c, &n_dims, "n_dims"))) return wrapped(rc, c->e, "tensor", t->name);
    if (n_dims == 0 || n_dims > GGUF_MAX_DIMS)
        return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": tensor '%s' has n_dims %" PRIu32
                       ", expected 1..%d", c->pos - 4, t->name, n_dims, GGUF_MAX_DIMS);
    t->n_dims = n_dims;
    int64_t n_el = 1;
    bool overflow = false;
    for (uint32_t j = 0; j < GGUF_MAX_DIMS; j++) {
        uint64_t ne = 1;
        if (j < n_dims) {
            if ((rc = rd_u64(c, &ne, "ne"))) return wrapped(rc, c->e, "tensor", t->name);
            if (ne > INT64_MAX)
                return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": tensor '%s' has ne[%" PRIu32 "] = %" PRIu64
                               ", more than INT64_MAX", c->pos - 8, t->name, j, ne);
        }
        t->ne[j] = (int64_t)ne;
        if (ne != 0 && n_el > INT64_MAX / (int64_t)ne) overflow = true;
        else n_el *= (int64_t)ne;
    }
    /* A zero dimension makes the product 0 whatever the others are; only a nonzero product can overflow. */
    bool any_zero = t->ne[0] == 0 || t->ne[1] == 0 || t->ne[2] == 0 || t->ne[3] == 0;
    if (overflow && !any_zero)
        return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": tensor '%s' shape [%" PRId64 ", %" PRId64 ", %"
                       PRId64 ", %" PRId64 "] has more than INT64_MAX elements", at, t->name,
                       t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
    t->n_elements = any_zero ? 0 : n_el;
    uint64_t type_at = c->pos;
    if ((rc = rd_u32(c, &type, "tensor type"))) return wrapped(rc, c->e, "tensor", t->name);
    const qtype_info *qi = qtype_get(type);
    if (!qi)
        return err_set(c->e, ERR_UNSUPPORTED, "at byte %" PRIu64 ": tensor '%s' has type id %" PRIu32
                       ", which is not a known ggml type (supported: %s)", type_at, t->name, type,
                       qtype_supported_list());
    t->type = type;
    if (t->ne[0] % qi->blck != 0)
        return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": tensor '%s' of type %s has ne[0] = %" PRId64
                       ", not a multiple of its block size %" PRId64, at, t->name, qi->name, t->ne[0], qi->blck);
    if (!qtype_nbytes(type, t->n_elements, &t->nbytes))
        return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": tensor '%s' (%" PRId64 " elements of %s) is too "
                       "large to address", at, t->name, t->n_elements, qi->name);
    uint64_t off_at = c->pos;
    if ((rc = rd_u64(c, &t->offset, "tensor offset"))) return wrapped(rc, c->e, "tensor", t->name);
    if (t->offset % p->alignment != 0)
        return err_set(c->e, ERR_FORMAT, "at byte %" PRIu64 ": tensor '%s' data offset %" PRIu64
                       " is not a multiple of the alignment %" PRIu32, off_at, t->name, t->offset, p->alignment);
    return 0;
}

typedef struct span {
    uint64_t off, end;
    uint64_t i;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* Tensor data of one part: inside the file, and no two tensors share a byte (sorted by offset, each must
 * end before the next begins; zero-size tensors overlap nothing). */
static int check_data(gguf_file *f, gguf_part *p, uint64_t first, err *e) {
    if (p->n_tensors == 0) return 0; /* f->tensors may still be NULL */
    gguf_tensor *ts = f->tensors + first;
    uint64_t room = p->size - p->data_offset;
    for (uint64_t i = 0; i < p->n_tensors; i++) {
        gguf_tensor *t = &ts[i];
        if (t->offset > room || t->nbytes > room - t->offset)
            return err_set(e, ERR_FORMAT, "tensor '%s' data (%" PRIu64 " bytes at offset %" PRIu64
                           " of the data section, which starts at byte %" PRIu64 ") runs past the end of the file (%"
                           PRIu64 " bytes)", t->name, t->nbytes, t->offset, p->data_offset, p->size);
        t->data = p->base + p->data_offset + t->offset;
    }
    if (p->n_tensors < 2) return 0;
    span *s = malloc((size_t)p->n_tensors * sizeof *s);
    if (!s) return err_set(e, ERR_NOMEM, "out of memory checking %" PRIu64 " tensors", p->n_tensors);
    for (uint64_t i = 0; i < p->n_tensors; i++) s[i] = (span){ts[i].offset, ts[i].offset + ts[i].nbytes, i};
    qsort(s, (size_t)p->n_tensors, sizeof *s, cmp_span);
    int rc = 0;
    uint64_t prev = UINT64_MAX; /* the nonempty span that ends last so far */
    for (uint64_t k = 0; k < p->n_tensors && !rc; k++) {
        if (s[k].off == s[k].end) continue;
        if (prev != UINT64_MAX && s[prev].end > s[k].off)
            rc = err_set(e, ERR_FORMAT, "tensors '%s' (data [%" PRIu64 ", %" PRIu64 ")) and '%s' (data [%" PRIu64
                         ", %" PRIu64 ")) overlap", ts[s[prev].i].name, s[prev].off, s[prev].end, ts[s[k].i].name,
                         s[k].off, s[k].end);
        if (prev == UINT64_MAX || s[k].end > s[prev].end) prev = k;
    }
    free(s);
    return rc;
}

int gguf_parse_part(gguf_file *f, uint32_t part_no, err *e) {
    gguf_part *p = &f->parts[part_no];
    cursor c = {p->base, p->size, 0, e};
    char magic[4];
    int rc = rd(&c, magic, 4, "magic");
    if (rc) return rc;
    if (memcmp(magic, "GGUF", 4) != 0) {
        char shown[17];
        size_t n = 0;
        for (int i = 0; i < 4; i++) {
            unsigned char ch = (unsigned char)magic[i];
            if (ch >= 32 && ch < 127 && ch != '\\' && ch != '"') shown[n++] = (char)ch;
            else n += (size_t)snprintf(shown + n, sizeof shown - n, "\\x%02x", ch);
        }
        shown[n] = 0;
        return err_set(e, ERR_FORMAT, "at byte 0: magic is \"%s\", expected \"GGUF\" (not a GGUF file)", shown);
    }
    if ((rc = rd_u32(&c, &p->version, "version"))) return rc;
    if (p->version == 1 || p->version == 2)
        return err_set(e, ERR_UNSUPPORTED, "at byte 4: GGUF version %" PRIu32 " is not supported (only v3); "
                       "convert the file with a current gguf-py or llama.cpp", p->version);
    if (p->version != 3)
        return err_set(e, ERR_UNSUPPORTED, "at byte 4: GGUF version %" PRIu32 " is not supported (only v3)",
                       p->version);
    uint64_t n_tensors, n_kv;
    if ((rc = rd_u64(&c, &n_tensors, "n_tensors")) || (rc = rd_u64(&c, &n_kv, "n_kv"))) return rc;
    if (n_tensors > GGUF_MAX_TENSORS)
        return err_set(e, ERR_RANGE, "at byte 8: n_tensors %" PRIu64 " exceeds the cap of %" PRIu64, n_tensors,
                       (uint64_t)GGUF_MAX_TENSORS);
    if (n_kv > GGUF_MAX_KV)
        return err_set(e, ERR_RANGE, "at byte 16: n_kv %" PRIu64 " exceeds the cap of %" PRIu64, n_kv,
                       (uint64_t)GGUF_MAX_KV);
    /* Both are capped at 2^20, so these products cannot overflow. */
    if (n_kv * MIN_KV_BYTES + n_tensors * MIN_TENSOR_INFO_BYTES > left(&c))
        return err_set(e, ERR_FORMAT, "at byte 8: %" PRIu64 " tensors and %" PRIu64 " key/values need at least %"
                       PRIu64 " bytes but only %" PRIu64 " are left in the file", n_tensors, n_kv,
                       n_kv * MIN_KV_BYTES + n_tensors * MIN_TENSOR_INFO_BYTES, left(&c));
    if (f->n_tensors + n_tensors > GGUF_MAX_TENSORS)
        return err_set(e, ERR_RANGE, "the parts so far hold %" PRIu64 " tensors, more than the cap of %" PRIu64,
                       f->n_tensors + n_tensors, (uint64_t)GGUF_MAX_TENSORS);
    p->n_kv = n_kv;
    p->n_tensors = n_tensors;
    if (n_kv) {
        p->kvs = gguf_arena_alloc(&f->arena, n_kv * sizeof *p->kvs);
        if (!p->kvs) return err_set(e, ERR_NOMEM, "out of memory for %" PRIu64 " key/values", n_kv);
    }

    /* Part 0's key index is kept for gguf_find_kv; other parts' only serves the duplicate check. */
    gguf_index local = {0};
    gguf_index *ix = part_no == 0 ? &f->kv_index : &local;
    rc = parse_kvs(f, p, &c, ix);
    gguf_index_free(&local);
    if (rc) return rc;

    uint64_t first = f->n_tensors;
    if (n_tensors) {
        gguf_tensor *nt = realloc(f->tensors, (size_t)(first + n_tensors) * sizeof *nt);
        if (!nt) return err_set(e, ERR_NOMEM, "out of memory for %" PRIu64 " tensors", n_tensors);
        f->tensors = nt;
        memset(nt + first, 0, (size_t)n_tensors * sizeof *nt);
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        gguf_tensor *t = &f->tensors[first + i];
        uint64_t at = c.pos;
        t->split = part_no;
        if ((rc = parse_tensor_info(f, p, &c, t))) return rc;
        f->n_tensors++;
        int64_t dup = gguf_index_insert(&f->t_index, first + i, f->tensors, sizeof *f->tensors);
        if (dup == -2) return err_set(e, ERR_NOMEM, "out of memory indexing tensor names");
        if (dup >= 0) {
            if (f->tensors[dup].split != part_no)
                return err_set(e, ERR_FORMAT, "at byte %" PRIu64 ": duplicate tensor name '%s' (also in split part %"
                               PRIu32 ")", at, t->name, f->tensors[dup].split + 1);
            return err_set(e, ERR_FORMAT, "at byte %" PRIu64 ": duplicate tensor name '%s' (tensors %" PRIu64
                           " and %" PRIu64 ")", at, t->name, (uint64_t)dup - first, i);
        }
    }

    /* The data section starts at the next multiple of the alignment. pos <= size, but a buffer's size is
     * only bounded by SIZE_MAX, so the padded sum is still checked. */
    uint64_t pad = (p->alignment - c.pos % p->alignment) % p->alignment;
    if (pad > UINT64_MAX - c.pos)
        return err_set(e, ERR_FORMAT, "at byte %" PRIu64 ": padding to the alignment overflows", c.pos);
    p->data_offset = c.pos + pad;
    if (n_tensors && p->data_offset > p->size)
        return err_set(e, ERR_FORMAT, "at byte %" PRIu64 ": the data section would start at byte %" PRIu64
                       " (after padding to %" PRIu32 ") but the file has %" PRIu64 " bytes", c.pos, p->data_offset,
                       p->alignment, p->size);
    return check_data(f, p, first, e);
}

int gguf_map_file(gguf_part *p, const char *path, err *e) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(e, errno == ENOENT ? ERR_NOTFOUND : ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = err_set(e, ERR_IO, "cannot stat %s: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(e, ERR_IO, "%s is not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return err_set(e, ERR_FORMAT, "%s is empty (0 bytes), expected a GGUF header", path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return err_set(e, ERR_RANGE, "%s is too large to map on this machine", path);
    }
    /* Read-only private mapping: nothing is read until touched, so opening costs only the header pages. */
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int saved = errno;
    close(fd);
    if (m == MAP_FAILED) return err_set(e, ERR_IO, "cannot map %s: %s", path, strerror(saved));
    p->base = m;
    p->size = (uint64_t)st.st_size;
    p->mapped = true;
    return 0;
}

static gguf_file *new_file(err *e) {
    gguf_file *f = calloc(1, sizeof *f);
    if (f) f->parts = calloc(1, sizeof *f->parts);
    if (!f || !f->parts) {
        free(f);
        err_set(e, ERR_NOMEM, "out of memory opening a GGUF file");
        return NULL;
    }
    f->n_parts = 1;
    return f;
}

int gguf_open(gguf_file **out, const char *path, err *e) {
    *out = NULL;
    gguf_file *f = new_file(e);
    if (!f) return ERR_NOMEM;
    int rc = gguf_map_file(&f->parts[0], path, e);
    if (!rc && (rc = gguf_parse_part(f, 0, e))) err_wrap(e, "%s", path);
    if (!rc) rc = gguf_open_splits(f, path, e);
    if (rc) {
        gguf_close(f);
        return rc;
    }
    *out = f;
    return 0;
}

int gguf_open_memory(gguf_file **out, const void *buf, size_t size, err *e) {
    *out = NULL;
    gguf_file *f = new_file(e);
    if (!f) return ERR_NOMEM;
    f->parts[0].base = buf;
    f->parts[0].size = size;
    int rc = gguf_parse_part(f, 0, e);
    uint64_t n_splits = 0;
    if (!rc) rc = gguf_split_count(&f->parts[0], "buffer", &n_splits, e);
    if (!rc && n_splits > 1)
        rc = err_set(e, ERR_UNSUPPORTED, "split.count is %" PRIu64 ": a split model is opened by the path of its "
                     "first part, not from memory", n_splits);
    if (rc) {
        gguf_close(f);
        return rc;
    }
    *out = f;
    return 0;
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    for (uint32_t i = 0; i < f->n_parts; i++)
        if (f->parts[i].mapped) munmap((void *)f->parts[i].base, (size_t)f->parts[i].size);
    free(f->parts);
    free(f->tensors);
    gguf_index_free(&f->kv_index);
    gguf_index_free(&f->t_index);
    gguf_arena_free(&f->arena);
    free(f);
}

uint32_t gguf_version(const gguf_file *f) { return f->parts[0].version; }
uint32_t gguf_alignment(const gguf_file *f) { return f->parts[0].alignment; }
uint32_t gguf_n_splits(const gguf_file *f) { return f->n_parts; }
uint64_t gguf_data_offset(const gguf_file *f) { return f->parts[0].data_offset; }

uint64_t gguf_file_size(const gguf_file *f) {
    uint64_t s = 0;
    for (uint32_t i = 0; i < f->n_parts; i++) s += f->parts[i].size;
    return s;
}

uint64_t gguf_n_tensors(const gguf_file *f) { return f->n_tensors; }

const gguf_tensor *gguf_tensor_at(const gguf_file *f, uint64_t i) {
    return i < f->n_tensors ? &f->tensors[i] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    int64_t i = gguf_index_find(&f->t_index, name, f->tensors, sizeof *f->tensors);
    return i >= 0 ? &f->tensors[i] : NULL;
}
