/* test_tok_pretok: every regex pre-tokenizer splits text exactly as HF tokenizers does. The fixture
 * (tests/tokenizer/fixtures/pretok.fix, made by scripts/gen_tokenizer_fixtures.py) holds, per
 * pre-tokenizer name and text, the pieces HF's Sequence of Split(Regex, isolated) gives with the regexes
 * of the models' tokenizer.json (Oniguruma engine); we split the same texts with our table and PCRE2.
 * This covers the pre-tokenizers that have no test vocabulary (deepseek-v3, gpt-4o, tekken, ...). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tokenizer/tok_impl.h"

typedef struct pieces {
    char *buf;
    size_t n, cap;
    size_t count;
} pieces;

static int collect(void *ctx, const char *w, size_t n, err *e) {
    (void)e;
    pieces *p = ctx;
    if (p->n + 2 * n + 2 > p->cap) {
        p->cap = (p->n + 2 * n + 2) * 2;
        p->buf = realloc(p->buf, p->cap);
    }
    for (size_t i = 0; i < n; i++) p->n += (size_t)sprintf(p->buf + p->n, "%02x", (unsigned char)w[i]);
    p->buf[p->n++] = ' ';
    p->buf[p->n] = 0;
    p->count++;
    return 0;
}

int main(void) {
    FILE *fp = fopen("tests/tokenizer/fixtures/pretok.fix", "rb");
    CHECKF(fp != NULL, "cannot open tests/tokenizer/fixtures/pretok.fix (run from the repo root)");
    if (!fp) return check_report("test_tok_pretok");
    char *line = NULL, name[64] = "";
    size_t cap = 0;
    tok_pretok *pt = NULL;
    int n_lines = 0, n_same = 0, n_names = 0, n_fail_here = 0;
    while (getline(&line, &cap, fp) > 0) {
        if (strncmp(line, "pretok ", 7)) continue;
        char *save, *nm = strtok_r(line + 7, " ", &save), *hex = strtok_r(NULL, " \n", &save);
        char *want = save ? save : (char *)"";
        want[strcspn(want, "\n")] = 0;
        if (strcmp(nm, name)) {
            if (name[0]) printf("  %-16s %s\n", name, n_fail_here ? "DIFFERS" : "identical");
            snprintf(name, sizeof name, "%s", nm);
            tok_pretok_free(pt);
            pt = NULL;
            err e = {0};
            CHECKF(tok_pretok_new(&pt, nm, NULL, &e) == 0, "pre-tokenizer %s: %s", nm, e.msg);
            n_names++;
            n_fail_here = 0;
        }
        if (!pt) continue;
        size_t hl = strlen(hex);
        char *text = malloc(hl / 2 + 1);
        size_t tl = 0;
        if (strcmp(hex, "-"))
            for (size_t i = 0; i + 1 < hl; i += 2) {
                unsigned v;
                sscanf(hex + i, "%2x", &v);
                text[tl++] = (char)v;
            }
        pieces p = {0};
        collect(&p, "", 0, NULL); /* allocates; then reset */
        p.n = 0, p.count = 0, p.buf[0] = 0;
        err e = {0};
        int rc = tok_pretok_split(pt, text, tl, collect, &p, &e);
        CHECKF(rc == 0, "%s: split failed: %s", nm, e.msg);
        if (p.n) p.buf[--p.n] = 0; /* trailing space */
        bool same = !strcmp(p.buf, want);
        n_same += same;
        n_fail_here += !same;
        n_lines++;
        CHECKF(same, "%s: text %.*s\n  ours: %.200s\n  HF:   %.200s", nm, (int)(tl > 60 ? 60 : tl), text, p.buf, want);
        free(p.buf);
        free(text);
    }
    if (name[0]) printf("  %-16s %s\n", name, n_fail_here ? "DIFFERS" : "identical");
    tok_pretok_free(pt);
    free(line);
    fclose(fp);
    printf("%d pre-tokenizers, %d texts: %d splits identical to HF tokenizers\n", n_names, n_lines, n_same);
    CHECKF(n_names >= 20 && n_lines > 1000, "fixture too small: %d names, %d lines", n_names, n_lines);
    return check_report("test_tok_pretok");
}
