/* llm170 gguf-dump: prints a GGUF file's summary, metadata (architecture keys, general.*, the rest),
 * a tokenizer summary, the tensor table and the quantization mix.
 *
 * It reads only the header: the reader maps the file and parses key/values and tensor infos, and nothing
 * here dereferences a tensor's data pointer, so a 20 GB file dumps in milliseconds. Long strings and
 * arrays are summarized (type, length, first items); --all-tokens prints the whole vocabulary. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gguf/gguf.h"
#include "quant/qtype.h"

#define MAX_STR 80  /* bytes of a string value shown before truncating */
#define MAX_ITEMS 6 /* array items shown */

/* Prints s (len bytes) quoted, escaping control characters; at most max bytes (then "..."). */
static void print_str(const char *s, uint64_t len, uint64_t max) {
    uint64_t n = len < max ? len : max;
    putchar('"');
    for (uint64_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            fputs("\\n", stdout);
        else if (c == '\t')
            fputs("\\t", stdout);
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    putchar('"');
    if (n < len) printf("... (%" PRIu64 " bytes)", len);
}

static size_t vtype_size(enum gguf_vtype t) {
    switch (t) {
    case GGUF_UINT8: case GGUF_INT8: case GGUF_BOOL: return 1;
    case GGUF_UINT16: case GGUF_INT16: return 2;
    case GGUF_UINT32: case GGUF_INT32: case GGUF_FLOAT32: return 4;
    case GGUF_UINT64: case GGUF_INT64: case GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

/* One fixed-size element of type t at p (little-endian, as the file stores it; we run little-endian). */
static void print_scalar(enum gguf_vtype t, const void *p) {
    switch (t) {
    case GGUF_UINT8: printf("%u", *(const uint8_t *)p); break;
    case GGUF_INT8: printf("%d", *(const int8_t *)p); break;
    case GGUF_UINT16: { uint16_t v; memcpy(&v, p, 2); printf("%u", v); break; }
    case GGUF_INT16: { int16_t v; memcpy(&v, p, 2); printf("%d", v); break; }
    case GGUF_UINT32: { uint32_t v; memcpy(&v, p, 4); printf("%" PRIu32, v); break; }
    case GGUF_INT32: { int32_t v; memcpy(&v, p, 4); printf("%" PRId32, v); break; }
    case GGUF_FLOAT32: { float v; memcpy(&v, p, 4); printf("%g", (double)v); break; }
    case GGUF_BOOL: printf("%s", *(const uint8_t *)p ? "true" : "false"); break;
    case GGUF_UINT64: { uint64_t v; memcpy(&v, p, 8); printf("%" PRIu64, v); break; }
    case GGUF_INT64: { int64_t v; memcpy(&v, p, 8); printf("%" PRId64, v); break; }
    case GGUF_FLOAT64: { double v; memcpy(&v, p, 8); printf("%g", v); break; }
    default: printf("?"); break;
    }
}

static void print_value(const gguf_value *v) {
    switch (v->type) {
    case GGUF_STRING: print_str(v->v.str.ptr, v->v.str.len, MAX_STR); break;
    case GGUF_ARRAY: {
        const gguf_array *a = &v->v.arr;
        printf("[%s x %" PRIu64 "]", gguf_vtype_name(a->type), a->n);
        uint64_t n = a->n < MAX_ITEMS ? a->n : MAX_ITEMS;
        for (uint64_t i = 0; i < n; i++) {
            printf(i ? ", " : " ");
            if (a->type == GGUF_STRING)
                print_str(a->strs[i].ptr, a->strs[i].len, 24);
            else if (a->type == GGUF_ARRAY)
                printf("[%s x %" PRIu64 "]", gguf_vtype_name(a->arrs[i].v.arr.type), a->arrs[i].v.arr.n);
            else
                print_scalar(a->type, (const char *)a->data + i * vtype_size(a->type));
        }
        if (n < a->n) printf(", ...");
        break;
    }
    default: print_scalar(v->type, &v->v); break;
    }
}

/* What qwen4exp's own keys mean (key after "ARCH."; /work/shared/specs/qwen4exp.md §3.2, docs/qwen4exp.md),
 * printed after the value: hyper-connections, the QSA indexer and PLE have no counterpart in other
 * architectures, so their names alone do not say what they hold. */
static const struct { const char *key, *meaning; } key_names[] = {
    {"hyper_connection.count", "hyper-connection residual streams S (residual width S x embedding_length)"},
    {"hyper_connection.low_rank", "hyper-connection low rank R of the stream mixer"},
    {"attention.indexer.head_count", "QSA lightning-indexer query heads"},
    {"attention.indexer.key_length", "QSA indexer head dim (raw key and block key width)"},
    {"attention.indexer.top_k", "QSA token budget B per query (B / compress ratio blocks selected)"},
    {"attention.compress_ratios", "per block: QSA keys per compressed block (0 = GDN block)"},
    {"ple.layers", "PLE n-gram embedding blocks (0-based)"},
    {"ple.ngram_size", "PLE n-gram order N (also the conv dilation)"},
    {"ple.heads_per_ngram", "PLE hash heads per n-gram order"},
    {"ple.conv_kernel", "PLE dilated causal conv kernel K_p"},
    {"ple.layer_multipliers", "PLE hash multipliers (one per n-gram position)"},
    {"ple.head_offsets", "PLE hash head g: first row in per_layer_token_embd"},
    {"ple.head_vocab_sizes", "PLE hash head g: table size (a prime)"},
    {"ple.eos_token_id", "PLE n-gram reset token"},
    {"ple.image_token_id", "PLE hash id of image positions"},
    {"embedding_length_per_layer_input", "PLE table row width d_p"},
};

static const char *key_meaning(const char *key, const char *arch_prefix) {
    size_t n = strlen(arch_prefix);
    if (!n || strncmp(key, arch_prefix, n)) return NULL;
    for (size_t i = 0; i < sizeof key_names / sizeof key_names[0]; i++)
        if (!strcmp(key + n, key_names[i].key)) return key_names[i].meaning;
    return NULL;
}

static void print_kv_named(const gguf_kv *kv, const char *arch_prefix) {
    printf("  %-44s ", kv->key);
    if (kv->value.type != GGUF_ARRAY) printf("%-8s ", gguf_vtype_name(kv->value.type));
    print_value(&kv->value);
    const char *meaning = key_meaning(kv->key, arch_prefix);
    if (meaning) printf("   # %s", meaning);
    putchar('\n');
}

static void print_kv(const gguf_kv *kv) { print_kv_named(kv, ""); }

static bool starts_with(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

static const char *token_type_name(int32_t t) {
    static const char *const names[] = {"undefined", "normal", "unknown", "control", "user-defined", "unused",
                                        "byte"};
    return t >= 0 && t <= 6 ? names[t] : "?";
}

static void print_tokenizer(const gguf_file *f, bool all_tokens) {
    err e = {0};
    gguf_str s;
    gguf_array toks = {0}, types = {0}, merges = {0};
    bool have_toks = !gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STRING, &toks, &e);
    bool have_types = !gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_INT32, &types, &e) && types.n == toks.n;
    bool have_merges = !gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_STRING, &merges, &e);
    printf("\ntokenizer:\n");
    if (!gguf_find_kv(f, "tokenizer.ggml.model")) {
        printf("  (no tokenizer.ggml.model key)\n");
        return;
    }
    printf("  %-24s ", "model");
    if (!gguf_get_str(f, "tokenizer.ggml.model", &s, &e)) print_str(s.ptr, s.len, MAX_STR);
    printf("\n  %-24s ", "pre");
    if (!gguf_get_str(f, "tokenizer.ggml.pre", &s, &e)) print_str(s.ptr, s.len, MAX_STR);
    else printf("(absent)");
    printf("\n  %-24s %" PRIu64 " tokens", "vocab", have_toks ? toks.n : 0);
    if (have_types && toks.n) {
        uint64_t count[8] = {0};
        for (uint64_t i = 0; i < types.n; i++) {
            int32_t t;
            memcpy(&t, (const char *)types.data + 4 * i, 4);
            count[t >= 0 && t <= 6 ? t : 7]++;
        }
        printf(" (");
        bool first = true;
        for (int t = 0; t < 8; t++)
            if (count[t]) {
                printf("%s%" PRIu64 " %s", first ? "" : ", ", count[t], t < 7 ? token_type_name(t) : "other");
                first = false;
            }
        printf(")");
    }
    printf("\n  %-24s %" PRIu64 "\n", "merges", have_merges ? merges.n : 0);
    /* every *_token_id key, with the token's text */
    for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (!starts_with(kv->key, "tokenizer.ggml.") || strstr(kv->key, "_token_id") == NULL) continue;
        uint32_t id;
        const char *what = kv->key + strlen("tokenizer.ggml.");
        if (gguf_get_u32(f, kv->key, &id, &e)) {
            printf("  %-12s (not a token id: %s)\n", what, e.msg);
            continue;
        }
        printf("  %-24s %" PRIu32 " ", what, id);
        if (have_toks && id < toks.n)
            print_str(toks.strs[id].ptr, toks.strs[id].len, MAX_STR);
        else
            printf("(out of range: %" PRIu64 " tokens)", have_toks ? toks.n : 0);
        putchar('\n');
    }
    const char *flags[] = {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
                           "tokenizer.ggml.add_sep_token", "tokenizer.ggml.add_space_prefix"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        bool b;
        if (!gguf_find_kv(f, flags[i])) continue;
        printf("  %-24s %s\n", flags[i] + strlen("tokenizer.ggml."),
               gguf_get_bool(f, flags[i], &b, &e) ? "(not a bool)" : b ? "true" : "false");
    }
    if (!gguf_get_str(f, "tokenizer.chat_template", &s, &e)) {
        uint64_t nl = 0;
        while (nl < s.len && s.ptr[nl] != '\n') nl++;
        printf("  chat_template            %" PRIu64 " bytes; first line (%" PRIu64 " bytes): ", s.len, nl);
        print_str(s.ptr, nl < MAX_STR ? nl : MAX_STR, MAX_STR);
        printf("%s\n", nl > MAX_STR ? "..." : "");
    }
    /* the remaining tokenizer.* keys, summarized */
    for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        const char *k = kv->key;
        if (!starts_with(k, "tokenizer.") || strstr(k, "_token_id") || !strcmp(k, "tokenizer.ggml.model") ||
            !strcmp(k, "tokenizer.ggml.pre") || !strcmp(k, "tokenizer.chat_template"))
            continue;
        bool flag = false;
        for (size_t j = 0; j < sizeof flags / sizeof flags[0]; j++) flag |= !strcmp(k, flags[j]);
        if (!flag) print_kv(kv);
    }
    if (all_tokens && have_toks) {
        printf("\n  %8s  %-12s %s\n", "id", "type", "token");
        for (uint64_t i = 0; i < toks.n; i++) {
            int32_t t = 0;
            if (have_types) memcpy(&t, (const char *)types.data + 4 * i, 4);
            printf("  %8" PRIu64 "  %-12s ", i, have_types ? token_type_name(t) : "-");
            print_str(toks.strs[i].ptr, toks.strs[i].len, UINT64_MAX);
            putchar('\n');
        }
    }
}

static void shape_str(const gguf_tensor *t, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < t->n_dims && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? ", " : "", t->ne[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

static void print_tensors(const gguf_file *f) {
    uint64_t n = gguf_n_tensors(f);
    bool split = gguf_n_splits(f) > 1;
    printf("\ntensors (%" PRIu64 "; shape in ggml order, ne[0] first; offset from the data section%s):\n", n,
           split ? ", split:offset" : "");
    printf("  %-44s %-7s %-24s %14s %16s\n", "name", "type", "shape", "bytes", "offset");
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        const qtype_info *qi = qtype_get(t->type);
        char shape[96], off[40];
        shape_str(t, shape, sizeof shape);
        if (split)
            snprintf(off, sizeof off, "%u:%" PRIu64, t->split, t->offset);
        else
            snprintf(off, sizeof off, "%" PRIu64, t->offset);
        printf("  %-44s %-7s %-24s %14" PRIu64 " %16s\n", t->name, qi ? qi->name : "?", shape, t->nbytes, off);
    }
}

static void print_mix(const gguf_file *f) {
    uint64_t count[QT_COUNT] = {0}, bytes[QT_COUNT] = {0}, total_bytes = 0;
    int64_t params[QT_COUNT] = {0}, total_params = 0;
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (t->type >= QT_COUNT) continue;
        count[t->type]++;
        params[t->type] += t->n_elements;
        bytes[t->type] += t->nbytes;
        total_params += t->n_elements;
        total_bytes += t->nbytes;
    }
    printf("\nquantization mix:\n  %-7s %8s %16s %16s %7s %6s\n", "type", "tensors", "parameters", "bytes", "share",
           "bpw");
    for (int t = 0; t < QT_COUNT; t++) {
        if (!count[t]) continue;
        printf("  %-7s %8" PRIu64 " %16" PRId64 " %16" PRIu64 " %6.2f%% %6.3f\n", qtype_get((uint32_t)t)->name, count[t],
               params[t], bytes[t], total_bytes ? 100.0 * (double)bytes[t] / (double)total_bytes : 0.0,
               params[t] ? 8.0 * (double)bytes[t] / (double)params[t] : 0.0);
    }
    printf("  %-7s %8" PRIu64 " %16" PRId64 " %16" PRIu64 " %6.2f%% %6.3f  (%.3f B parameters, %.3f GB, %.3f bits "
           "per weight)\n",
           "total", gguf_n_tensors(f), total_params, total_bytes, 100.0,
           total_params ? 8.0 * (double)total_bytes / (double)total_params : 0.0, 1e-9 * (double)total_params,
           1e-9 * (double)total_bytes, total_params ? 8.0 * (double)total_bytes / (double)total_params : 0.0);
}

int cmd_gguf_dump(int argc, char **argv) {
    bool meta_only = false, all_tokens = false;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--meta-only")) {
            meta_only = true;
        } else if (!strcmp(argv[i], "--all-tokens")) {
            all_tokens = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "llm170 gguf-dump: unknown option '%s'\nusage: llm170 gguf-dump [--meta-only] "
                            "[--all-tokens] FILE\n", argv[i]);
            return 2;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "llm170 gguf-dump: one file expected, found a second: '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: llm170 gguf-dump [--meta-only] [--all-tokens] FILE\n");
        return 2;
    }
    gguf_file *f = NULL;
    err e = {0};
    if (gguf_open(&f, path, &e)) {
        fprintf(stderr, "llm170 gguf-dump: cannot read '%s' as GGUF: %s\n", path, e.msg);
        return 1;
    }
    char arch[64] = "";
    if (gguf_get_cstr(f, "general.architecture", arch, sizeof arch, &e)) arch[0] = 0;

    printf("file: %s\n", path);
    printf("  GGUF v%u, alignment %u, %.3f GB (%" PRIu64 " bytes) in %u file%s, %" PRIu64 " tensors, %" PRIu64
           " metadata keys, data section at byte %" PRIu64 "\n",
           gguf_version(f), gguf_alignment(f), 1e-9 * (double)gguf_file_size(f), gguf_file_size(f), gguf_n_splits(f),
           gguf_n_splits(f) > 1 ? "s" : "", gguf_n_tensors(f), gguf_n_kv(f), gguf_data_offset(f));

    char prefix[80];
    snprintf(prefix, sizeof prefix, "%s.", arch);
    printf("\narchitecture: %s\n", arch[0] ? arch : "(no general.architecture key)");
    for (uint64_t i = 0; arch[0] && i < gguf_n_kv(f); i++)
        if (starts_with(gguf_kv_at(f, i)->key, prefix)) print_kv_named(gguf_kv_at(f, i), prefix);
    printf("\ngeneral:\n");
    for (uint64_t i = 0; i < gguf_n_kv(f); i++)
        if (starts_with(gguf_kv_at(f, i)->key, "general.")) print_kv(gguf_kv_at(f, i));
    bool header = false;
    for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
        const char *k = gguf_kv_at(f, i)->key;
        if (starts_with(k, "general.") || starts_with(k, "tokenizer.") || (arch[0] && starts_with(k, prefix)))
            continue;
        if (!header) printf("\nother metadata:\n");
        header = true;
        print_kv(gguf_kv_at(f, i));
    }
    print_tokenizer(f, all_tokens);
    if (!meta_only) print_tensors(f);
    print_mix(f);
    gguf_close(f);
    return 0;
}
