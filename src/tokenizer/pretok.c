/* pretok: the pre-tokenizers of byte-level BPE vocabularies, selected by `tokenizer.ggml.pre`.
 *
 * A pre-tokenizer is a list of regexes applied in turn (HF tokenizers' Sequence of Split(Isolated)
 * steps, which llama.cpp mirrors): each regex splits every fragment left by the previous one into its
 * matches and the gaps between them, both kept. The regexes are the ones in the models' tokenizer.json
 * (llama.cpp lists the same per name; where it rewrote one for std::regex we keep the original, since
 * PCRE2 supports (?i:...), possessive quantifiers and Unicode properties). Matching runs in PCRE2's UTF +
 * UCP mode (\s, \d, \w and \p{..} follow Unicode, as in Oniguruma, HF's engine), JIT-compiled.
 *
 * Ownership: tok_pretok_new returns compiled patterns that tok_pretok_free releases; a tok_pretok is
 * read-only afterwards (each split makes its own match data), so threads may share it. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_impl.h"

#define MAX_RULES 6

/* The regex most GPT-2 descendants share. */
#define RX_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RX_LLAMA3 \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_QWEN2 \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_GPT4O_CORE(M) \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" M \
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" M
#define RX_CONTR "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
#define RX_DS3_MAIN(TAIL) \
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+" \
    "| ?[\\p{P}\\p{S}]+" TAIL "|\\s+(?!\\S)|\\s+"

typedef struct pre_def {
    const char *names; /* canonical name first, then aliases, '|'-separated */
    const char *rules[MAX_RULES];
    bool raw_utf8;      /* no GPT-2 byte alphabet; spaces as U+2581 (gemma4) */
    bool ignore_merges;
    bool add_bos;       /* default when the file does not say */
} pre_def;

static const pre_def PRE_DEFS[] = {
    {"default", {"[\\p{P}\\$\\+<=>\\^~\\|]+", RX_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}, false, false, false},
    {"llama-bpe|llama3|llama-v3|falcon3|falcon-h1|pixtral|midm-2.0|lfm2|jina-v5-nano", {RX_LLAMA3}, false,
     true, true},
    {"dbrx|smaug-bpe|chatglm-bpe", {RX_LLAMA3}, false, false, false},
    {"glm4|glm5", {RX_LLAMA3}, false, true, false},
    {"jais-2",
     {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
      "|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)"
      "|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"},
     false, false, false},
    {"deepseek-llm",
     {"[\r\n]",
      "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
      "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"},
     false, false, false},
    {"deepseek-coder", {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"}, false, false, false},
    {"deepseek-v3|hunyuan-dense|joyai-llm|hy_v4",
     {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", RX_DS3_MAIN("[\\r\\n]*|\\s*[\\r\\n]+")}, false, false, false},
    {"spark2_5", {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", RX_DS3_MAIN("|[\\r\\n]"), "\\p{N}"}, false, false, false},
    {"falcon", {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RX_GPT2, "[0-9][0-9][0-9]"}, false, false, false},
    {"starcoder|refact|command-r|smollm|codeshell|exaone|minerva-7b|mellum2", {"\\p{N}", RX_GPT2}, false, false,
     false},
    {"gpt-2|mpt|olmo|jais|trillion|granite-docling|phi-2|jina-es|jina-de|gigachat|jina-v2-es|jina-v2-de|"
     "a.x-4.0|mellum|modern-bert|exaone4|jina-v1-en|jina-v2-code|roberta-bpe",
     {RX_GPT2}, false, false, false},
    {"qwen2|deepseek-r1-qwen|kormo|f2llmv2|stablelm2|hunyuan|solar-open|megrez|grok-2", {RX_QWEN2}, false, false,
     false},
    {"qwen35",
     {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+"
      "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     false, false, false},
    {"poro-chat|bloom|gpt3-finnish", {" ?[^(\\s|.,!?…。，、।۔،)]+"}, false, false, false},
    {"viking", {" ?[^(\\s|.,!?…。，、।۔،)]+", "\\p{N}"}, false, false, false},
    {"tekken",
     {RX_GPT4O_CORE("") "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, false, true,
     true},
    {"gpt-4o|llama4|kanana2|talkie|minimax-m2",
     {RX_GPT4O_CORE(RX_CONTR) "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     false, false, false},
    {"tiny_aya|cohere2moe",
     {"\\d{1,3}(?=(?:\\d{3})*\\b)",
      RX_GPT4O_CORE(RX_CONTR) "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     false, false, false},
    {"bailingmoe|bailingmoe2|llada-moe",
     {"'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]"
      "|\\s+(?!\\S)|\\s+"},
     false, false, false},
    {"seed-coder",
     {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\r\n]+|\\s*[\r\n]+"
      "|\\s+(?!\\S)|\\s+"},
     false, false, false},
    {"ufakzeka",
     {"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, false,
     false, false},
    {"laguna", {"[^\\n]+|[\\n]+", RX_QWEN2}, false, false, false},
    {"exaone-moe",
     {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}"
      "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"},
     false, false, false},
    {"minicpm5",
     {"\\p{N}{1,3}",
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
      "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     false, true, false},
    {"gemma4|granite-embed-multi-311m", {"[^\\n]+|[\\n]+"}, true, false, false},
};
#define N_PRE_DEFS (sizeof PRE_DEFS / sizeof PRE_DEFS[0])

struct tok_pretok {
    const pre_def *def;
    char name[32]; /* canonical name (the tokenizer hands out a pointer to it) */
    pcre2_code *code[MAX_RULES];
    int n_rules;
};

static bool name_in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !memcmp(p, name, n)) return true;
        if (!bar) break;
        p = bar + 1;
    }
    return false;
}

/* Both lists are built once (pthread_once: tokenizers may be created from several threads). */
static char all_names[2048], canon_names[1024];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_names(void) {
    size_t k = 0, c = 0;
    for (size_t i = 0; i < N_PRE_DEFS; i++) {
        const char *nm = PRE_DEFS[i].names;
        size_t len = strcspn(nm, "|");
        if (c + len + 3 < sizeof canon_names) {
            if (c) canon_names[c++] = ',', canon_names[c++] = ' ';
            memcpy(canon_names + c, nm, len);
            c += len;
        }
        for (const char *p = nm; *p && k + 3 < sizeof all_names; p++) {
            if (k && p == nm) all_names[k++] = ',', all_names[k++] = ' ';
            all_names[k++] = *p == '|' ? ',' : *p;
            if (*p == '|') all_names[k++] = ' ';
        }
    }
    all_names[k] = 0;
    canon_names[c] = 0;
}

const char *tok_pre_names(void) {
    pthread_once(&names_once, build_names);
    return all_names;
}

/* The canonical names only (the first of each group), short enough for an error message. */
static const char *canonical_names(void) {
    pthread_once(&names_once, build_names);
    return canon_names;
}

int tok_pretok_new(tok_pretok **out, const char *name, const char **canonical, err *e) {
    if (!name || !*name) name = "default";
    const pre_def *def = NULL;
    for (size_t i = 0; i < N_PRE_DEFS && !def; i++)
        if (name_in_list(PRE_DEFS[i].names, name)) def = &PRE_DEFS[i];
    if (!def)
        return err_set(e, ERR_UNSUPPORTED,
                       "unknown pre-tokenizer '%s' (tokenizer.ggml.pre); supported: %s (and their aliases, which "
                       "`llm170 tokenize --help` lists)", name, canonical_names());
    tok_pretok *p = calloc(1, sizeof *p);
    if (!p) return err_set(e, ERR_NOMEM, "out of memory for the pre-tokenizer");
    p->def = def;
    for (int i = 0; i < MAX_RULES && def->rules[i]; i++) {
        int ec;
        PCRE2_SIZE off;
        p->code[i] = pcre2_compile((PCRE2_SPTR)def->rules[i], PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &ec,
                                   &off, NULL);
        if (!p->code[i]) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(ec, msg, sizeof msg);
            tok_pretok_free(p);
            return err_set(e, ERR_UNSUPPORTED, "pre-tokenizer '%s': regex %d does not compile at offset %zu: %s",
                           name, i, (size_t)off, (char *)msg);
        }
        /* JIT is an optimisation: a platform without it still matches correctly, only slower. */
        (void)pcre2_jit_compile(p->code[i], PCRE2_JIT_COMPLETE);
        p->n_rules = i + 1;
    }
    size_t len = strcspn(def->names, "|");
    if (len >= sizeof p->name) len = sizeof p->name - 1;
    memcpy(p->name, def->names, len);
    p->name[len] = 0;
    if (canonical) *canonical = p->name;
    *out = p;
    return 0;
}

void tok_pretok_free(tok_pretok *p) {
    if (!p) return;
    for (int i = 0; i < MAX_RULES; i++) pcre2_code_free(p->code[i]); /* NULL-safe */
    free(p);
}

void tok_pretok_flags(const tok_pretok *p, bool *byte_encode, bool *ignore_merges, bool *escape_spaces,
                      int *default_add_bos) {
    *byte_encode = !p->def->raw_utf8;
    *escape_spaces = p->def->raw_utf8;
    *ignore_merges = p->def->ignore_merges;
    *default_add_bos = p->def->add_bos;
}

/* A fragment list: (offset, length) pairs into the text. */
typedef struct span_list {
    size_t *v; /* 2 per span */
    size_t n, cap;
} span_list;

static int span_push(span_list *l, size_t off, size_t len, err *e) {
    if (len == 0) return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        size_t *v = realloc(l->v, cap * 2 * sizeof *v);
        if (!v) return err_set(e, ERR_NOMEM, "out of memory splitting text");
        l->v = v, l->cap = cap;
    }
    l->v[2 * l->n] = off, l->v[2 * l->n + 1] = len;
    l->n++;
    return 0;
}

static size_t utf8_len_at(const unsigned char *s, size_t avail) {
    size_t n = s[0] < 0x80 ? 1 : s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
    return n < avail ? n : avail;
}

/* One rule over one fragment: matches and the gaps between them become spans of `out`. */
static int split_rule(const pcre2_code *code, pcre2_match_data *md, const char *text, size_t off, size_t len,
                      span_list *out, err *e) {
    const PCRE2_SPTR subj = (PCRE2_SPTR)(text + off);
    size_t pos = 0, last = 0;
    while (pos <= len) {
        int rc = pcre2_match(code, subj, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return err_set(e, ERR_FORMAT, "pre-tokenizer regex failed at byte %zu: %s", off + pos, (char *)msg);
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { /* an empty match splits nothing: step one character on */
            if (ms >= len) break;
            pos = ms + utf8_len_at(subj + ms, len - ms);
            continue;
        }
        int rc2 = span_push(out, off + last, ms - last, e);
        if (!rc2) rc2 = span_push(out, off + ms, me - ms, e);
        if (rc2) return rc2;
        last = pos = me;
    }
    return span_push(out, off + last, len - last, e);
}

int tok_pretok_split(const tok_pretok *p, const char *text, size_t len, tok_word_fn fn, void *ctx, err *e) {
    span_list a = {0}, b = {0};
    pcre2_match_data *md = NULL;
    int rc = span_push(&a, 0, len, e);
    for (int r = 0; r < p->n_rules && !rc; r++) {
        md = pcre2_match_data_create_from_pattern(p->code[r], NULL);
        if (!md) {
            rc = err_set(e, ERR_NOMEM, "out of memory for regex match data");
            break;
        }
        b.n = 0;
        for (size_t i = 0; i < a.n && !rc; i++) rc = split_rule(p->code[r], md, text, a.v[2 * i], a.v[2 * i + 1], &b, e);
        pcre2_match_data_free(md);
        md = NULL;
        span_list t = a;
        a = b, b = t;
    }
    for (size_t i = 0; i < a.n && !rc; i++) rc = fn(ctx, text + a.v[2 * i], a.v[2 * i + 1], e);
    free(a.v);
    free(b.v);
    return rc;
}
