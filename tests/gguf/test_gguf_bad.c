/* test_gguf_bad: hostile and broken inputs. Each case checks that opening fails with the right error code
 * AND that the message names the important fact (the byte offset, the value found, the limit). Also:
 * every prefix of a small valid file fails cleanly (no crash, ASan-clean: each prefix is opened from an
 * exactly-sized heap copy), and regressions found by fuzzing, each named after its bug. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gguf/gguf.h"
#include "gguf_bytes.h"
#include "quant/qtype.h"

static const uint64_t NE4[] = {4};

/* A small valid file: 3 keys (string, array of strings, nested array), two F32 tensors; the second one's
 * data ends exactly at the end of the file, so that every proper prefix is missing something. */
static void build_valid(bb *b) {
    bb_header(b, 3, 2, 3);
    bb_key(b, "general.name", GGUF_STRING);
    bb_str(b, "tiny");
    bb_key(b, "tok", GGUF_ARRAY);
    bb_u32(b, GGUF_STRING);
    bb_u64(b, 2);
    bb_str(b, "a");
    bb_str(b, "bc");
    bb_key(b, "nest", GGUF_ARRAY);
    bb_u32(b, GGUF_ARRAY);
    bb_u64(b, 1);
    bb_u32(b, GGUF_UINT16);
    bb_u64(b, 2);
    bb_u16(b, 7);
    bb_u16(b, 9);
    bb_tensor(b, "w0", 1, NE4, QT_F32, 0);
    bb_tensor(b, "w1", 1, NE4, QT_F32, 32);
    bb_pad(b, 32);
    for (int i = 0; i < 4; i++) bb_f32(b, (float)i);
    bb_pad(b, 32);
    for (int i = 0; i < 4; i++) bb_f32(b, (float)-i);
}

static void test_valid_and_every_prefix(void) {
    bb b = {0};
    build_valid(&b);
    err e;
    CHECKF(open_bytes(b.p, b.n, &e) == 0, "the valid file must open: %s", e.msg);
    int failed = 0, crashed_codes = 0;
    for (size_t n = 0; n < b.n; n++) {
        int rc = open_bytes(b.p, n, &e);
        if (rc == 0) failed++;
        if (rc != 0 && (e.msg[0] == 0 || rc != e.code)) crashed_codes++;
    }
    CHECKF(failed == 0, "%d of %zu prefixes opened although truncated", failed, b.n);
    CHECKF(crashed_codes == 0, "%d prefixes failed without a message", crashed_codes);
    /* a prefix cut inside the header names what was being read and the bytes left */
    CHECK(open_bytes(b.p, 10, &e) == ERR_FORMAT && contains(e.msg, "at byte 8: n_tensors needs 8 bytes but only 2"));
    /* cut inside the last tensor's data */
    CHECK(open_bytes(b.p, b.n - 1, &e) == ERR_FORMAT && contains(e.msg, "'w1'") &&
          contains(e.msg, "past the end of the file"));
    bb_free(&b);
}

static void test_magic_and_version(void) {
    err e;
    bb b = {0};
    bb_put(&b, "GGML", 4);
    bb_u32(&b, 3);
    bb_u64(&b, 0);
    bb_u64(&b, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "magic is \"GGML\"") && contains(e.msg, "GGUF"), "%s", e.msg);
    b.p[0] = 0x7f;
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "\\x7fGML"), "%s", e.msg);
    bb_free(&b);
    for (uint32_t v = 1; v <= 2; v++) {
        bb_header(&b, v, 0, 0);
        char want[64];
        snprintf(want, sizeof want, "GGUF version %u is not supported (only v3)", v);
        CHECKF(open_bytes(b.p, b.n, &e) == ERR_UNSUPPORTED && contains(e.msg, want), "v%u: %s", v, e.msg);
        bb_free(&b);
    }
    bb_header(&b, 4, 0, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_UNSUPPORTED && contains(e.msg, "version 4"), "%s", e.msg);
    bb_free(&b);
}

static void test_absurd_counts(void) {
    err e;
    bb b = {0};
    bb_header(&b, 3, 0, 1ull << 40);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_RANGE && contains(e.msg, "n_kv 1099511627776 exceeds the cap"), "%s", e.msg);
    bb_free(&b);
    bb_header(&b, 3, UINT64_MAX, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_RANGE && contains(e.msg, "n_tensors 18446744073709551615"), "%s", e.msg);
    bb_free(&b);
    /* under the caps, but more than the rest of the file could hold */
    bb_header(&b, 3, 1000, 1000);
    bb_key(&b, "k", GGUF_UINT8);
    bb_u8(&b, 1);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "1000 tensors and 1000 key/values") &&
          contains(e.msg, "only 14 are left"), "%s", e.msg);
    bb_free(&b);
}

static void test_string_and_array_past_end(void) {
    err e;
    bb b = {0};
    bb_header(&b, 3, 0, 1);
    bb_key(&b, "k", GGUF_STRING); /* key at 24, type at 33, string length at 37 */
    bb_u64(&b, 9999999);
    bb_put(&b, "abc", 3);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT &&
          contains(e.msg, "at byte 37: string length 9999999 exceeds the 3 bytes left in the file") &&
          contains(e.msg, "key 'k'"), "%s", e.msg);
    bb_free(&b);
    bb_header(&b, 3, 0, 1);
    bb_key(&b, "k", GGUF_STRING);
    bb_u64(&b, (1ull << 30) + 1);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_RANGE && contains(e.msg, "exceeds the cap of 1073741824"), "%s", e.msg);
    bb_free(&b);
    /* key length past the end */
    bb_header(&b, 3, 0, 1);
    bb_u64(&b, 500);
    bb_put(&b, "key and then some more bytes..", 30);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "at byte 24: key length 500 exceeds the 30 bytes left"), "%s", e.msg);
    bb_free(&b);
    /* array count past the end: 1000 u32 in 8 bytes; array header at 37, count at 41 */
    bb_header(&b, 3, 0, 1);
    bb_key(&b, "arr", GGUF_ARRAY);
    bb_u32(&b, GGUF_UINT32);
    bb_u64(&b, 1000);
    bb_u64(&b, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "at byte 43: array count 1000 of uint32") &&
          contains(e.msg, "8 bytes left"), "%s", e.msg);
    bb_free(&b);
    /* array of strings whose count the rest cannot hold */
    bb_header(&b, 3, 0, 1);
    bb_key(&b, "arr", GGUF_ARRAY);
    bb_u32(&b, GGUF_STRING);
    bb_u64(&b, UINT64_MAX >> 33);
    bb_u64(&b, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "array count 2147483647 of string"), "%s", e.msg);
    bb_free(&b);
    bb_header(&b, 3, 0, 1);
    bb_key(&b, "arr", GGUF_ARRAY);
    bb_u32(&b, GGUF_UINT8);
    bb_u64(&b, (1ull << 32) + 1);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_RANGE && contains(e.msg, "exceeds the cap of 4294967296 elements"), "%s", e.msg);
    bb_free(&b);
}

/* An array nested `depth` deep (depth 1 = a plain array of u8). */
static void build_nested(bb *b, int depth) {
    bb_header(b, 3, 0, 1);
    bb_key(b, "deep", GGUF_ARRAY);
    for (int d = 1; d < depth; d++) {
        bb_u32(b, GGUF_ARRAY);
        bb_u64(b, 1);
    }
    bb_u32(b, GGUF_UINT8);
    bb_u64(b, 1);
    bb_u8(b, 42);
}

static void test_nesting(void) {
    err e;
    bb b = {0};
    build_nested(&b, GGUF_MAX_DEPTH);
    CHECKF(open_bytes(b.p, b.n, &e) == 0, "depth %d is allowed: %s", GGUF_MAX_DEPTH, e.msg);
    bb_free(&b);
    build_nested(&b, GGUF_MAX_DEPTH + 1);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_RANGE && contains(e.msg, "nested deeper than 8 levels"), "%s", e.msg);
    bb_free(&b);
}

static void test_unknown_value_type(void) {
    err e;
    bb b = {0};
    bb_header(&b, 3, 0, 1);
    bb_key(&b, "k", 13);
    bb_u32(&b, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "at byte 33: value type 13 is not a GGUF value type"), "%s", e.msg);
    bb_free(&b);
    bb_header(&b, 3, 0, 1);
    bb_key(&b, "k", GGUF_ARRAY);
    bb_u32(&b, 0xffffffffu);
    bb_u64(&b, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "array element type 4294967295"), "%s", e.msg);
    bb_free(&b);
}

/* A file with one tensor of the given shape/type/offset and `data` bytes of data after the header. */
static void build_tensor(bb *b, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off, size_t data) {
    bb_header(b, 3, 1, 0);
    bb_tensor(b, "blk.0.w", n_dims, ne, type, off);
    bb_pad(b, 32);
    for (size_t i = 0; i < data; i++) bb_u8(b, (uint8_t)i);
}

static void test_tensor_infos(void) {
    err e;
    bb b = {0};
    build_tensor(&b, 1, NE4, 99, 0, 16);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_UNSUPPORTED && contains(e.msg, "tensor 'blk.0.w' has type id 99") &&
          contains(e.msg, "Q4_K") && contains(e.msg, "at byte 51"), "%s", e.msg);
    bb_free(&b);
    build_tensor(&b, 1, NE4, 4, 0, 16); /* Q4_2: removed from the format */
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_UNSUPPORTED && contains(e.msg, "type id 4,"), "%s", e.msg);
    bb_free(&b);
    build_tensor(&b, 0, NE4, QT_F32, 0, 16);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "'blk.0.w' has n_dims 0, expected 1..4"), "%s", e.msg);
    bb_free(&b);
    const uint64_t ne5[] = {1, 1, 1, 1, 4};
    build_tensor(&b, 5, ne5, QT_F32, 0, 16);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "has n_dims 5, expected 1..4"), "%s", e.msg);
    bb_free(&b);
    const uint64_t ne33[] = {33};
    build_tensor(&b, 1, ne33, QT_Q8_0, 0, 64);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "ne[0] = 33, not a multiple of its block size 32"), "%s", e.msg);
    bb_free(&b);
    const uint64_t neg[] = {1ull << 63};
    build_tensor(&b, 1, neg, QT_F32, 0, 16);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "more than INT64_MAX"), "%s", e.msg);
    bb_free(&b);
    const uint64_t huge[] = {1ull << 32, 1ull << 32};
    build_tensor(&b, 2, huge, QT_F32, 0, 16);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "more than INT64_MAX elements"), "%s", e.msg);
    bb_free(&b);
    const uint64_t big_bytes[] = {1ull << 62};
    build_tensor(&b, 1, big_bytes, QT_F32, 0, 16);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "too large to address"), "%s", e.msg);
    bb_free(&b);
    build_tensor(&b, 1, NE4, QT_F32, 16, 64);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT &&
          contains(e.msg, "'blk.0.w' data offset 16 is not a multiple of the alignment 32"), "%s", e.msg);
    bb_free(&b);
    build_tensor(&b, 1, NE4, QT_F32, 0, 15);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "'blk.0.w' data (16 bytes at offset 0") &&
          contains(e.msg, "past the end of the file"), "%s", e.msg);
    bb_free(&b);
    build_tensor(&b, 1, NE4, QT_F32, UINT64_MAX & ~(uint64_t)31, 16);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "past the end of the file"), "%s", e.msg);
    bb_free(&b);
    /* tensor infos, but the data section would start past the end of the file */
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "t", 1, NE4, QT_F32, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "data section would start at byte 64"), "%s", e.msg);
    bb_free(&b);
}

static void test_overlap_and_duplicates(void) {
    err e;
    bb b = {0};
    const uint64_t ne16[] = {16};
    bb_header(&b, 3, 3, 0);
    bb_tensor(&b, "a", 1, ne16, QT_F32, 0);   /* [0, 64) */
    bb_tensor(&b, "z", 1, NE4, QT_F32, 128);  /* [128, 144): apart */
    bb_tensor(&b, "b", 1, NE4, QT_F32, 32);   /* [32, 48): inside a */
    bb_pad(&b, 32);
    for (int i = 0; i < 160; i++) bb_u8(&b, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "'a' (data [0, 64)) and 'b' (data [32, 48)) overlap"), "%s", e.msg);
    bb_free(&b);
    /* zero-size tensors at the same offset as others overlap nothing */
    const uint64_t ne0[] = {0};
    bb_header(&b, 3, 3, 0);
    bb_tensor(&b, "a", 1, NE4, QT_F32, 0);
    bb_tensor(&b, "e1", 1, ne0, QT_F32, 0);
    bb_tensor(&b, "e2", 1, ne0, QT_F32, 0);
    bb_pad(&b, 32);
    for (int i = 0; i < 16; i++) bb_u8(&b, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == 0, "%s", e.msg);
    bb_free(&b);

    bb_header(&b, 3, 2, 0);
    bb_tensor(&b, "same", 1, NE4, QT_F32, 0);
    bb_tensor(&b, "same", 1, NE4, QT_F32, 32); /* second info at byte 24 + 36 */
    bb_pad(&b, 32);
    for (int i = 0; i < 48; i++) bb_u8(&b, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "at byte 60: duplicate tensor name 'same'"), "%s", e.msg);
    bb_free(&b);

    bb_header(&b, 3, 0, 2);
    bb_key(&b, "dup.key", GGUF_UINT8); /* at 24 */
    bb_u8(&b, 1);
    bb_key(&b, "dup.key", GGUF_UINT32); /* at 24 + 8 + 7 + 4 + 1 = 44 */
    bb_u32(&b, 2);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT &&
          contains(e.msg, "at byte 44: duplicate key 'dup.key' (first at byte 24)"), "%s", e.msg);
    bb_free(&b);

    bb_header(&b, 3, 0, 1);
    bb_u64(&b, 3);
    bb_put(&b, "a\0b", 3);
    bb_u32(&b, GGUF_UINT8);
    bb_u8(&b, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "contains a NUL byte"), "%s", e.msg);
    bb_free(&b);
}

static void build_alignment(bb *b, uint32_t type, uint64_t value) {
    bb_header(b, 3, 0, 1);
    bb_key(b, "general.alignment", type);
    if (type == GGUF_UINT32) bb_u32(b, (uint32_t)value);
    else bb_u64(b, value);
}

static void test_alignment_values(void) {
    err e;
    bb b = {0};
    build_alignment(&b, GGUF_UINT32, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "general.alignment is 0, expected a nonzero power of two"), "%s", e.msg);
    bb_free(&b);
    build_alignment(&b, GGUF_UINT32, 3);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "general.alignment is 3"), "%s", e.msg);
    bb_free(&b);
    build_alignment(&b, GGUF_UINT64, 32);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "general.alignment has type uint64, expected uint32"), "%s", e.msg);
    bb_free(&b);
    build_alignment(&b, GGUF_UINT32, 1);
    CHECKF(open_bytes(b.p, b.n, &e) == 0, "%s", e.msg);
    bb_free(&b);
}

/* Found by fuzzing: split.count = 0 was accepted by gguf_open_memory but refused by gguf_open, so the
 * fuzzer's write-and-reopen round trip failed. Both now refuse it. */
static void test_split_count_zero_refused_from_memory(void) {
    err e;
    bb b = {0};
    bb_header(&b, 3, 0, 1);
    bb_key(&b, "split.count", GGUF_UINT16);
    bb_u16(&b, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_RANGE && contains(e.msg, "split.count is 0, expected 1..512"), "%s", e.msg);
    bb_free(&b);
    bb_header(&b, 3, 0, 1);
    bb_key(&b, "split.count", GGUF_UINT16);
    bb_u16(&b, 3);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_UNSUPPORTED && contains(e.msg, "opened by the path of its first part"), "%s", e.msg);
    bb_free(&b);
}

/* Found by fuzzing (UBSan): a split.count that is not an integer (here a bool) made the split check read
 * an uninitialized flag while composing its error. */
static void test_split_count_of_wrong_type_read_uninitialized_flag(void) {
    err e;
    bb b = {0};
    bb_header(&b, 3, 0, 1);
    bb_key(&b, "split.count", GGUF_BOOL);
    bb_u8(&b, 7);
    CHECKF(open_bytes(b.p, b.n, &e) == ERR_FORMAT && contains(e.msg, "split.count must be a nonnegative integer, found bool"), "%s", e.msg);
    bb_free(&b);
}

/* Found by fuzzing (UBSan): a file with neither tensors nor a tensor table offset a NULL tensor pointer. */
static void test_no_tensors_null_pointer_arithmetic(void) {
    err e;
    bb b = {0};
    bb_header(&b, 3, 0, 0);
    CHECKF(open_bytes(b.p, b.n, &e) == 0, "%s", e.msg);
    bb_free(&b);
}

/* err is optional: without one, the codes are the same (a wrapped message must not change the code). */
static void test_without_err(void) {
    bb b = {0};
    bb_header(&b, 3, 0, 1);
    bb_key(&b, "k", GGUF_STRING);
    bb_u64(&b, 100);
    gguf_file *f = NULL;
    CHECK(gguf_open_memory(&f, b.p, b.n, NULL) == ERR_FORMAT && f == NULL);
    bb_free(&b);
    bb_header(&b, 3, 1, 0);
    bb_tensor(&b, "t", 1, NE4, 99, 0);
    CHECK(gguf_open_memory(&f, b.p, b.n, NULL) == ERR_UNSUPPORTED && f == NULL);
    bb_free(&b);
}

static void test_files(void) {
    err e;
    gguf_file *f = NULL;
    CHECK(gguf_open(&f, "/nonexistent/model.gguf", &e) == ERR_NOTFOUND && contains(e.msg, "/nonexistent/model.gguf"));
    CHECK(f == NULL);
    CHECK(gguf_open(&f, "/tmp", &e) == ERR_IO && contains(e.msg, "not a regular file"));
    CHECK(gguf_open(&f, "/dev/null", &e) != 0);
}

int main(void) {
    test_valid_and_every_prefix();
    test_magic_and_version();
    test_absurd_counts();
    test_string_and_array_past_end();
    test_nesting();
    test_unknown_value_type();
    test_tensor_infos();
    test_overlap_and_duplicates();
    test_alignment_values();
    test_split_count_zero_refused_from_memory();
    test_split_count_of_wrong_type_read_uninitialized_flag();
    test_no_tensors_null_pointer_arithmetic();
    test_without_err();
    test_files();
    return check_report("test_gguf_bad");
}
