/* test_gguf_pyfixture: the outside cross-check. tests/gguf/fixtures/gguf_py_all_types.gguf was written by
 * gguf-py's own GGUFWriter (scripts/gen_gguf_fixtures.py, which lists the same content): we read it and
 * check every key, type and value, and every tensor's shape, type, offset and bytes (Q8_0 blocks decoded
 * by hand: the script chose values that quantize exactly). Then our writer writes the same content from
 * scratch, which must equal the fixture byte for byte (same key order, padding and data layout); the copy
 * is left at /tmp/llm170_gguf_c_written.gguf for `python3 scripts/gen_gguf_fixtures.py --check`, which reads
 * it with gguf-py's GGUFReader. (Written under a unique name and renamed there, so that test runs from
 * several build folders at once cannot interleave their writes.) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fp16.h"
#include "check.h"
#include "gguf/gguf.h"
#include "gguf_bytes.h"
#include "quant/qtype.h"

#define FIXTURE "tests/gguf/fixtures/gguf_py_all_types.gguf"
#define OURS "/tmp/llm170_gguf_c_written.gguf"

static const char UNI[] = "héllo wörld ✓ 日本語";
static const char *const STRS[] = {"a", "", UNI, "last"};
static const uint8_t AU8[] = {1, 2, 3, 255};
static const int8_t AI8[] = {-128, 0, 127};
static const uint16_t AU16[] = {0, 65535};
static const int16_t AI16[] = {-32768, 32767};
static const uint32_t AU32[] = {7, 4000000000u};
static const int32_t AI32[] = {-1, 1, 2147483647};
static const float AF32[] = {0.5f, -2.0f, 0.125f};
static const uint8_t ABOOL[] = {1, 0, 1};
static const uint64_t AU64[] = {UINT64_MAX};
static const int64_t AI64[] = {INT64_MIN, 0};
static const double AF64[] = {3.141592653589793, -0.0};

static bool str_is(gguf_str s, const char *c) { return s.len == strlen(c) && memcmp(s.ptr, c, s.len) == 0; }

static void check_arr(const gguf_file *f, const char *key, enum gguf_vtype t, const void *want, uint64_t n, size_t esz) {
    gguf_array a;
    err e;
    int rc = gguf_get_arr(f, key, t, &a, &e);
    CHECKF(rc == 0 && a.n == n && memcmp(a.data, want, n * esz) == 0, "%s: %s", key, rc ? e.msg : "values differ");
}

static void check_fixture(const gguf_file *f) {
    err e;
    const char *order[] = {"general.architecture", "general.alignment", "test.u8", "test.i8", "test.u16", "test.i16",
                           "test.u32", "test.i32", "test.f32", "test.bool", "test.bool_false", "test.str",
                           "test.str_empty", "test.u64", "test.i64", "test.f64", "test.arr_u8", "test.arr_i8",
                           "test.arr_u16", "test.arr_i16", "test.arr_u32", "test.arr_i32", "test.arr_f32",
                           "test.arr_bool", "test.arr_u64", "test.arr_i64", "test.arr_f64", "test.arr_str",
                           "test.nested", "test.nested_str"};
    size_t n_keys = sizeof order / sizeof *order;
    CHECK(gguf_version(f) == 3 && gguf_n_kv(f) == n_keys);
    for (size_t i = 0; i < n_keys && i < gguf_n_kv(f); i++)
        CHECKF(strcmp(gguf_kv_at(f, i)->key, order[i]) == 0, "key %zu is %s, expected %s", i, gguf_kv_at(f, i)->key, order[i]);
    gguf_str s;
    CHECK(gguf_get_str(f, "general.architecture", &s, &e) == 0 && str_is(s, "llama"));
    CHECK(gguf_alignment(f) == 64 && gguf_find_kv(f, "general.alignment")->value.type == GGUF_UINT32);
    const gguf_kv *kv;
#define SCALAR(key, T, field, want) CHECKF((kv = gguf_find_kv(f, key)) && kv->value.type == T && kv->value.v.field == (want), "%s", key)
    SCALAR("test.u8", GGUF_UINT8, u8, 200);
    SCALAR("test.i8", GGUF_INT8, i8, -100);
    SCALAR("test.u16", GGUF_UINT16, u16, 60000);
    SCALAR("test.i16", GGUF_INT16, i16, -30000);
    SCALAR("test.u32", GGUF_UINT32, u32, 4000000000u);
    SCALAR("test.i32", GGUF_INT32, i32, -2000000000);
    SCALAR("test.f32", GGUF_FLOAT32, f32, 3.5f);
    SCALAR("test.bool", GGUF_BOOL, b, true);
    SCALAR("test.bool_false", GGUF_BOOL, b, false);
    SCALAR("test.u64", GGUF_UINT64, u64, (1ull << 63) + 5);
    SCALAR("test.i64", GGUF_INT64, i64, -(1ll << 62) - 7);
    SCALAR("test.f64", GGUF_FLOAT64, f64, -1.0 / 3.0);
#undef SCALAR
    CHECK(gguf_get_str(f, "test.str", &s, &e) == 0 && str_is(s, UNI));
    CHECK(gguf_get_str(f, "test.str_empty", &s, &e) == 0 && s.len == 0);
    check_arr(f, "test.arr_u8", GGUF_UINT8, AU8, 4, 1);
    check_arr(f, "test.arr_i8", GGUF_INT8, AI8, 3, 1);
    check_arr(f, "test.arr_u16", GGUF_UINT16, AU16, 2, 2);
    check_arr(f, "test.arr_i16", GGUF_INT16, AI16, 2, 2);
    check_arr(f, "test.arr_u32", GGUF_UINT32, AU32, 2, 4);
    check_arr(f, "test.arr_i32", GGUF_INT32, AI32, 3, 4);
    check_arr(f, "test.arr_f32", GGUF_FLOAT32, AF32, 3, 4);
    check_arr(f, "test.arr_bool", GGUF_BOOL, ABOOL, 3, 1);
    check_arr(f, "test.arr_u64", GGUF_UINT64, AU64, 1, 8);
    check_arr(f, "test.arr_i64", GGUF_INT64, AI64, 2, 8);
    check_arr(f, "test.arr_f64", GGUF_FLOAT64, AF64, 2, 8);
    gguf_array a;
    CHECK(gguf_get_arr(f, "test.arr_str", GGUF_STRING, &a, &e) == 0 && a.n == 4);
    for (uint64_t i = 0; i < 4 && a.n == 4 && a.type == GGUF_STRING; i++) CHECKF(str_is(a.strs[i], STRS[i]), "arr_str[%d]", (int)i);
    /* [[[1, 2], [3]], [[4, 5, 6]]] as gguf-py encodes it: int -> int32 */
    CHECK(gguf_get_arr(f, "test.nested", GGUF_ARRAY, &a, &e) == 0 && a.n == 2);
    if (a.n == 2 && a.type == GGUF_ARRAY) {
        const gguf_array *m0 = &a.arrs[0].v.arr, *m1 = &a.arrs[1].v.arr;
        CHECK(m0->type == GGUF_ARRAY && m0->n == 2 && m1->type == GGUF_ARRAY && m1->n == 1);
        if (m0->n == 2 && m1->n == 1 && m0->type == GGUF_ARRAY && m1->type == GGUF_ARRAY) {
            const gguf_array *l0 = &m0->arrs[0].v.arr, *l1 = &m0->arrs[1].v.arr, *l2 = &m1->arrs[0].v.arr;
            CHECK(l0->type == GGUF_INT32 && l0->n == 2 && memcmp(l0->data, (int32_t[]){1, 2}, 8) == 0);
            CHECK(l1->type == GGUF_INT32 && l1->n == 1 && memcmp(l1->data, (int32_t[]){3}, 4) == 0);
            CHECK(l2->type == GGUF_INT32 && l2->n == 3 && memcmp(l2->data, (int32_t[]){4, 5, 6}, 12) == 0);
        }
    }
    CHECK(gguf_get_arr(f, "test.nested_str", GGUF_ARRAY, &a, &e) == 0 && a.n == 2);
    if (a.n == 2 && a.type == GGUF_ARRAY) {
        const gguf_array *x = &a.arrs[0].v.arr, *y = &a.arrs[1].v.arr;
        CHECK(x->type == GGUF_STRING && x->n == 2 && str_is(x->strs[0], "x") && str_is(x->strs[1], "y"));
        CHECK(y->type == GGUF_STRING && y->n == 1 && str_is(y->strs[0], "z"));
    }

    /* tensors, in the order gguf-py wrote them, each at a multiple of 64 */
    CHECK(gguf_n_tensors(f) == 3 && gguf_data_offset(f) % 64 == 0);
    const gguf_tensor *t = gguf_find_tensor(f, "t.f32");
    CHECK(t && t->type == QT_F32 && t->n_dims == 2 && t->ne[0] == 8 && t->ne[1] == 3 && t->offset == 0 && t->nbytes == 96);
    for (int i = 0; t && i < 24; i++) {
        float v;
        memcpy(&v, (const uint8_t *)t->data + 4 * i, 4);
        CHECKF(v == (float)i * 0.25f - 1.0f, "t.f32[%d] = %g", i, v);
    }
    t = gguf_find_tensor(f, "t.f16");
    CHECK(t && t->type == QT_F16 && t->n_dims == 1 && t->ne[0] == 16 && t->offset == 128 && t->nbytes == 32);
    for (int i = 0; t && i < 16; i++) {
        uint16_t h;
        memcpy(&h, (const uint8_t *)t->data + 2 * i, 2);
        CHECKF(fp16_to_f32(h) == (float)i / 8.0f, "t.f16[%d] = %g", i, fp16_to_f32(h));
    }
    t = gguf_find_tensor(f, "t.q8_0");
    CHECK(t && t->type == QT_Q8_0 && t->ne[0] == 64 && t->ne[1] == 2 && t->offset == 192 && t->nbytes == 136);
    for (int b = 0; t && b < 4; b++) { /* block b: d = 0.5 (b + 1), qs = 127, -15, ..., 15 */
        const uint8_t *blk = (const uint8_t *)t->data + 34 * b;
        uint16_t d;
        memcpy(&d, blk, 2);
        CHECKF(fp16_to_f32(d) == 0.5f * (float)(b + 1), "q8_0 block %d d = %g", b, fp16_to_f32(d));
        for (int j = 0; j < 32; j++)
            CHECKF((int8_t)blk[2 + j] == (j == 0 ? 127 : j - 16), "q8_0 block %d q[%d] = %d", b, j, (int8_t)blk[2 + j]);
    }
}

/* The same content, written by our writer from scratch (not copied from the fixture). */
static int write_ours(const char *path, err *e) {
    gguf_writer *w = gguf_writer_new();
    int rc = 0;
    rc |= gguf_writer_set_str(w, "general.architecture", "llama");
    rc |= gguf_writer_set_alignment(w, 64);
    rc |= gguf_writer_set_u8(w, "test.u8", 200);
    rc |= gguf_writer_set_i8(w, "test.i8", -100);
    rc |= gguf_writer_set_u16(w, "test.u16", 60000);
    rc |= gguf_writer_set_i16(w, "test.i16", -30000);
    rc |= gguf_writer_set_u32(w, "test.u32", 4000000000u);
    rc |= gguf_writer_set_i32(w, "test.i32", -2000000000);
    rc |= gguf_writer_set_f32(w, "test.f32", 3.5f);
    rc |= gguf_writer_set_bool(w, "test.bool", true);
    rc |= gguf_writer_set_bool(w, "test.bool_false", false);
    rc |= gguf_writer_set_str(w, "test.str", UNI);
    rc |= gguf_writer_set_str(w, "test.str_empty", "");
    rc |= gguf_writer_set_u64(w, "test.u64", (1ull << 63) + 5);
    rc |= gguf_writer_set_i64(w, "test.i64", -(1ll << 62) - 7);
    rc |= gguf_writer_set_f64(w, "test.f64", -1.0 / 3.0);
    rc |= gguf_writer_set_arr(w, "test.arr_u8", GGUF_UINT8, AU8, 4);
    rc |= gguf_writer_set_arr(w, "test.arr_i8", GGUF_INT8, AI8, 3);
    rc |= gguf_writer_set_arr(w, "test.arr_u16", GGUF_UINT16, AU16, 2);
    rc |= gguf_writer_set_arr(w, "test.arr_i16", GGUF_INT16, AI16, 2);
    rc |= gguf_writer_set_arr(w, "test.arr_u32", GGUF_UINT32, AU32, 2);
    rc |= gguf_writer_set_arr(w, "test.arr_i32", GGUF_INT32, AI32, 3);
    rc |= gguf_writer_set_arr(w, "test.arr_f32", GGUF_FLOAT32, AF32, 3);
    rc |= gguf_writer_set_arr(w, "test.arr_bool", GGUF_BOOL, ABOOL, 3);
    rc |= gguf_writer_set_arr(w, "test.arr_u64", GGUF_UINT64, AU64, 1);
    rc |= gguf_writer_set_arr(w, "test.arr_i64", GGUF_INT64, AI64, 2);
    rc |= gguf_writer_set_arr(w, "test.arr_f64", GGUF_FLOAT64, AF64, 2);
    rc |= gguf_writer_set_arr_str(w, "test.arr_str", STRS, 4);
    static const int32_t l0[] = {1, 2}, l1[] = {3}, l2[] = {4, 5, 6};
    gguf_value leaves[3] = {{.type = GGUF_ARRAY}, {.type = GGUF_ARRAY}, {.type = GGUF_ARRAY}};
    leaves[0].v.arr = (gguf_array){.type = GGUF_INT32, .n = 2, .data = l0};
    leaves[1].v.arr = (gguf_array){.type = GGUF_INT32, .n = 1, .data = l1};
    leaves[2].v.arr = (gguf_array){.type = GGUF_INT32, .n = 3, .data = l2};
    gguf_value mid[2] = {{.type = GGUF_ARRAY}, {.type = GGUF_ARRAY}};
    mid[0].v.arr = (gguf_array){.type = GGUF_ARRAY, .n = 2, .arrs = leaves};
    mid[1].v.arr = (gguf_array){.type = GGUF_ARRAY, .n = 1, .arrs = leaves + 2};
    gguf_value top = {.type = GGUF_ARRAY};
    top.v.arr = (gguf_array){.type = GGUF_ARRAY, .n = 2, .arrs = mid};
    rc |= gguf_writer_set_value(w, "test.nested", &top);
    gguf_str xs[] = {{"x", 1}, {"y", 1}}, zs[] = {{"z", 1}};
    gguf_value sv[2] = {{.type = GGUF_ARRAY}, {.type = GGUF_ARRAY}};
    sv[0].v.arr = (gguf_array){.type = GGUF_STRING, .n = 2, .strs = xs};
    sv[1].v.arr = (gguf_array){.type = GGUF_STRING, .n = 1, .strs = zs};
    top.v.arr = (gguf_array){.type = GGUF_ARRAY, .n = 2, .arrs = sv};
    rc |= gguf_writer_set_value(w, "test.nested_str", &top);
    if (rc) {
        gguf_writer_free(w);
        return err_set(e, ERR_ARG, "a setter failed");
    }
    float f32[24];
    uint16_t f16[16];
    for (int i = 0; i < 24; i++) f32[i] = (float)i * 0.25f - 1.0f;
    for (int i = 0; i < 16; i++) f16[i] = fp16_from_f32((float)i / 8.0f);
    uint8_t q8[4 * 34];
    for (int b = 0; b < 4; b++) {
        uint16_t d = fp16_from_f32(0.5f * (float)(b + 1));
        memcpy(q8 + 34 * b, &d, 2);
        for (int j = 0; j < 32; j++) q8[34 * b + 2 + j] = (uint8_t)(int8_t)(j == 0 ? 127 : j - 16);
    }
    int64_t ne_f32[] = {8, 3}, ne_f16[] = {16}, ne_q8[] = {64, 2};
    if (!(rc = gguf_writer_add_tensor(w, "t.f32", QT_F32, 2, ne_f32, f32, e)) &&
        !(rc = gguf_writer_add_tensor(w, "t.f16", QT_F16, 1, ne_f16, f16, e)) &&
        !(rc = gguf_writer_add_tensor(w, "t.q8_0", QT_Q8_0, 2, ne_q8, q8, e)))
        rc = gguf_writer_write(w, path, e);
    gguf_writer_free(w);
    return rc;
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    *n = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *p = malloc(*n);
    if (p && fread(p, 1, *n, fp) != *n) {
        free(p);
        p = NULL;
    }
    fclose(fp);
    return p;
}

int main(void) {
    gguf_file *f = NULL;
    err e = {0};
    int rc = gguf_open(&f, FIXTURE, &e);
    CHECKF(rc == 0, "%s (regenerate with python3 scripts/gen_gguf_fixtures.py)", e.msg);
    if (rc) return check_report("test_gguf_pyfixture");
    check_fixture(f);

    char ours[64];
    snprintf(ours, sizeof ours, "%s.%d", OURS, (int)getpid());
    rc = write_ours(ours, &e);
    CHECKF(rc == 0, "%s", e.msg);
    gguf_file *g = NULL;
    CHECKF(rc == 0 && gguf_open(&g, ours, &e) == 0, "%s", e.msg);
    if (g) {
        check_fixture(g); /* our writer's copy passes the same checks */
        gguf_close(g);
    }
    size_t na = 0, nb = 0;
    uint8_t *a = slurp(FIXTURE, &na), *b = slurp(ours, &nb);
    size_t first = 0;
    while (a && b && first < na && first < nb && a[first] == b[first]) first++;
    CHECKF(a && b && na == nb && first == na, "our writer's file differs from gguf-py's at byte %zu (sizes %zu, %zu)",
           first, na, nb);
    free(a);
    free(b);
    CHECKF(rename(ours, OURS) == 0, "rename %s to %s", ours, OURS);
    gguf_close(f);
    return check_report("test_gguf_pyfixture");
}
