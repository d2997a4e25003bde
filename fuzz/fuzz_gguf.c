/* fuzz_gguf: libFuzzer target for the GGUF reader (and, for what parses, the writer).
 *
 * Each input is opened with gguf_open_memory; when it parses, every key is read with every typed getter
 * (each must either succeed or fail with a message, never crash), every array is walked to its leaves,
 * every tensor's fields are checked against each other and its first and last data byte are read (they
 * must lie inside the input), and the file is written back with the writer and re-read: the copy must
 * have the same keys, values and tensor bytes. Built by fuzz/CMakeLists.txt, run by scripts/fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "quant/qtype.h"

/* Sums what it reads so that the compiler cannot drop the reads. */
static volatile uint64_t sink;

static void walk_array(const gguf_array *a) {
    switch (a->type) {
    case GGUF_STRING:
        for (uint64_t i = 0; i < a->n; i++)
            if (a->strs[i].len) sink += (unsigned char)a->strs[i].ptr[0] + (unsigned char)a->strs[i].ptr[a->strs[i].len - 1];
        break;
    case GGUF_ARRAY:
        for (uint64_t i = 0; i < a->n; i++) {
            if (a->arrs[i].type != GGUF_ARRAY) abort();
            walk_array(&a->arrs[i].v.arr);
        }
        break;
    default:
        if (a->n) {
            uint64_t sz = 0;
            switch (a->type) {
            case GGUF_UINT8: case GGUF_INT8: case GGUF_BOOL: sz = 1; break;
            case GGUF_UINT16: case GGUF_INT16: sz = 2; break;
            case GGUF_UINT32: case GGUF_INT32: case GGUF_FLOAT32: sz = 4; break;
            default: sz = 8; break;
            }
            sink += ((const uint8_t *)a->data)[0] + ((const uint8_t *)a->data)[a->n * sz - 1];
        }
    }
}

static void walk(const gguf_file *f) {
    err e = {0};
    char buf[64];
    for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (gguf_find_kv(f, kv->key) != kv) abort();
        uint32_t u32; int32_t i32; uint64_t u64; int64_t i64; float f32; bool b; gguf_str s; gguf_array a;
        sink += gguf_get_u32(f, kv->key, &u32, &e) + gguf_get_i32(f, kv->key, &i32, &e) +
                gguf_get_u64(f, kv->key, &u64, &e) + gguf_get_i64(f, kv->key, &i64, &e) +
                gguf_get_f32(f, kv->key, &f32, &e) + gguf_get_bool(f, kv->key, &b, &e) +
                gguf_get_str(f, kv->key, &s, &e) + gguf_get_cstr(f, kv->key, buf, sizeof buf, &e);
        if (gguf_get_arr(f, kv->key, -1, &a, &e) == 0) {
            walk_array(&a);
            if (gguf_get_arr(f, kv->key, (int)a.type, &a, &e) != 0) abort();
        }
        sink += strlen(e.msg);
    }
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (gguf_find_tensor(f, t->name) != t) abort();
        uint64_t nb;
        if (!qtype_get(t->type) || !qtype_nbytes(t->type, t->n_elements, &nb) || nb != t->nbytes) abort();
        if (t->nbytes) sink += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->nbytes - 1];
    }
}

static bool same_value(const gguf_value *x, const gguf_value *y);

static bool same_array(const gguf_array *x, const gguf_array *y) {
    if (x->type != y->type || x->n != y->n) return false;
    for (uint64_t i = 0; i < x->n; i++) {
        if (x->type == GGUF_STRING) {
            if (x->strs[i].len != y->strs[i].len || memcmp(x->strs[i].ptr, y->strs[i].ptr, x->strs[i].len)) return false;
        } else if (x->type == GGUF_ARRAY) {
            if (!same_value(&x->arrs[i], &y->arrs[i])) return false;
        }
    }
    if (x->type != GGUF_STRING && x->type != GGUF_ARRAY && x->n) {
        /* Fixed-size elements: bytes equal, except bools, which any nonzero byte encodes and the writer
         * normalizes only in scalars (array bytes are copied raw). */
        uint64_t sz = x->type == GGUF_UINT8 || x->type == GGUF_INT8 || x->type == GGUF_BOOL ? 1
                    : x->type == GGUF_UINT16 || x->type == GGUF_INT16 ? 2
                    : x->type == GGUF_UINT32 || x->type == GGUF_INT32 || x->type == GGUF_FLOAT32 ? 4 : 8;
        if (memcmp(x->data, y->data, x->n * sz)) return false;
    }
    return true;
}

static bool same_value(const gguf_value *x, const gguf_value *y) {
    if (x->type != y->type) return false;
    switch (x->type) {
    case GGUF_STRING: return x->v.str.len == y->v.str.len && !memcmp(x->v.str.ptr, y->v.str.ptr, x->v.str.len);
    case GGUF_ARRAY: return same_array(&x->v.arr, &y->v.arr);
    case GGUF_BOOL: return x->v.b == y->v.b;
    case GGUF_UINT8: case GGUF_INT8: return x->v.u8 == y->v.u8;
    case GGUF_UINT16: case GGUF_INT16: return x->v.u16 == y->v.u16;
    case GGUF_UINT32: case GGUF_INT32: case GGUF_FLOAT32: return x->v.u32 == y->v.u32;
    default: return x->v.u64 == y->v.u64;
    }
}

static int fill_from(void *ctx, void *buf, uint64_t offset, uint64_t nbytes, err *e) {
    (void)e;
    memcpy(buf, (const uint8_t *)ctx + offset, nbytes);
    return 0;
}

/* Writes f back out and checks the copy reads back the same. */
static void round_trip(const gguf_file *f) {
    /* Huge alignments are valid but would make the copy gigabytes of padding. */
    if (gguf_alignment(f) > 4096) return;
    static char path[64];
    /* tmpfs when there is one: the writer fsyncs, which on a disk would dominate the run time. */
    if (!path[0])
        snprintf(path, sizeof path, "%s/fuzz_gguf_rt_%d.gguf", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
                 (int)getpid());
    gguf_writer *w = gguf_writer_new();
    if (!w) return;
    err e = {0};
    for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (gguf_writer_set_value(w, kv->key, &kv->value) != 0) abort();
    }
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        /* Alternate the two ways of giving data so both paths are exercised. */
        int rc = i % 2 ? gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &e)
                       : gguf_writer_add_tensor_fill(w, t->name, t->type, t->n_dims, t->ne, fill_from, (void *)t->data, &e);
        if (rc) abort();
    }
    if (gguf_writer_write(w, path, &e) != 0) abort();
    gguf_writer_free(w);
    gguf_file *g;
    if (gguf_open(&g, path, &e) != 0) {
        fprintf(stderr, "round trip failed to re-open: %s\n", e.msg);
        abort();
    }
    if (gguf_n_kv(g) != gguf_n_kv(f) || gguf_n_tensors(g) != gguf_n_tensors(f) ||
        gguf_alignment(g) != gguf_alignment(f))
        abort();
    for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv *a = gguf_kv_at(f, i), *b = gguf_kv_at(g, i);
        if (strcmp(a->key, b->key) || !same_value(&a->value, &b->value)) abort();
    }
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *a = gguf_tensor_at(f, i), *b = gguf_tensor_at(g, i);
        if (strcmp(a->name, b->name) || a->type != b->type || a->nbytes != b->nbytes ||
            memcmp(a->ne, b->ne, sizeof a->ne) || (a->nbytes && memcmp(a->data, b->data, a->nbytes)))
            abort();
    }
    gguf_close(g);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file *f;
    err e = {0};
    int rc = gguf_open_memory(&f, data, size, &e);
    if (rc != 0) {
        if (rc != e.code || e.msg[0] == 0 || f != NULL) abort(); /* a failure carries its code and a message */
        return 0;
    }
    walk(f);
    /* Round trips cost a file write each; the data section of a fuzzed input is small. */
    round_trip(f);
    gguf_close(f);
    return 0;
}
