/* test_tokenizer: behaviour on small in-memory vocabularies, with hand-derived expected ids:
 * byte-level BPE merge order, SentencePiece score order and byte fallback, special tokens with parsing
 * on and off, add-BOS/EOS, the invalid-UTF-8 policy (U+FFFD per maximal subpart), the streaming
 * detokenizer on characters split across tokens, errors for unknown model / pre-tokenizer / ids, and a
 * vocabulary written to a GGUF file and read back with tok_load_gguf. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "tokenizer/tok_impl.h" /* tok_byte_to_utf8, for test_long_specials */

static bool ids_eq(const int32_t *a, size_t n, const int32_t *b, size_t m) {
    return n == m && (n == 0 || !memcmp(a, b, n * sizeof *a));
}

static void print_ids(const char *what, const int32_t *a, size_t n) {
    fprintf(stderr, "  %s:", what);
    for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", a[i]);
    fputc('\n', stderr);
}

#define EXPECT_IDS(t, text, flags, ...)                                                       \
    do {                                                                                      \
        const int32_t want_[] = {__VA_ARGS__};                                                \
        int32_t *got_;                                                                        \
        size_t n_;                                                                            \
        err e_ = {0};                                                                         \
        int rc_ = tok_encode(t, text, strlen(text), flags, &got_, &n_, &e_);                  \
        CHECKF(rc_ == 0, "encode '%s': %s", text, e_.msg);                                    \
        if (!rc_) {                                                                           \
            bool ok_ = ids_eq(got_, n_, want_, sizeof want_ / sizeof want_[0]);               \
            CHECKF(ok_, "encode '%s' (flags %d)", text, flags);                               \
            if (!ok_) print_ids("got", got_, n_), print_ids("want", want_, sizeof want_ / 4); \
            free(got_);                                                                       \
        }                                                                                     \
    } while (0)

/* A byte-level BPE vocabulary: the 256 byte tokens (ids 0..255 in byte order), then merges. "Ġ" is the
 * byte alphabet's space. */
static tokenizer *make_bpe(const char *pre, int add_bos) {
    static char bytes[256][3];
    const char *texts[256 + 8];
    int32_t types[256 + 8];
    uint32_t n = 0;
    for (int b = 0; b < 256; b++) {
        /* the GPT-2 alphabet written out independently of the module: printable bytes are
         * themselves, the rest are U+0100 + k in order */
        int cp = b, k = 0;
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        if (!printable) {
            for (int c = 0; c < b; c++)
                if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE)) k++;
            cp = 0x100 + k;
        }
        if (cp < 0x80) bytes[b][0] = (char)cp, bytes[b][1] = 0;
        else bytes[b][0] = (char)(0xC0 | (cp >> 6)), bytes[b][1] = (char)(0x80 | (cp & 0x3F)), bytes[b][2] = 0;
        texts[n] = bytes[b];
        types[n++] = TOK_TYPE_NORMAL;
    }
    const char *extra[] = {"he", "ll", "hell", "hello", "\xC4\xA0w", "<|end|>", "<tool>", "lo"};
    int32_t extra_types[] = {1, 1, 1, 1, 1, TOK_TYPE_CONTROL, TOK_TYPE_USER_DEFINED, 1};
    for (int i = 0; i < 8; i++) texts[n] = extra[i], types[n++] = extra_types[i];
    /* ranks: "l l" (0) before "h e" (1): in "hello" ll merges first, then he, then "he ll", then "hell o" */
    const char *merges[] = {"l l", "h e", "he ll", "hell o", "\xC4\xA0 w", "l o"};
    tok_spec s = tok_spec_default();
    s.model = "gpt2";
    s.pre = pre;
    s.n_tokens = n;
    s.texts = texts;
    s.types = types;
    s.n_merges = 6;
    s.merges = merges;
    s.bos = 261; /* <|end|> doubles as BOS/EOS, as in GPT-2 */
    s.eos = 261;
    s.add_bos = add_bos;
    tokenizer *t = NULL;
    err e = {0};
    int rc = tok_create(&t, &s, &e);
    CHECKF(rc == 0, "tok_create(bpe): %s", e.msg);
    return t;
}

static void test_bpe(void) {
    tokenizer *t = make_bpe("gpt-2", 0);
    if (!t) return;
    /* "hello" -> ll, he, hell, hello (rank order, not left-to-right) */
    EXPECT_IDS(t, "hello", 0, 259);
    /* "lol": "l o" (rank 5) makes "lo", then nothing: lo + l */
    EXPECT_IDS(t, "lol", 0, 263, 'l');
    /* " w" is one pre-token (" ?\p{L}+") whose Ġ w merge applies */
    EXPECT_IDS(t, "hello w", 0, 259, 260);
    /* special tokens: control only with parsing on, user-defined always */
    EXPECT_IDS(t, "a<|end|>b", TOK_PARSE_SPECIAL, 'a', 261, 'b');
    EXPECT_IDS(t, "a<|end|>b", 0, 'a', '<', '|', 'e', 'n', 'd', '|', '>', 'b');
    EXPECT_IDS(t, "<tool>x", 0, 262, 'x');
    /* add_special: BOS only if the vocabulary asks for it */
    EXPECT_IDS(t, "he", TOK_ADD_SPECIAL, 256);
    tok_free(t);
    t = make_bpe("gpt-2", 1);
    if (!t) return;
    EXPECT_IDS(t, "he", TOK_ADD_SPECIAL, 261, 256);
    EXPECT_IDS(t, "", TOK_ADD_SPECIAL, 261);
    EXPECT_IDS(t, "", 0);
    /* invalid UTF-8: "\xC3(" is a truncated 2-byte sequence: one U+FFFD (EF BF BD as byte tokens) then '(' */
    EXPECT_IDS(t, "\xC3(", 0, 0xEF, 0xBF, 0xBD, '(');
    /* E2 82 without its last byte, then 'x': the maximal subpart E2 82 is one U+FFFD */
    EXPECT_IDS(t, "\xE2\x82x", 0, 0xEF, 0xBF, 0xBD, 'x');
    /* a lone continuation byte and an overlong C0 80: each byte is its own maximal subpart */
    EXPECT_IDS(t, "\x80\xC0\x80", 0, 0xEF, 0xBF, 0xBD, 0xEF, 0xBF, 0xBD, 0xEF, 0xBF, 0xBD);

    /* pieces and decode */
    const char *p;
    size_t n;
    err e = {0};
    CHECK(tok_piece(t, 260, true, &p, &n, &e) == 0 && n == 2 && !memcmp(p, " w", 2));
    CHECK(tok_piece(t, 261, false, &p, &n, &e) == 0 && n == 0);
    CHECK(tok_piece(t, 261, true, &p, &n, &e) == 0 && n == 7);
    CHECK(tok_piece(t, 264, true, &p, &n, &e) == ERR_RANGE);
    CHECK(tok_piece(t, -1, true, &p, &n, &e) == ERR_RANGE);
    int32_t bad[] = {259, 99999};
    char *text;
    CHECK(tok_decode(t, bad, 2, true, &text, &n, &e) == ERR_RANGE && strstr(e.msg, "99999"));

    /* streaming: "é" (C3 A9) and "😀" (F0 9F 98 80) arrive one byte token at a time */
    tok_stream *s = tok_stream_new(t, true);
    const int32_t seq[] = {'a', 0xC3, 0xA9, 0xF0, 0x9F, 0x98, 0x80, 'b'};
    const char *want[] = {"a", "", "\xC3\xA9", "", "", "", "\xF0\x9F\x98\x80", "b"};
    for (int i = 0; i < 8; i++) {
        const char *o;
        size_t on;
        CHECK(tok_stream_push(s, seq[i], &o, &on, &e) == 0);
        CHECKF(on == strlen(want[i]) && !memcmp(o, want[i], on), "stream step %d emitted %zu bytes", i, on);
    }
    /* a character cut short, then a new one: the stump becomes U+FFFD at once */
    const char *o;
    size_t on;
    CHECK(tok_stream_push(s, 0xE2, &o, &on, &e) == 0 && on == 0);
    CHECK(tok_stream_push(s, 'z', &o, &on, &e) == 0 && on == 4 && !memcmp(o, "\xEF\xBF\xBDz", 4));
    /* held bytes at the end: flush emits U+FFFD */
    CHECK(tok_stream_push(s, 0xF0, &o, &on, &e) == 0 && on == 0);
    CHECK(tok_stream_flush(s, &o, &on) == 0 && on == 3 && !memcmp(o, "\xEF\xBF\xBD", 3));
    CHECK(tok_stream_push(s, 12345, &o, &on, &e) == ERR_RANGE);
    tok_stream_free(s);
    tok_free(t);
}

/* SentencePiece: scores decide; characters not in the vocabulary fall back to <0xNN>. */
static void test_spm(void) {
    const char *texts[] = {"<unk>", "<s>", "</s>", "<0xE4>", "<0xBD>", "<0xA0>", "\xE2\x96\x81", "a", "b", "c",
                           "ab", "bc", "\xE2\x96\x81" "a", "\xE2\x96\x81" "ab", "<ctl>"};
    const float scores[] = {0, 0, 0, 0, 0, 0, -1, -2, -2, -2, -5, -1, -3, -4, 0};
    const int32_t types[] = {2, 3, 3, 6, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 3};
    tok_spec s = tok_spec_default();
    s.model = "llama";
    s.n_tokens = 15;
    s.texts = texts;
    s.scores = scores;
    s.types = types;
    s.bos = 1, s.eos = 2, s.unk = 0;
    tokenizer *t = NULL;
    err e = {0};
    CHECKF(tok_create(&t, &s, &e) == 0, "tok_create(spm): %s", e.msg);
    if (!t) return;
    /* "▁abc": bc (-1) beats ▁a (-3) and ab (-5): ▁a, bc; then "▁a"+"bc" is not a token */
    EXPECT_IDS(t, "abc", 0, 12, 11);
    /* "▁ab": ▁a (-3) beats ab (-5), then ▁a+b = ▁ab (-4) */
    EXPECT_IDS(t, "ab", 0, 13);
    /* BOS added by default for llama; 你 (E4 BD A0) is not a token: byte fallback */
    EXPECT_IDS(t, "\xE4\xBD\xA0", TOK_ADD_SPECIAL, 1, 6, 3, 4, 5);
    /* a control token in the text, then the leading space again after it (SentencePiece convention) */
    EXPECT_IDS(t, "a<ctl>a", TOK_PARSE_SPECIAL, 12, 14, 12);
    /* decode strips the space the encoder added, keeps the rest */
    int32_t ids[] = {1, 13, 6, 7};
    char *text;
    size_t n;
    CHECK(tok_decode(t, ids, 4, false, &text, &n, &e) == 0 && !strcmp(text, "ab a"));
    free(text);
    CHECK(tok_decode(t, ids, 4, true, &text, &n, &e) == 0 && !strcmp(text, "<s>ab a"));
    free(text);
    /* the stream strips the same space */
    tok_stream *st = tok_stream_new(t, false);
    const char *o;
    size_t on;
    CHECK(tok_stream_push(st, 1, &o, &on, &e) == 0 && on == 0);
    CHECK(tok_stream_push(st, 13, &o, &on, &e) == 0 && on == 2 && !memcmp(o, "ab", 2));
    CHECK(tok_stream_push(st, 6, &o, &on, &e) == 0 && on == 1 && o[0] == ' ');
    /* a byte-fallback character split over three tokens */
    CHECK(tok_stream_push(st, 3, &o, &on, &e) == 0 && on == 0);
    CHECK(tok_stream_push(st, 4, &o, &on, &e) == 0 && on == 0);
    CHECK(tok_stream_push(st, 5, &o, &on, &e) == 0 && on == 3 && !memcmp(o, "\xE4\xBD\xA0", 3));
    tok_stream_free(st);
    tok_free(t);
}

static void test_errors(void) {
    const char *texts[] = {"a"};
    tok_spec s = tok_spec_default();
    s.n_tokens = 1;
    s.texts = texts;
    tokenizer *t = NULL;
    err e = {0};
    s.model = "wordpiece-x";
    CHECK(tok_create(&t, &s, &e) == ERR_UNSUPPORTED && strstr(e.msg, "wordpiece-x") && strstr(e.msg, "gpt2"));
    s.model = "gpt2";
    s.pre = "no-such-pre";
    CHECK(tok_create(&t, &s, &e) == ERR_UNSUPPORTED && strstr(e.msg, "no-such-pre") && strstr(e.msg, "qwen35") &&
          strstr(e.msg, "llama-bpe"));
    s.pre = "qwen2";
    s.bos = 5;
    CHECK(tok_create(&t, &s, &e) == ERR_FORMAT && strstr(e.msg, "bos"));
    /* every listed pre-tokenizer compiles */
    char names[2048];
    snprintf(names, sizeof names, "%s", tok_pre_names());
    int n_ok = 0, n_all = 0;
    s.bos = -1;
    for (char *sv, *nm = strtok_r(names, ", ", &sv); nm; nm = strtok_r(NULL, ", ", &sv)) {
        s.pre = nm;
        n_all++;
        if (tok_create(&t, &s, &e) == 0) n_ok++, tok_free(t);
        else fprintf(stderr, "  pre %s: %s\n", nm, e.msg);
    }
    CHECKF(n_ok == n_all && n_all > 50, "%d of %d pre-tokenizers compile", n_ok, n_all);
}

/* A vocabulary through a GGUF file: the loader reads every tokenizer.ggml key we use. */
static void test_gguf(void) {
    const char *texts[] = {"<|endoftext|>", "a", "b", "ab", "\xC4\xA0", ("\xC4\xA0" "ab"), "<|im_start|>"};
    const int32_t types[] = {3, 1, 1, 1, 1, 1, 3};
    const char *merges[] = {"a b", "\xC4\xA0 ab"};
    gguf_writer *w = gguf_writer_new();
    CHECK(w != NULL);
    if (!w) return;
    gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    gguf_writer_set_str(w, "tokenizer.ggml.pre", "qwen2");
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", texts, 7);
    gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_INT32, types, 7);
    gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges, 2);
    gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 0);
    gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 0);
    gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false);
    gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", true);
    err e = {0};
    char path[] = "/tmp/llm170_test_tok_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    CHECKF(gguf_writer_write(w, path, &e) == 0, "write: %s", e.msg);
    gguf_writer_free(w);
    gguf_file *f = NULL;
    tokenizer *t = NULL;
    CHECKF(gguf_open(&f, path, &e) == 0, "open: %s", e.msg);
    if (f) {
        CHECKF(tok_load_gguf(&t, f, &e) == 0, "load: %s", e.msg);
        gguf_close(f);
    }
    remove(path);
    if (!t) return;
    CHECK(tok_n_tokens(t) == 7 && !strcmp(tok_pre_name(t), "qwen2") && !tok_add_bos(t) && tok_add_eos(t));
    /* end of generation: the eos id (0, "<|endoftext|>"); "<|im_start|>" is not one */
    CHECK(tok_is_eog(t, 0) && !tok_is_eog(t, 6) && !tok_is_eog(t, 1));
    /* " ab" is one qwen2 pre-token: Ġ a b -> Ġ ab -> Ġab; EOS appended */
    EXPECT_IDS(t, "<|im_start|> ab", TOK_ADD_SPECIAL | TOK_PARSE_SPECIAL, 6, 5, 0);
    tok_free(t);
}

/* Hostile metadata: each broken vocabulary is refused with a message naming what is wrong. */
static void test_gguf_bad(void) {
    const char *texts[] = {"a", "b"};
    const int32_t types3[] = {1, 1, 1};
    const float scores[] = {0, 0};
    struct {
        const char *what, *model, *pre, *expect;
        int n_types;
        bool has_tokens;
    } cases[] = {
        {"no model key", NULL, NULL, "tokenizer.ggml.model", 2, true},
        {"unknown model", "bert", NULL, "bert", 2, true},
        {"gpt2 without pre", "gpt2", NULL, "tokenizer.ggml.pre", 2, true},
        {"unknown pre", "gpt2", "qwen9", "qwen9", 2, true},
        {"types count differs", "llama", NULL, "disagree", 3, true},
        {"no tokens", "llama", NULL, "tokenizer.ggml.tokens", 2, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gguf_writer *w = gguf_writer_new();
        if (cases[i].model) gguf_writer_set_str(w, "tokenizer.ggml.model", cases[i].model);
        if (cases[i].pre) gguf_writer_set_str(w, "tokenizer.ggml.pre", cases[i].pre);
        if (cases[i].has_tokens) gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", texts, 2);
        gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_INT32, types3, (uint64_t)cases[i].n_types);
        gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_FLOAT32, scores, 2);
        char path[] = "/tmp/llm170_test_tokbad_XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0) continue;
        close(fd);
        err e = {0};
        gguf_writer_write(w, path, &e);
        gguf_writer_free(w);
        gguf_file *f = NULL;
        tokenizer *t = NULL;
        int rc = gguf_open(&f, path, &e);
        if (!rc) rc = tok_load_gguf(&t, f, &e);
        gguf_close(f);
        remove(path);
        CHECKF(rc != 0 && strstr(e.msg, cases[i].expect), "%s: rc %d, message '%s'", cases[i].what, rc, e.msg);
        tok_free(t);
    }
}

/* A long text (>= 4 KiB: the special-token search is pre-filtered by 4-grams) with special tokens in it
 * encodes to the concatenation of its pieces encoded one by one (short: no filter). */
static void test_long_specials(void) {
    static char bytes[256][3], ctl[20][32];
    const char *texts[276];
    int32_t types[276];
    for (int b = 0; b < 256; b++) {
        char tmp[2];
        int n = tok_byte_to_utf8((uint8_t)b, tmp);
        memcpy(bytes[b], tmp, (size_t)n);
        bytes[b][n] = 0;
        texts[b] = bytes[b];
        types[b] = TOK_TYPE_NORMAL;
    }
    for (int i = 0; i < 20; i++) {
        snprintf(ctl[i], sizeof ctl[i], "<ctl_%02d>", i);
        texts[256 + i] = ctl[i];
        types[256 + i] = TOK_TYPE_CONTROL;
    }
    tok_spec s = tok_spec_default();
    s.model = "gpt2";
    s.pre = "gpt-2";
    s.n_tokens = 276;
    s.texts = texts;
    s.types = types;
    tokenizer *t = NULL;
    err e = {0};
    CHECKF(tok_create(&t, &s, &e) == 0, "tok_create: %s", e.msg);
    if (!t) return;
    char text[6000];
    size_t n = 0;
    int32_t want[8000];
    size_t nw = 0;
    for (int part = 0; n < 5000; part++) {
        char chunk[256];
        int cn = snprintf(chunk, sizeof chunk, "part %d: hello <ctl_ world> %d ", part, part * 7);
        int32_t *ids;
        size_t ni;
        CHECK(tok_encode(t, chunk, (size_t)cn, TOK_PARSE_SPECIAL, &ids, &ni, &e) == 0);
        memcpy(text + n, chunk, (size_t)cn);
        n += (size_t)cn;
        memcpy(want + nw, ids, ni * sizeof *ids);
        nw += ni;
        free(ids);
        int which = (part * 7) % 20;
        n += (size_t)sprintf(text + n, "<ctl_%02d>", which);
        want[nw++] = 256 + which;
    }
    int32_t *got;
    size_t ng;
    CHECK(n >= 4096);
    CHECK(tok_encode(t, text, n, TOK_PARSE_SPECIAL, &got, &ng, &e) == 0);
    CHECKF(ids_eq(got, ng, want, nw), "long text with special tokens: %zu ids, expected %zu", ng, nw);
    free(got);
    tok_free(t);
}

int main(void) {
    test_long_specials();
    test_gguf_bad();
    test_bpe();
    test_spm();
    test_errors();
    test_gguf();
    return check_report("test_tokenizer");
}
