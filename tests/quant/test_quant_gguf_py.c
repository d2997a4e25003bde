/* test_quant_gguf_py: our scalar dequantizers and reference quantizers against an outside reference,
 * gguf-py's numpy `dequantize` / `quantize`, bit for bit.
 *
 * The fixtures are made by scripts/gen_quant_fixtures.py (its docstring and tests/quant/README.md give the
 * file format) and listed in tests/quant/fixtures/MANIFEST. For each one this runs
 * quant_ops_get(type, QUANT_ISA_SCALAR)->to_float (dequant fixtures) or ->from_float (quantize fixtures)
 * and prints one line: "Q4_K dequant: 48 blocks (12288 values) bit-exact", or the first mismatch with
 * block, index, ours and theirs. It fails on any differing bit (floats are compared as bit patterns, so
 * -0 vs 0 and NaN payloads count), on a NULL function, on a write past the output, and on a missing,
 * malformed or unlisted fixture.
 *
 * Run from the repo root (CTest does); an optional argument names another fixture folder. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "check.h"
#include "quant/quant.h"
#include "quant/qtype.h"

#define FIXTURE_DIR "tests/quant/fixtures"
#define HINT "regenerate with: python3 scripts/gen_quant_fixtures.py (from the repo root)"
#define FMT_VERSION 1u
#define HEADER_BYTES 48u
#define KIND_DEQUANT 1u
#define KIND_QUANTIZE 2u
#define MAX_BLOCKS (1u << 20) /* fixtures hold ~1e3 blocks; a bigger count means a corrupt header */
#define CANARY 64             /* bytes after every output buffer that must stay untouched */
#define CANARY_BYTE 0xA5

typedef struct fixture {
    uint32_t kind, type, blck, type_size;
    uint64_t n_blocks, n_values;
    const uint8_t *payload; /* points into the file's bytes */
} fixture;

static uint32_t rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd_u64(const uint8_t *p) { return (uint64_t)rd_u32(p) | (uint64_t)rd_u32(p + 4) << 32; }

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Results per fixture line, for the summary at the end. */
static char passed_list[2048], failed_list[2048];

static void note(char *list, const char *name, const char *kind) {
    size_t len = strlen(list);
    snprintf(list + len, 2048 - len, "%s%s %s", len ? ", " : "", name, kind);
}

static void fail(const char *name, const char *kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(const char *name, const char *kind, const char *fmt, ...) {
    va_list ap;
    printf("%s %s: FAIL: ", name, kind);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    check_failed++;
    note(failed_list, name, kind);
}

static void pass(const char *name, const char *kind, const fixture *f) {
    printf("%s %s: %llu blocks (%llu values) bit-exact\n", name, kind, (unsigned long long)f->n_blocks,
           (unsigned long long)f->n_values);
    check_passed++;
    note(passed_list, name, kind);
}

/* Reads a whole file into a malloc'd buffer; NULL (with errno) on failure. */
static uint8_t *read_file(const char *path, size_t *size) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    uint8_t *buf = NULL;
    long len = -1;
    if (fseek(fp, 0, SEEK_END) == 0) len = ftell(fp);
    if (len >= 0 && fseek(fp, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)) != NULL &&
        fread(buf, 1, (size_t)len, fp) != (size_t)len) {
        free(buf);
        buf = NULL;
        errno = EIO;
    }
    fclose(fp);
    *size = (size_t)len;
    return buf;
}

/* Checks the header against the manifest line and our type table; returns NULL if it is fine, else a
 * message saying what was expected and found. */
static const char *parse_header(const uint8_t *d, size_t size, uint32_t want_kind, const char *want_type,
                                fixture *f, char *msg, size_t cap) {
    if (size < HEADER_BYTES || memcmp(d, "L170QFX1", 8) != 0) {
        snprintf(msg, cap, "not a fixture (expected magic L170QFX1 and >= %u bytes, found %zu bytes); " HINT,
                 HEADER_BYTES, size);
        return msg;
    }
    uint32_t version = rd_u32(d + 8), hdr = rd_u32(d + 28);
    if (version != FMT_VERSION || hdr != HEADER_BYTES) {
        snprintf(msg, cap, "format version %u (header %u bytes); this test reads version %u (%u bytes); " HINT,
                 version, hdr, FMT_VERSION, HEADER_BYTES);
        return msg;
    }
    f->kind = rd_u32(d + 12);
    f->type = rd_u32(d + 16);
    f->blck = rd_u32(d + 20);
    f->type_size = rd_u32(d + 24);
    f->n_blocks = rd_u64(d + 32);
    f->n_values = rd_u64(d + 40);
    f->payload = d + HEADER_BYTES;
    const qtype_info *in = qtype_get(f->type);
    if (!in || strcasecmp(in->name, want_type) != 0 || f->kind != want_kind) {
        snprintf(msg, cap, "header says kind %u type %u (%s), MANIFEST says kind %u type %s", f->kind, f->type,
                 in ? in->name : "unknown", want_kind, want_type);
        return msg;
    }
    if ((int64_t)f->blck != in->blck || f->type_size != in->type_size) {
        snprintf(msg, cap, "block of %u values in %u bytes, our qtype table says %lld values in %zu bytes",
                 f->blck, f->type_size, (long long)in->blck, in->type_size);
        return msg;
    }
    if (f->n_blocks == 0 || f->n_blocks > MAX_BLOCKS || f->n_values != f->n_blocks * f->blck) {
        snprintf(msg, cap, "%llu blocks / %llu values: expected 1..%u blocks of %u values",
                 (unsigned long long)f->n_blocks, (unsigned long long)f->n_values, MAX_BLOCKS, f->blck);
        return msg;
    }
    uint64_t want_size = HEADER_BYTES + f->n_blocks * f->type_size + f->n_values * 4;
    if (size != want_size) {
        snprintf(msg, cap, "file is %zu bytes, header implies %llu (truncated or corrupt); " HINT, size,
                 (unsigned long long)want_size);
        return msg;
    }
    return NULL;
}

static bool canary_intact(const uint8_t *p) {
    for (int i = 0; i < CANARY; i++)
        if (p[i] != CANARY_BYTE) return false;
    return true;
}

static void run_dequant(const char *name, const fixture *f, const quant_ops *ops) {
    if (!ops || !ops->to_float) {
        fail(name, "dequant", "to_float is NULL (not written yet?)");
        return;
    }
    size_t qbytes = (size_t)f->n_blocks * f->type_size, fbytes = (size_t)f->n_values * 4;
    /* own aligned copies: the payload offsets are not multiples of the block's alignment */
    void *blocks = malloc(qbytes);
    float *want = malloc(fbytes);
    uint8_t *got = malloc(fbytes + CANARY);
    if (!blocks || !want || !got) {
        fail(name, "dequant", "out of memory");
        free(blocks), free(want), free(got);
        return;
    }
    memcpy(blocks, f->payload, qbytes);
    memcpy(want, f->payload + qbytes, fbytes);
    memset(got, CANARY_BYTE, fbytes + CANARY);
    ops->to_float(blocks, (float *)got, (int64_t)f->n_values);

    const float *ours = (const float *)got;
    uint64_t n_bad = 0, first = 0;
    for (uint64_t i = 0; i < f->n_values; i++) {
        if (f32_bits(ours[i]) != f32_bits(want[i]) && n_bad++ == 0) first = i;
    }
    if (n_bad) {
        fail(name, "dequant",
             "block %llu, index %llu: ours %a (0x%08x) vs gguf-py %a (0x%08x); %llu of %llu values differ",
             (unsigned long long)(first / f->blck), (unsigned long long)(first % f->blck), (double)ours[first],
             f32_bits(ours[first]), (double)want[first], f32_bits(want[first]), (unsigned long long)n_bad,
             (unsigned long long)f->n_values);
    } else if (!canary_intact(got + fbytes)) {
        fail(name, "dequant", "to_float wrote past the %llu output values", (unsigned long long)f->n_values);
    } else {
        pass(name, "dequant", f);
    }
    free(blocks), free(want), free(got);
}

static void run_quantize(const char *name, const fixture *f, const quant_ops *ops) {
    if (!ops || !ops->from_float) {
        fail(name, "quantize", "from_float is NULL (not written yet?)");
        return;
    }
    size_t fbytes = (size_t)f->n_values * 4, qbytes = (size_t)f->n_blocks * f->type_size;
    float *in = malloc(fbytes);
    uint8_t *got = malloc(qbytes + CANARY);
    if (!in || !got) {
        fail(name, "quantize", "out of memory");
        free(in), free(got);
        return;
    }
    memcpy(in, f->payload, fbytes);
    const uint8_t *want = f->payload + fbytes;
    /* pre-filled so that a byte the quantizer forgets to write shows up as a mismatch */
    memset(got, CANARY_BYTE, qbytes + CANARY);
    ops->from_float(in, got, (int64_t)f->n_values);

    uint64_t n_bad_blocks = 0, first = 0;
    for (uint64_t b = 0; b < f->n_blocks; b++) {
        const uint8_t *o = got + b * f->type_size, *t = want + b * f->type_size;
        if (memcmp(o, t, f->type_size) == 0) continue;
        if (n_bad_blocks++ == 0) {
            first = b * f->type_size;
            while (got[first] == want[first]) first++;
        }
    }
    if (n_bad_blocks) {
        uint64_t b = first / f->type_size;
        char extra[256] = "";
        /* what the differing block means, in values, when we can dequantize it */
        if (ops->to_float && f->blck <= 256) {
            float vo[256], vt[256];
            ops->to_float(got + b * f->type_size, vo, f->blck);
            ops->to_float(want + b * f->type_size, vt, f->blck);
            for (uint32_t j = 0; j < f->blck; j++) {
                if (f32_bits(vo[j]) == f32_bits(vt[j])) continue;
                snprintf(extra, sizeof extra, "; first differing value %u: input %a, ours -> %a, gguf-py -> %a", j,
                         (double)in[b * f->blck + j], (double)vo[j], (double)vt[j]);
                break;
            }
        }
        fail(name, "quantize", "block %llu, byte %llu: ours 0x%02x vs gguf-py 0x%02x; %llu of %llu blocks differ%s",
             (unsigned long long)b, (unsigned long long)(first % f->type_size), got[first], want[first],
             (unsigned long long)n_bad_blocks, (unsigned long long)f->n_blocks, extra);
    } else if (!canary_intact(got + qbytes)) {
        fail(name, "quantize", "from_float wrote past the %llu output blocks", (unsigned long long)f->n_blocks);
    } else {
        pass(name, "quantize", f);
    }
    free(in), free(got);
}

/* Every *.bin in the folder must be in the MANIFEST, or a fixture would silently go unchecked. */
static void check_unlisted(const char *dir, const char *listed) {
    DIR *dp = opendir(dir);
    if (!dp) return; /* the MANIFEST was read from it, so this cannot fail in practice */
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 4, ".bin") != 0) continue;
        char key[300];
        snprintf(key, sizeof key, "\n%s\n", e->d_name);
        if (!strstr(listed, key)) fail(e->d_name, "fixture", "not listed in %s/MANIFEST; " HINT, dir);
    }
    closedir(dp);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : FIXTURE_DIR;
    char path[1024];
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    FILE *mf = fopen(path, "r");
    if (!mf) {
        fprintf(stderr,
                "test_quant_gguf_py: cannot open %s: %s\n"
                "  expected the fixtures in %s relative to the working directory (CTest runs tests from the\n"
                "  repo root); if they are missing, " HINT "\n",
                path, strerror(errno), dir);
        return 1;
    }
    char line[512], listed[16384] = "\n";
    int n_fixtures = 0;
    while (fgets(line, sizeof line, mf)) {
        char file[256], kind[16], type[32];
        if (line[0] == '#' || line[0] == '\n') continue;
        if (sscanf(line, "%255s %15s %31s", file, kind, type) != 3) {
            fail("MANIFEST", "line", "expected \"file kind type\", found: %s", line);
            continue;
        }
        n_fixtures++;
        size_t len = strlen(listed);
        snprintf(listed + len, sizeof listed - len, "%s\n", file);
        uint32_t want_kind = strcmp(kind, "dequant") == 0 ? KIND_DEQUANT
                             : strcmp(kind, "quantize") == 0 ? KIND_QUANTIZE : 0;
        snprintf(path, sizeof path, "%s/%s", dir, file);
        size_t size = 0;
        uint8_t *data = read_file(path, &size);
        if (!data) {
            fail(type, kind, "cannot read %s: %s; " HINT, path, strerror(errno));
            continue;
        }
        fixture f;
        char msg[512];
        const char *bad = want_kind ? parse_header(data, size, want_kind, type, &f, msg, sizeof msg)
                                    : "MANIFEST kind is neither dequant nor quantize";
        if (bad) {
            fail(type, kind, "%s: %s", path, bad);
        } else {
            const quant_ops *ops = quant_ops_get((enum qtype)f.type, QUANT_ISA_SCALAR);
            const char *name = qtype_get(f.type)->name;
            if (f.kind == KIND_DEQUANT)
                run_dequant(name, &f, ops);
            else
                run_quantize(name, &f, ops);
        }
        free(data);
    }
    fclose(mf);
    if (n_fixtures == 0) fail("MANIFEST", "fixtures", "lists no fixture; " HINT);
    check_unlisted(dir, listed);
    printf("bit-exact with gguf-py: %s\n", passed_list[0] ? passed_list : "(none)");
    printf("failing: %s\n", failed_list[0] ? failed_list : "(none)");
    return check_report("test_quant_gguf_py");
}
