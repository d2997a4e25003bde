/* test_tok_vocabs: our ids equal an outside reference's for every vocabulary fixture in
 * tests/tokenizer/fixtures/NAME.tokfix (made by scripts/gen_tokenizer_fixtures.py from llama.cpp's test
 * vocabularies, whose expected ids HF tokenizers produced, and from HF tokenizer.json files), and
 * decode(encode(text)) == text. On a mismatch it prints the vocabulary, the input and the first
 * differing position. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "tokenizer/tokenizer.h"

typedef struct fixture {
    char name[64], model[32], pre[64];
    uint32_t n_tokens;
    tok_spec spec;
    char **texts;
    uint32_t *lens;
    float *scores;
    int32_t *types;
    char **merges;
    uint32_t *merge_lens;
    uint32_t n_merges, cap_merges;
} fixture;

static int unhex(const char *h, char **out, uint32_t *len) {
    if (!strcmp(h, "-")) {
        *out = calloc(1, 1);
        *len = 0;
        return 0;
    }
    size_t n = strlen(h);
    if (n % 2) return -1;
    char *b = malloc(n / 2 + 1);
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(h + 2 * i, "%2x", &v) != 1) {
            free(b);
            return -1;
        }
        b[i] = (char)v;
    }
    b[n / 2] = 0;
    *out = b;
    *len = (uint32_t)(n / 2);
    return 0;
}

static void fixture_free(fixture *f) {
    for (uint32_t i = 0; i < f->n_tokens && f->texts; i++) free(f->texts[i]);
    for (uint32_t i = 0; i < f->n_merges; i++) free(f->merges[i]);
    free(f->texts);
    free(f->lens);
    free(f->scores);
    free(f->types);
    free(f->merges);
    free(f->merge_lens);
}

static int n_tests_total, n_match_total, n_roundtrip_total, n_gguf_total, n_stream_total;

static bool run_test(const tokenizer *t, const fixture *f, char *line) {
    char *save;
    int flags = atoi(strtok_r(line, " ", &save));
    char *in;
    uint32_t in_len;
    CHECK(unhex(strtok_r(NULL, " \n", &save), &in, &in_len) == 0);
    int32_t want[8192];
    size_t nw = 0;
    for (char *tok; (tok = strtok_r(NULL, " \n", &save)) && nw < 8192;) want[nw++] = atoi(tok);
    int32_t *ids;
    size_t n;
    err e = {0};
    unsigned fl = (flags & 1 ? TOK_ADD_SPECIAL : 0) | (flags & 2 ? TOK_PARSE_SPECIAL : 0);
    int rc = tok_encode(t, in, in_len, fl, &ids, &n, &e);
    CHECKF(rc == 0, "%s: encode: %s", f->name, e.msg);
    n_tests_total++;
    if (rc) {
        free(in);
        return false;
    }
    size_t first = 0;
    while (first < n && first < nw && ids[first] == want[first]) first++;
    bool same = n == nw && first == n;
    n_match_total += same;
    CHECKF(same, "%s: input '%.80s' (%u bytes, flags %d): %zu ids, reference %zu; first difference at %zu: "
           "ours %d, reference %d", f->name, in, in_len, flags, n, nw, first, first < n ? ids[first] : -1,
           first < nw ? want[first] : -1);
    /* round trip: exact for valid UTF-8 (every fixture input is), specials rendered as their text */
    if (!(flags & 1)) {
        char *text;
        size_t tl;
        rc = tok_decode(t, ids, n, true, &text, &tl, &e);
        CHECKF(rc == 0, "%s: decode: %s", f->name, e.msg);
        if (!rc) {
            bool ok = tl == in_len && !memcmp(text, in, tl);
            n_roundtrip_total += ok;
            CHECKF(ok, "%s: round trip of '%.60s' gave '%.60s'", f->name, in, text);
            /* streamed token by token: every chunk is whole UTF-8 characters, and together they are the text */
            tok_stream *st = tok_stream_new(t, true);
            char *acc = malloc(tl + 8);
            size_t an = 0;
            bool chunks_ok = st && acc;
            for (size_t i = 0; i < n && chunks_ok; i++) {
                const char *o;
                size_t on;
                chunks_ok = tok_stream_push(st, ids[i], &o, &on, &e) == 0 && an + on <= tl;
                for (size_t k = 0; k < on && chunks_ok;) {
                    int c = tok_utf8_check((const unsigned char *)o + k, on - k);
                    chunks_ok = c > 0;
                    k += c > 0 ? (size_t)c : 0;
                }
                if (chunks_ok) memcpy(acc + an, o, on), an += on;
            }
            const char *o;
            size_t on;
            if (chunks_ok) chunks_ok = tok_stream_flush(st, &o, &on) == 0 && on == 0;
            CHECKF(chunks_ok && an == tl && !memcmp(acc, text, tl), "%s: streaming '%.60s' differs from decode",
                   f->name, in);
            n_stream_total += chunks_ok && an == tl;
            free(acc);
            tok_stream_free(st);
            free(text);
        }
    }
    free(ids);
    free(in);
    return same;
}

static void run_fixture(const char *path) {
    FILE *fp = fopen(path, "rb");
    CHECKF(fp != NULL, "cannot open %s", path);
    if (!fp) return;
    fixture f;
    memset(&f, 0, sizeof f);
    f.spec = tok_spec_default();
    char *line = NULL;
    size_t cap = 0;
    tokenizer *t = NULL, *tg = NULL;
    int n_tests_here = 0, n_same_here = 0, n_gguf_here = 0, n_gguf_same = 0;
    while (getline(&line, &cap, fp) > 0) {
        char *sp = strchr(line, ' ');
        if (!sp) continue;
        *sp = 0;
        char *rest = sp + 1;
        rest[strcspn(rest, "\n")] = 0;
        if (!strcmp(line, "name")) snprintf(f.name, sizeof f.name, "%s", rest);
        else if (!strcmp(line, "model")) snprintf(f.model, sizeof f.model, "%s", rest);
        else if (!strcmp(line, "pre")) snprintf(f.pre, sizeof f.pre, "%s", strcmp(rest, "-") ? rest : "");
        else if (!strcmp(line, "n_tokens")) {
            f.n_tokens = (uint32_t)strtoul(rest, NULL, 10);
            f.texts = calloc(f.n_tokens, sizeof *f.texts);
            f.lens = calloc(f.n_tokens, sizeof *f.lens);
            f.scores = calloc(f.n_tokens, sizeof *f.scores);
            f.types = malloc(f.n_tokens * sizeof *f.types);
            for (uint32_t i = 0; i < f.n_tokens; i++) f.types[i] = TOK_TYPE_UNUSED;
        } else if (!strcmp(line, "ids")) {
            sscanf(rest, "%d %d %d %d %d", &f.spec.bos, &f.spec.eos, &f.spec.unk, &f.spec.eot, &f.spec.pad);
        } else if (!strcmp(line, "flags")) {
            sscanf(rest, "%d %d %d", &f.spec.add_bos, &f.spec.add_eos, &f.spec.add_space_prefix);
        } else if (!strcmp(line, "token")) {
            uint32_t id;
            int ty;
            float sc;
            char hex[2 * TOK_MAX_TOKEN_BYTES + 2];
            if (sscanf(rest, "%u %d %f %8193s", &id, &ty, &sc, hex) == 4 && id < f.n_tokens) {
                unhex(hex, &f.texts[id], &f.lens[id]);
                f.types[id] = ty, f.scores[id] = sc;
            }
        } else if (!strcmp(line, "merge")) {
            char *l, *r, *s2;
            uint32_t ln, rn;
            char *a = strtok_r(rest, " ", &s2), *b = strtok_r(NULL, " ", &s2);
            if (!a || !b || unhex(a, &l, &ln) || unhex(b, &r, &rn)) continue;
            if (f.n_merges == f.cap_merges) {
                f.cap_merges = f.cap_merges ? 2 * f.cap_merges : 1024;
                f.merges = realloc(f.merges, f.cap_merges * sizeof *f.merges);
                f.merge_lens = realloc(f.merge_lens, f.cap_merges * sizeof *f.merge_lens);
            }
            char *m = malloc(ln + rn + 2);
            memcpy(m, l, ln);
            m[ln] = ' ';
            memcpy(m + ln + 1, r, rn);
            f.merges[f.n_merges] = m;
            f.merge_lens[f.n_merges++] = ln + rn + 1;
            free(l);
            free(r);
        } else if (!strcmp(line, "test")) {
            if (!t) {
                for (uint32_t i = 0; i < f.n_tokens; i++)
                    if (!f.texts[i]) f.texts[i] = calloc(1, 1);
                f.spec.model = f.model;
                f.spec.pre = f.pre;
                f.spec.n_tokens = f.n_tokens;
                f.spec.texts = (const char *const *)f.texts;
                f.spec.text_lens = f.lens;
                f.spec.scores = f.scores;
                f.spec.types = f.types;
                f.spec.n_merges = f.n_merges;
                f.spec.merges = (const char *const *)f.merges;
                f.spec.merge_lens = f.merge_lens;
                err e = {0};
                int rc = tok_create(&t, &f.spec, &e);
                CHECKF(rc == 0, "%s: tok_create: %s", f.name, e.msg);
                if (rc) break;
                /* where the real GGUF is committed too, the same tests run through tok_load_gguf */
                char gp[600];
                snprintf(gp, sizeof gp, "%.*s.gguf", (int)(strlen(path) - 7), path);
                gguf_file *g = NULL;
                if (!access(gp, R_OK)) {
                    CHECKF(gguf_open(&g, gp, &e) == 0, "%s: %s", gp, e.msg);
                    if (g) CHECKF(tok_load_gguf(&tg, g, &e) == 0, "%s: %s", gp, e.msg);
                    gguf_close(g);
                }
            }
            if (tg) {
                char *copy = strdup(rest);
                n_gguf_same += run_test(tg, &f, copy);
                free(copy);
                n_gguf_total++;
                n_gguf_here++;
            }
            n_same_here += run_test(t, &f, rest);
            n_tests_here++;
        }
    }
    printf("  %-16s %-6s %-16s %d/%d tests identical", f.name, f.model, f.pre[0] ? f.pre : "-", n_same_here,
           n_tests_here);
    if (n_gguf_here) printf(" (and %d/%d through the full GGUF)", n_gguf_same, n_gguf_here);
    putchar('\n');
    tok_free(t);
    tok_free(tg);
    free(line);
    fclose(fp);
    fixture_free(&f);
}

/* Random byte strings (ASCII, multi-byte characters, stray and truncated sequences) through the two
 * committed real vocabularies: decode(encode(x)) is x with invalid UTF-8 replaced, the stream agrees. */
static void fuzz_roundtrip(const char *gguf_path) {
    err e = {0};
    gguf_file *g = NULL;
    tokenizer *t = NULL;
    if (gguf_open(&g, gguf_path, &e) || tok_load_gguf(&t, g, &e)) {
        CHECKF(0, "%s: %s", gguf_path, e.msg);
        gguf_close(g);
        return;
    }
    gguf_close(g);
    static const char *atoms[] = {"a", " ", "  ", "\n", "\t", "Z", "7", "\xC3\xA9", "\xE4\xBD\xA0", "\xF0\x9F\xA6\x99",
                                  "\xFF", "\x80", "\xE2\x82", "\xF0\x9F", "\xC0\xAF", "\xED\xA0\x80", "'s", "..."};
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    int ok = 0, runs = 300;
    for (int r = 0; r < runs; r++) {
        char in[512];
        size_t n = 0;
        int atoms_n = (int)(rng % 40) + 1;
        for (int k = 0; k < atoms_n; k++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            const char *a = atoms[(rng >> 33) % (sizeof atoms / sizeof atoms[0])];
            size_t al = strlen(a);
            memcpy(in + n, a, al);
            n += al;
        }
        char *want, *got;
        size_t wn, gn, bad;
        int32_t *ids;
        size_t ni;
        tok_utf8_sanitize(in, n, &want, &wn, &bad, &e);
        if (tok_encode(t, in, n, 0, &ids, &ni, &e) || tok_decode(t, ids, ni, true, &got, &gn, &e)) {
            CHECKF(0, "%s: %s", gguf_path, e.msg);
            free(want);
            continue;
        }
        bool same = gn == wn && !memcmp(got, want, gn);
        tok_stream *st = tok_stream_new(t, true);
        char *acc = malloc(gn + 16);
        size_t an = 0;
        for (size_t i = 0; i < ni; i++) {
            const char *o;
            size_t on;
            tok_stream_push(st, ids[i], &o, &on, &e);
            if (an + on <= gn + 16) memcpy(acc + an, o, on);
            an += on;
        }
        const char *o;
        size_t on;
        tok_stream_flush(st, &o, &on);
        same = same && on == 0 && an == gn && !memcmp(acc, got, gn);
        ok += same;
        if (!same) {
            char hex[1100];
            size_t hk = 0;
            for (size_t i = 0; i < n && hk + 3 < sizeof hex; i++) hk += (size_t)snprintf(hex + hk, 4, "%02x", (unsigned char)in[i]);
            CHECKF(same, "%s: random text %d (hex %s) does not round-trip (%zu bytes in, %zu out)", gguf_path, r, hex,
                   wn, gn);
        }
        free(acc);
        tok_stream_free(st);
        free(ids);
        free(got);
        free(want);
    }
    printf("  %s: %d/%d random byte strings round-trip (invalid UTF-8 -> U+FFFD), streamed identically\n",
           gguf_path, ok, runs);
    tok_free(t);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(void) {
    const char *dir = "tests/tokenizer/fixtures";
    DIR *d = opendir(dir);
    CHECKF(d != NULL, "cannot open %s (run from the repo root)", dir);
    char *names[256];
    int nn = 0;
    for (struct dirent *de; d && (de = readdir(d)) && nn < 256;) {
        size_t l = strlen(de->d_name);
        if (l > 7 && !strcmp(de->d_name + l - 7, ".tokfix")) names[nn++] = strdup(de->d_name);
    }
    if (d) closedir(d);
    qsort(names, (size_t)nn, sizeof *names, cmp_str);
    CHECKF(nn >= 10, "expected the committed fixtures, found %d", nn);
    for (int i = 0; i < nn; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        run_fixture(path);
        free(names[i]);
    }
    fuzz_roundtrip("tests/tokenizer/fixtures/gpt-2.gguf");
    fuzz_roundtrip("tests/tokenizer/fixtures/llama-spm.gguf");
    printf("%d vocabularies, %d tests (%d of them through a full GGUF vocabulary): %d ids identical to the "
           "reference, %d round trips exact, %d streamed decodes whole-character and equal\n", nn, n_tests_total,
           n_gguf_total, n_match_total, n_roundtrip_total, n_stream_total);
    return check_report("test_tok_vocabs");
}
