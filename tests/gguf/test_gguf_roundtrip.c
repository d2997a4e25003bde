/* test_gguf_roundtrip: what our writer writes, our reader reads back exactly: every value type (arrays of
 * every fixed type, of strings, empty arrays, arrays nested 3 deep, unicode strings), key replacement
 * keeping its slot, tensors of several types at alignments 32 and 64 (data offsets aligned, bytes equal),
 * a callback-filled tensor spanning several write chunks, the typed getters' conversions and their
 * errors, and the writer's argument errors. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gguf/gguf.h"
#include "gguf_bytes.h"
#include "quant/qtype.h"

static char dir[64];
static char path32[128], path64[128], pathbig[128];

static const char *const STRS[] = {"a", "", "héllo wörld ✓ 日本語", "last"};

static int set_nested(gguf_writer *w) {
    /* [[[1, 2], [3]], [[4, 5, 6]], []]: arrays of arrays of arrays of int32 */
    static const int32_t a[] = {1, 2}, b[] = {3}, c[] = {4, 5, 6};
    gguf_value leaves[3] = {{.type = GGUF_ARRAY}, {.type = GGUF_ARRAY}, {.type = GGUF_ARRAY}};
    leaves[0].v.arr = (gguf_array){.type = GGUF_INT32, .n = 2, .data = a};
    leaves[1].v.arr = (gguf_array){.type = GGUF_INT32, .n = 1, .data = b};
    leaves[2].v.arr = (gguf_array){.type = GGUF_INT32, .n = 3, .data = c};
    gguf_value mid[3] = {{.type = GGUF_ARRAY}, {.type = GGUF_ARRAY}, {.type = GGUF_ARRAY}};
    mid[0].v.arr = (gguf_array){.type = GGUF_ARRAY, .n = 2, .arrs = leaves};
    mid[1].v.arr = (gguf_array){.type = GGUF_ARRAY, .n = 1, .arrs = leaves + 2};
    mid[2].v.arr = (gguf_array){.type = GGUF_ARRAY, .n = 0};
    gguf_value top = {.type = GGUF_ARRAY};
    top.v.arr = (gguf_array){.type = GGUF_ARRAY, .n = 3, .arrs = mid};
    return gguf_writer_set_value(w, "test.nested", &top);
}

static int fill_pattern(void *ctx, void *buf, uint64_t offset, uint64_t nbytes, err *e) {
    (void)e;
    int *calls = ctx;
    (*calls)++;
    uint8_t *p = buf;
    for (uint64_t i = 0; i < nbytes; i++) p[i] = (uint8_t)(((offset + i) * 7 + 3) & 0xff);
    return 0;
}

static int fill_fails(void *ctx, void *buf, uint64_t offset, uint64_t nbytes, err *e) {
    (void)ctx, (void)buf, (void)offset, (void)nbytes;
    return err_set(e, ERR_IO, "source went away");
}

/* returns an error but sets no message */
static int fill_fails_silently(void *ctx, void *buf, uint64_t offset, uint64_t nbytes, err *e) {
    (void)ctx, (void)buf, (void)offset, (void)nbytes, (void)e;
    return 1;
}

static float f32_data[24];
static uint16_t f16_data[16];
static uint8_t q8_data[2 * 2 * 34], q4k_data[144];

static int write_model(const char *path, uint32_t align, err *e) {
    gguf_writer *w = gguf_writer_new();
    int rc = 0;
    rc |= gguf_writer_set_str(w, "general.architecture", "llama");
    rc |= gguf_writer_set_alignment(w, align);
    rc |= gguf_writer_set_u8(w, "test.u8", 200);
    rc |= gguf_writer_set_i8(w, "test.i8", -5);
    rc |= gguf_writer_set_u16(w, "test.u16", 60000);
    rc |= gguf_writer_set_i16(w, "test.i16", -30000);
    rc |= gguf_writer_set_u32(w, "test.u32", 4000000000u);
    rc |= gguf_writer_set_i32(w, "test.i32", -2000000000);
    rc |= gguf_writer_set_u64(w, "test.u64", (1ull << 63) + 5);
    rc |= gguf_writer_set_i64(w, "test.i64", -(1ll << 62) - 7);
    rc |= gguf_writer_set_f32(w, "test.f32", 3.5f);
    rc |= gguf_writer_set_f64(w, "test.f64", -1.0 / 3.0);
    rc |= gguf_writer_set_f64(w, "test.f64_big", 1e300);
    rc |= gguf_writer_set_bool(w, "test.bool", true);
    rc |= gguf_writer_set_bool(w, "test.bool_false", false);
    rc |= gguf_writer_set_str(w, "test.str", "héllo wörld ✓ 日本語");
    rc |= gguf_writer_set_str(w, "test.str_empty", "");
    rc |= gguf_writer_set_u32(w, "test.replaced", 1); /* replaced below: must keep this slot */
    static const uint8_t au8[] = {1, 2, 3, 255};
    static const int8_t ai8[] = {-128, 0, 127};
    static const uint16_t au16[] = {0, 65535};
    static const int16_t ai16[] = {-32768, 32767};
    static const uint32_t au32[] = {7, 4000000000u};
    static const int32_t ai32[] = {-1, 1, 2147483647};
    static const float af32[] = {0.5f, -2.0f, 1e-3f};
    static const uint8_t abool[] = {1, 0, 1};
    static const uint64_t au64[] = {UINT64_MAX};
    static const int64_t ai64[] = {INT64_MIN, 0};
    static const double af64[] = {3.141592653589793, -0.0};
    rc |= gguf_writer_set_arr(w, "test.arr_u8", GGUF_UINT8, au8, 4);
    rc |= gguf_writer_set_arr(w, "test.arr_i8", GGUF_INT8, ai8, 3);
    rc |= gguf_writer_set_arr(w, "test.arr_u16", GGUF_UINT16, au16, 2);
    rc |= gguf_writer_set_arr(w, "test.arr_i16", GGUF_INT16, ai16, 2);
    rc |= gguf_writer_set_arr(w, "test.arr_u32", GGUF_UINT32, au32, 2);
    rc |= gguf_writer_set_arr(w, "test.arr_i32", GGUF_INT32, ai32, 3);
    rc |= gguf_writer_set_arr(w, "test.arr_f32", GGUF_FLOAT32, af32, 3);
    rc |= gguf_writer_set_arr(w, "test.arr_bool", GGUF_BOOL, abool, 3);
    rc |= gguf_writer_set_arr(w, "test.arr_u64", GGUF_UINT64, au64, 1);
    rc |= gguf_writer_set_arr(w, "test.arr_i64", GGUF_INT64, ai64, 2);
    rc |= gguf_writer_set_arr(w, "test.arr_f64", GGUF_FLOAT64, af64, 2);
    rc |= gguf_writer_set_arr_str(w, "test.arr_str", STRS, 4);
    rc |= gguf_writer_set_arr(w, "test.arr_empty", GGUF_UINT32, NULL, 0);
    rc |= gguf_writer_set_arr_str(w, "test.arr_str_empty", NULL, 0);
    rc |= set_nested(w);
    rc |= gguf_writer_set_str(w, "test.replaced", "second");
    if (rc) return err_set(e, ERR_ARG, "a setter failed");

    int64_t ne_f32[] = {8, 3}, ne_f16[] = {16}, ne_q8[] = {64, 2}, ne_q4k[] = {256, 1, 1, 1}, ne_zero[] = {4, 0};
    if ((rc = gguf_writer_add_tensor(w, "t.f32", QT_F32, 2, ne_f32, f32_data, e)) ||
        (rc = gguf_writer_add_tensor(w, "t.f16", QT_F16, 1, ne_f16, f16_data, e)) ||
        (rc = gguf_writer_add_tensor(w, "t.q8_0", QT_Q8_0, 2, ne_q8, q8_data, e)) ||
        (rc = gguf_writer_add_tensor(w, "t.q4_k", QT_Q4_K, 4, ne_q4k, q4k_data, e)) ||
        (rc = gguf_writer_add_tensor(w, "t.empty", QT_F32, 2, ne_zero, NULL, e)))
        return rc;
    rc = gguf_writer_write(w, path, e);
    gguf_writer_free(w);
    return rc;
}

static void check_values(const gguf_file *f) {
    err e;
    CHECK(gguf_version(f) == 3);
    CHECK(gguf_n_kv(f) == 33);
    /* insertion order, with the replaced key in its first slot */
    CHECK(strcmp(gguf_kv_at(f, 0)->key, "general.architecture") == 0);
    CHECK(strcmp(gguf_kv_at(f, 1)->key, "general.alignment") == 0);
    CHECK(strcmp(gguf_kv_at(f, 17)->key, "test.replaced") == 0);
    CHECK(gguf_kv_at(f, 17)->value.type == GGUF_STRING);
    CHECK(strcmp(gguf_kv_at(f, 32)->key, "test.nested") == 0);
    CHECK(gguf_kv_at(f, 33) == NULL);
    CHECK(gguf_find_kv(f, "test.nope") == NULL);

    const gguf_kv *kv;
    CHECK((kv = gguf_find_kv(f, "test.u8")) && kv->value.type == GGUF_UINT8 && kv->value.v.u8 == 200);
    CHECK((kv = gguf_find_kv(f, "test.i8")) && kv->value.type == GGUF_INT8 && kv->value.v.i8 == -5);
    CHECK((kv = gguf_find_kv(f, "test.u16")) && kv->value.type == GGUF_UINT16 && kv->value.v.u16 == 60000);
    CHECK((kv = gguf_find_kv(f, "test.i16")) && kv->value.type == GGUF_INT16 && kv->value.v.i16 == -30000);
    CHECK((kv = gguf_find_kv(f, "test.u32")) && kv->value.type == GGUF_UINT32 && kv->value.v.u32 == 4000000000u);
    CHECK((kv = gguf_find_kv(f, "test.i32")) && kv->value.type == GGUF_INT32 && kv->value.v.i32 == -2000000000);
    CHECK((kv = gguf_find_kv(f, "test.u64")) && kv->value.type == GGUF_UINT64 && kv->value.v.u64 == (1ull << 63) + 5);
    CHECK((kv = gguf_find_kv(f, "test.i64")) && kv->value.type == GGUF_INT64 && kv->value.v.i64 == -(1ll << 62) - 7);
    CHECK((kv = gguf_find_kv(f, "test.f32")) && kv->value.type == GGUF_FLOAT32 && kv->value.v.f32 == 3.5f);
    CHECK((kv = gguf_find_kv(f, "test.f64")) && kv->value.type == GGUF_FLOAT64 && kv->value.v.f64 == -1.0 / 3.0);
    CHECK((kv = gguf_find_kv(f, "test.bool")) && kv->value.type == GGUF_BOOL && kv->value.v.b == true);
    CHECK((kv = gguf_find_kv(f, "test.bool_false")) && kv->value.type == GGUF_BOOL && kv->value.v.b == false);

    gguf_str s;
    const char *uni = "héllo wörld ✓ 日本語";
    CHECK(gguf_get_str(f, "test.str", &s, &e) == 0 && s.len == strlen(uni) && memcmp(s.ptr, uni, s.len) == 0);
    CHECK(gguf_get_str(f, "test.str_empty", &s, &e) == 0 && s.len == 0);
    CHECK(gguf_get_str(f, "test.replaced", &s, &e) == 0 && s.len == 6 && memcmp(s.ptr, "second", 6) == 0);

    gguf_array a;
    CHECK(gguf_get_arr(f, "test.arr_u8", GGUF_UINT8, &a, &e) == 0 && a.n == 4 &&
          memcmp(a.data, (uint8_t[]){1, 2, 3, 255}, 4) == 0);
    CHECK(gguf_get_arr(f, "test.arr_i8", GGUF_INT8, &a, &e) == 0 && a.n == 3 &&
          memcmp(a.data, (int8_t[]){-128, 0, 127}, 3) == 0);
    CHECK(gguf_get_arr(f, "test.arr_u16", GGUF_UINT16, &a, &e) == 0 && a.n == 2 &&
          memcmp(a.data, (uint16_t[]){0, 65535}, 4) == 0);
    CHECK(gguf_get_arr(f, "test.arr_i16", GGUF_INT16, &a, &e) == 0 && a.n == 2 &&
          memcmp(a.data, (int16_t[]){-32768, 32767}, 4) == 0);
    CHECK(gguf_get_arr(f, "test.arr_u32", GGUF_UINT32, &a, &e) == 0 && a.n == 2 &&
          memcmp(a.data, (uint32_t[]){7, 4000000000u}, 8) == 0);
    CHECK(gguf_get_arr(f, "test.arr_i32", GGUF_INT32, &a, &e) == 0 && a.n == 3 &&
          memcmp(a.data, (int32_t[]){-1, 1, 2147483647}, 12) == 0);
    CHECK(gguf_get_arr(f, "test.arr_f32", GGUF_FLOAT32, &a, &e) == 0 && a.n == 3 &&
          memcmp(a.data, (float[]){0.5f, -2.0f, 1e-3f}, 12) == 0);
    CHECK(gguf_get_arr(f, "test.arr_bool", GGUF_BOOL, &a, &e) == 0 && a.n == 3 &&
          memcmp(a.data, (uint8_t[]){1, 0, 1}, 3) == 0);
    CHECK(gguf_get_arr(f, "test.arr_u64", GGUF_UINT64, &a, &e) == 0 && a.n == 1 &&
          memcmp(a.data, (uint64_t[]){UINT64_MAX}, 8) == 0);
    CHECK(gguf_get_arr(f, "test.arr_i64", GGUF_INT64, &a, &e) == 0 && a.n == 2 &&
          memcmp(a.data, (int64_t[]){INT64_MIN, 0}, 16) == 0);
    CHECK(gguf_get_arr(f, "test.arr_f64", GGUF_FLOAT64, &a, &e) == 0 && a.n == 2 &&
          memcmp(a.data, (double[]){3.141592653589793, -0.0}, 16) == 0);
    CHECK(gguf_get_arr(f, "test.arr_str", GGUF_STRING, &a, &e) == 0 && a.n == 4);
    for (int i = 0; i < 4 && a.type == GGUF_STRING && a.n == 4; i++)
        CHECKF(a.strs[i].len == strlen(STRS[i]) && memcmp(a.strs[i].ptr, STRS[i], a.strs[i].len) == 0, "str %d", i);
    CHECK(gguf_get_arr(f, "test.arr_empty", GGUF_UINT32, &a, &e) == 0 && a.n == 0);
    CHECK(gguf_get_arr(f, "test.arr_str_empty", GGUF_STRING, &a, &e) == 0 && a.n == 0);

    /* nested: [[[1, 2], [3]], [[4, 5, 6]], []] */
    CHECK(gguf_get_arr(f, "test.nested", GGUF_ARRAY, &a, &e) == 0 && a.n == 3);
    if (a.type == GGUF_ARRAY && a.n == 3) {
        const gguf_array *m0 = &a.arrs[0].v.arr, *m1 = &a.arrs[1].v.arr, *m2 = &a.arrs[2].v.arr;
        CHECK(m0->type == GGUF_ARRAY && m0->n == 2 && m1->type == GGUF_ARRAY && m1->n == 1 && m2->n == 0);
        if (m0->n == 2 && m1->n == 1) {
            const gguf_array *l0 = &m0->arrs[0].v.arr, *l1 = &m0->arrs[1].v.arr, *l2 = &m1->arrs[0].v.arr;
            CHECK(l0->type == GGUF_INT32 && l0->n == 2 && memcmp(l0->data, (int32_t[]){1, 2}, 8) == 0);
            CHECK(l1->type == GGUF_INT32 && l1->n == 1 && memcmp(l1->data, (int32_t[]){3}, 4) == 0);
            CHECK(l2->type == GGUF_INT32 && l2->n == 3 && memcmp(l2->data, (int32_t[]){4, 5, 6}, 12) == 0);
        }
    }
}

static void check_getters(const gguf_file *f) {
    err e;
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
    float f32;
    bool b;
    char buf[64];
    gguf_array a;
    /* conversions that fit */
    CHECK(gguf_get_u32(f, "test.u8", &u32, &e) == 0 && u32 == 200);
    CHECK(gguf_get_i32(f, "test.i16", &i32, &e) == 0 && i32 == -30000);
    CHECK(gguf_get_i64(f, "test.i8", &i64, &e) == 0 && i64 == -5);
    CHECK(gguf_get_u64(f, "test.u32", &u64, &e) == 0 && u64 == 4000000000u);
    CHECK(gguf_get_i64(f, "test.u32", &i64, &e) == 0 && i64 == 4000000000);
    CHECK(gguf_get_u64(f, "test.u64", &u64, &e) == 0 && u64 == (1ull << 63) + 5);
    CHECK(gguf_get_i64(f, "test.i64", &i64, &e) == 0 && i64 == -(1ll << 62) - 7);
    CHECK(gguf_get_f32(f, "test.f32", &f32, &e) == 0 && f32 == 3.5f);
    CHECK(gguf_get_f32(f, "test.f64", &f32, &e) == 0 && f32 == (float)(-1.0 / 3.0));
    CHECK(gguf_get_bool(f, "test.bool", &b, &e) == 0 && b);
    CHECK(gguf_get_cstr(f, "test.str", buf, sizeof buf, &e) == 0 && strcmp(buf, "héllo wörld ✓ 日本語") == 0);
    CHECK(gguf_get_arr(f, "test.arr_str", -1, &a, &e) == 0 && a.type == GGUF_STRING);
    /* ... and those that do not */
    CHECK(gguf_get_u32(f, "test.i8", &u32, &e) == ERR_FORMAT && contains(e.msg, "-5") &&
          contains(e.msg, "does not fit uint32") && contains(e.msg, "test.i8"));
    CHECK(gguf_get_i32(f, "test.u32", &i32, &e) == ERR_FORMAT && contains(e.msg, "4000000000"));
    CHECK(gguf_get_i64(f, "test.u64", &i64, &e) == ERR_FORMAT && contains(e.msg, "9223372036854775813"));
    CHECK(gguf_get_i32(f, "test.i64", &i32, &e) == ERR_FORMAT && contains(e.msg, "does not fit int32"));
    CHECK(gguf_get_u64(f, "test.i64", &u64, &e) == ERR_FORMAT);
    CHECK(gguf_get_f32(f, "test.f64_big", &f32, &e) == ERR_FORMAT && contains(e.msg, "float32"));
    CHECK(gguf_get_u32(f, "test.str", &u32, &e) == ERR_FORMAT && contains(e.msg, "has type string") &&
          contains(e.msg, "expected an integer"));
    CHECK(gguf_get_u32(f, "test.bool", &u32, &e) == ERR_FORMAT && contains(e.msg, "has type bool"));
    CHECK(gguf_get_f32(f, "test.u32", &f32, &e) == ERR_FORMAT && contains(e.msg, "expected float32 or float64"));
    CHECK(gguf_get_bool(f, "test.u8", &b, &e) == ERR_FORMAT && contains(e.msg, "expected bool"));
    CHECK(gguf_get_str(f, "test.arr_str", &(gguf_str){0}, &e) == ERR_FORMAT && contains(e.msg, "has type array"));
    CHECK(gguf_get_arr(f, "test.str", -1, &a, &e) == ERR_FORMAT && contains(e.msg, "expected array"));
    CHECK(gguf_get_arr(f, "test.arr_str", GGUF_INT32, &a, &e) == ERR_FORMAT &&
          contains(e.msg, "an array of string, expected an array of int32"));
    CHECK(gguf_get_u32(f, "test.missing", &u32, &e) == ERR_NOTFOUND && contains(e.msg, "test.missing"));
    CHECK(gguf_get_cstr(f, "test.str", buf, 5, &e) == ERR_RANGE && contains(e.msg, "too long"));
}

static void check_tensors(const gguf_file *f, uint32_t align) {
    CHECK(gguf_alignment(f) == align);
    CHECK(gguf_data_offset(f) % align == 0);
    CHECK(gguf_n_tensors(f) == 5);
    CHECK(gguf_n_splits(f) == 1);
    const gguf_tensor *t;
    const uint8_t *data0 = NULL;
    CHECK((t = gguf_find_tensor(f, "t.f32")) != NULL);
    if (t) {
        CHECK(t->type == QT_F32 && t->n_dims == 2 && t->ne[0] == 8 && t->ne[1] == 3 && t->ne[2] == 1);
        CHECK(t->n_elements == 24 && t->nbytes == 96 && t->offset == 0 && memcmp(t->data, f32_data, 96) == 0);
        data0 = t->data;
    }
    CHECK((t = gguf_find_tensor(f, "t.f16")) && t->nbytes == 32 && memcmp(t->data, f16_data, 32) == 0);
    CHECK((t = gguf_find_tensor(f, "t.q8_0")) && t->type == QT_Q8_0 && t->nbytes == 136 &&
          memcmp(t->data, q8_data, 136) == 0);
    CHECK((t = gguf_find_tensor(f, "t.q4_k")) && t->n_dims == 4 && t->nbytes == 144 &&
          memcmp(t->data, q4k_data, 144) == 0);
    CHECK((t = gguf_find_tensor(f, "t.empty")) && t->n_elements == 0 && t->nbytes == 0 && t->ne[1] == 0);
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        t = gguf_tensor_at(f, i);
        CHECKF(t->offset % align == 0, "tensor %s offset %llu", t->name, (unsigned long long)t->offset);
        if (data0) CHECK((const uint8_t *)t->data - data0 == (ptrdiff_t)t->offset);
    }
    CHECK(gguf_tensor_at(f, 5) == NULL && gguf_find_tensor(f, "t.none") == NULL);
}

static void test_round_trip(const char *path, uint32_t align) {
    err e = {0};
    int rc = write_model(path, align, &e);
    CHECKF(rc == 0, "write: %s", e.msg);
    gguf_file *f = NULL;
    rc = gguf_open(&f, path, &e);
    CHECKF(rc == 0, "open: %s", e.msg);
    if (rc) return;
    check_values(f);
    check_getters(f);
    check_tensors(f, align);
    /* the same bytes through gguf_open_memory */
    FILE *fp = fopen(path, "rb");
    uint64_t size = gguf_file_size(f);
    uint8_t *buf = malloc(size);
    CHECK(fp && fread(buf, 1, size, fp) == size);
    if (fp) fclose(fp);
    gguf_file *g = NULL;
    CHECK(gguf_open_memory(&g, buf, size, &e) == 0);
    if (g) {
        check_values(g);
        check_tensors(g, align);
        gguf_close(g);
    }
    free(buf);
    gguf_close(f);
}

static void test_fill_callback(void) {
    err e = {0};
    gguf_writer *w = gguf_writer_new();
    int calls = 0;
    /* 9 MB + 3 bytes of I8: three chunks of the 4 MB writer, the last partial */
    int64_t ne[] = {9 * 1024 * 1024 + 3};
    CHECK(gguf_writer_add_tensor_fill(w, "big", QT_I8, 1, ne, fill_pattern, &calls, &e) == 0);
    CHECK(gguf_writer_write(w, pathbig, &e) == 0);
    gguf_writer_free(w);
    CHECK(calls == 3);
    gguf_file *f = NULL;
    CHECK(gguf_open(&f, pathbig, &e) == 0);
    if (!f) return;
    const gguf_tensor *t = gguf_find_tensor(f, "big");
    CHECK(t && t->nbytes == (uint64_t)ne[0]);
    uint64_t bad = 0;
    for (uint64_t i = 0; t && i < t->nbytes; i++) bad += ((const uint8_t *)t->data)[i] != (uint8_t)((i * 7 + 3) & 0xff);
    CHECKF(bad == 0, "%llu bytes differ from the fill pattern", (unsigned long long)bad);
    gguf_close(f);
    unlink(pathbig);

    /* a failing callback fails the write, names the tensor, and leaves neither the file nor PATH.tmp */
    w = gguf_writer_new();
    CHECK(gguf_writer_add_tensor_fill(w, "broken", QT_I8, 1, ne, fill_fails, NULL, &e) == 0);
    CHECK(gguf_writer_write(w, pathbig, &e) == ERR_IO && contains(e.msg, "broken") &&
          contains(e.msg, "source went away"));
    gguf_writer_free(w);
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", pathbig);
    CHECK(access(pathbig, F_OK) != 0 && access(tmp, F_OK) != 0);

    w = gguf_writer_new();
    CHECK(gguf_writer_add_tensor_fill(w, "quiet", QT_I8, 1, ne, fill_fails_silently, NULL, &e) == 0);
    CHECK(gguf_writer_write(w, pathbig, &e) == ERR_IO && contains(e.msg, "quiet") &&
          contains(e.msg, "failed without a message"));
    gguf_writer_free(w);
    CHECK(access(pathbig, F_OK) != 0 && access(tmp, F_OK) != 0);
}

static void test_writer_errors(void) {
    err e = {0};
    gguf_writer *w = gguf_writer_new();
    int64_t ne[] = {32};
    float x[32] = {0};
    CHECK(gguf_writer_add_tensor(w, "a", QT_F32, 1, ne, x, &e) == 0);
    CHECK(gguf_writer_add_tensor(w, "a", QT_F32, 1, ne, x, &e) == ERR_ARG && contains(e.msg, "duplicate tensor name 'a'"));
    int64_t ne33[] = {33};
    CHECK(gguf_writer_add_tensor(w, "q", QT_Q8_0, 1, ne33, x, &e) == ERR_ARG && contains(e.msg, "block size 32"));
    CHECK(gguf_writer_add_tensor(w, "u", 4, 1, ne, x, &e) == ERR_UNSUPPORTED && contains(e.msg, "type id 4"));
    CHECK(gguf_writer_add_tensor(w, "d", QT_F32, 5, ne, x, &e) == ERR_ARG && contains(e.msg, "n_dims 5"));
    int64_t neg[] = {-1};
    CHECK(gguf_writer_add_tensor(w, "n", QT_F32, 1, neg, x, &e) == ERR_ARG);
    CHECK(gguf_writer_set_alignment(w, 3) == ERR_ARG);
    CHECK(gguf_writer_set_alignment(w, 0) == ERR_ARG);
    CHECK(gguf_writer_set_arr(w, "k", GGUF_STRING, x, 1) == ERR_ARG);
    /* an alignment key of the wrong type is refused at write time */
    CHECK(gguf_writer_set_u64(w, "general.alignment", 64) == 0);
    CHECK(gguf_writer_write(w, path32, &e) == ERR_ARG && contains(e.msg, "general.alignment"));
    /* writing into a missing directory fails cleanly */
    CHECK(gguf_writer_set_u32(w, "general.alignment", 64) == 0);
    CHECK(gguf_writer_write(w, "/nonexistent-dir/x.gguf", &e) != 0 && contains(e.msg, "/nonexistent-dir/x.gguf.tmp"));
    gguf_writer_free(w);
}

int main(void) {
    for (int i = 0; i < 24; i++) f32_data[i] = (float)i * 0.25f - 1.0f;
    for (int i = 0; i < 16; i++) f16_data[i] = (uint16_t)(0x3c00 + i);
    for (size_t i = 0; i < sizeof q8_data; i++) q8_data[i] = (uint8_t)(i * 13 + 1);
    for (size_t i = 0; i < sizeof q4k_data; i++) q4k_data[i] = (uint8_t)(i * 31 + 7);
    snprintf(dir, sizeof dir, "/tmp/llm170_gguf_rt_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    snprintf(path32, sizeof path32, "%s/a32.gguf", dir);
    snprintf(path64, sizeof path64, "%s/a64.gguf", dir);
    snprintf(pathbig, sizeof pathbig, "%s/big.gguf", dir);
    test_round_trip(path32, 32);
    test_round_trip(path64, 64);
    test_fill_callback();
    test_writer_errors();
    unlink(path32);
    unlink(path64);
    rmdir(dir);
    return check_report("test_gguf_roundtrip");
}
