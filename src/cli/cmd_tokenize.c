/* llm170 tokenize / detokenize: text <-> token ids with a model file's own vocabulary.
 *
 * tokenize prints ids as llama.cpp's `llama-tokenize --ids` does ("[1, 2, 3]"); --show prints one
 * "id -> 'piece'" line per token instead. BOS/EOS are added as the vocabulary says unless --no-bos;
 * control tokens written in the text (e.g. "<|im_start|>") are parsed unless --no-parse-special.
 * Invalid UTF-8 in the input is replaced by U+FFFD (a note on stderr says how many times).
 * detokenize takes ids as "1,2,3" (also "[1, 2, 3]" or separate arguments) and prints the text followed
 * by a newline; an id outside the vocabulary is an error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

#define MAX_INPUT (1ull << 30) /* bytes of text read from a file or stdin */

static int read_stream(FILE *fp, const char *what, char **out, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) return fprintf(stderr, "tokenize: out of memory\n"), 1;
    for (;;) {
        if (n == cap) {
            if (cap >= MAX_INPUT) {
                free(buf);
                return fprintf(stderr, "tokenize: %s is larger than %llu bytes\n", what, MAX_INPUT), 1;
            }
            char *b = realloc(buf, cap *= 2);
            if (!b) return free(buf), fprintf(stderr, "tokenize: out of memory\n"), 1;
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (got == 0) break;
    }
    if (ferror(fp)) {
        free(buf);
        return fprintf(stderr, "tokenize: reading %s failed: %s\n", what, strerror(errno)), 1;
    }
    *out = buf;
    *len = n;
    return 0;
}

static int load(const char *path, tokenizer **t) {
    err e = {0};
    gguf_file *f = NULL;
    if (gguf_open(&f, path, &e)) return fprintf(stderr, "error: %s\n", e.msg), 1;
    int rc = tok_load_gguf(t, f, &e);
    gguf_close(f);
    if (rc) return fprintf(stderr, "error: %s: %s\n", path, e.msg), 1;
    return 0;
}

/* A piece printed for --show: bytes as they are, with control characters escaped. */
static void print_piece(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
        else putchar(c);
    }
}

static int usage_tokenize(void) {
    fprintf(stderr, "usage: llm170 tokenize --model M [--no-bos] [--no-parse-special] (--text S | --file F | --stdin) "
                    "[--show]\n");
    return 2;
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL;
    bool use_stdin = false, show = false, bos = true, parse_special = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(a, "--text") && i + 1 < argc) text = argv[++i];
        else if (!strcmp(a, "--file") && i + 1 < argc) file = argv[++i];
        else if (!strcmp(a, "--stdin")) use_stdin = true;
        else if (!strcmp(a, "--show")) show = true;
        else if (!strcmp(a, "--no-bos")) bos = false;
        else if (!strcmp(a, "--no-parse-special")) parse_special = false;
        else if (!strcmp(a, "--ids")) continue; /* llama-tokenize's flag: ids are our default output */
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: llm170 tokenize --model M [--no-bos] [--no-parse-special] (--text S | --file F | --stdin) "
                   "[--show]\n\ntokenizer models: %s\npre-tokenizers (tokenizer.ggml.pre): %s\n",
                   tok_model_names(), tok_pre_names());
            return 0;
        }
        else return fprintf(stderr, "tokenize: unknown or incomplete argument '%s'\n", a), usage_tokenize();
    }
    if (!model || (!!text + !!file + use_stdin) != 1) return usage_tokenize();
    char *buf = NULL;
    size_t len = 0;
    if (file) {
        FILE *fp = fopen(file, "rb");
        if (!fp) return fprintf(stderr, "tokenize: cannot open %s: %s\n", file, strerror(errno)), 1;
        int rc = read_stream(fp, file, &buf, &len);
        fclose(fp);
        if (rc) return rc;
    } else if (use_stdin) {
        if (read_stream(stdin, "stdin", &buf, &len)) return 1;
    }
    const char *src = text ? text : buf;
    if (text) len = strlen(text);
    tokenizer *t = NULL;
    if (load(model, &t)) return free(buf), 1;
    size_t bad = 0;
    char *clean;
    size_t clean_len;
    err e = {0};
    if (!tok_utf8_sanitize(src, len, &clean, &clean_len, &bad, &e)) {
        if (bad) fprintf(stderr, "tokenize: note: %zu invalid UTF-8 sequences replaced by U+FFFD\n", bad);
        free(clean);
    }
    int32_t *ids;
    size_t n;
    unsigned flags = (bos ? TOK_ADD_SPECIAL : 0) | (parse_special ? TOK_PARSE_SPECIAL : 0);
    int rc = tok_encode(t, src, len, flags, &ids, &n, &e);
    free(buf);
    if (rc) {
        tok_free(t);
        return fprintf(stderr, "tokenize: %s\n", e.msg), 1;
    }
    if (show) {
        for (size_t i = 0; i < n; i++) {
            const char *p;
            size_t pn;
            tok_piece(t, ids[i], true, &p, &pn, NULL);
            printf("%6d -> '", ids[i]);
            print_piece(p, pn);
            fputs("'\n", stdout);
        }
    } else {
        putchar('[');
        for (size_t i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
        fputs("]\n", stdout);
    }
    free(ids);
    tok_free(t);
    return 0;
}

static int usage_detokenize(void) {
    fprintf(stderr, "usage: llm170 detokenize --model M [--no-special] IDS   (IDS: 1,2,3 or \"[1, 2, 3]\")\n");
    return 2;
}

int cmd_detokenize(int argc, char **argv) {
    const char *model = NULL;
    bool special = true;
    size_t n = 0, cap = 256;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return fprintf(stderr, "detokenize: out of memory\n"), 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--model") && i + 1 < argc) {
            model = argv[++i];
            continue;
        }
        if (!strcmp(a, "--no-special")) {
            special = false;
            continue;
        }
        /* a list of integers separated by commas, spaces or brackets */
        for (const char *p = a; *p;) {
            if (strchr("[], \t\n", *p)) {
                p++;
                continue;
            }
            char *end;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (end == p || errno || v < INT32_MIN || v > INT32_MAX) {
                free(ids);
                fprintf(stderr, "detokenize: expected a token id, found '%s'\n", p);
                return usage_detokenize();
            }
            if (n == cap) {
                int32_t *b = realloc(ids, (cap *= 2) * sizeof *ids);
                if (!b) return free(ids), fprintf(stderr, "detokenize: out of memory\n"), 1;
                ids = b;
            }
            ids[n++] = (int32_t)v;
            p = end;
        }
    }
    if (!model) return free(ids), usage_detokenize();
    tokenizer *t = NULL;
    if (load(model, &t)) return free(ids), 1;
    char *text;
    size_t len;
    err e = {0};
    int rc = tok_decode(t, ids, n, special, &text, &len, &e);
    free(ids);
    if (rc) {
        tok_free(t);
        return fprintf(stderr, "detokenize: %s\n", e.msg), 1;
    }
    fwrite(text, 1, len, stdout);
    putchar('\n');
    free(text);
    tok_free(t);
    return 0;
}
