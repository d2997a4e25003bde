/* vocab: a complete gpt2-style (byte-level BPE) tokenizer for synthetic models.
 *
 * Layout (ids):
 *   [0, 256)                 the 256 byte tokens, in GPT-2's bytes_to_unicode order (printable bytes
 *                            first, as in Qwen's and Llama 3's real vocabularies: id 0 is "!")
 *   [256, special_base)      merged tokens "to", "tok", "tok0".."tok9", "tok00".. in breadth-first order;
 *                            merge i builds token 256+i from two earlier tokens, so every merge is valid
 *   [special_base, ...)      the model family's special tokens at their real ids
 *   the rest                 "[PADn]" (type unused), as llama.cpp's converter pads a padded vocab
 * Token types are llama.cpp's: 1 normal, 3 control, 4 user-defined, 5 unused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth.h"

enum { TT_NORMAL = 1, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5 };

/* Qwen3's added tokens in id order; Qwen3.5 keeps this order from <|endoftext|> = 248044 (its vision ids
 * 248053/248054/248056/248057 from the spec sit exactly where this list puts them). */
static const char *const qwen_specials[] = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
    "<tool_response>", "</tool_response>", "<think>", "</think>",
};

/* Llama 3.1's first named special tokens; ids up to base+255 are <|reserved_special_token_N|>. */
static const char *const llama3_specials[] = {
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
    "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>",
};
#define LLAMA3_N_SPECIAL 256

/* Short ChatML / Llama 3 templates in Jinja (the real ones add tool calling; these cover chat). */
static const char qwen_template[] =
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- else %}{{- '<think>\\n' }}{%- endif %}{%- endif %}";

static const char llama3_template[] =
    "{{- bos_token }}{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim"
    " + '<|eot_id|>' }}{%- endfor %}\n"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";

typedef struct arena {
    char *buf;
    size_t used, cap;
} arena;

static char *arena_put(arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    if (a->used + n > a->cap) return NULL;
    char *p = a->buf + a->used;
    memcpy(p, s, n);
    a->used += n;
    return p;
}

/* UTF-8 of code point cp (< 0x800 here) into out; returns out. */
static char *utf8(unsigned cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        out[2] = 0;
    }
    return out;
}

/* GPT-2's bytes_to_unicode: printable bytes map to themselves and come first; the others map to
 * 256, 257, ... in byte order. Fills order[i] = the i-th byte token's code point. */
static void byte_token_order(unsigned order[256]) {
    int n = 0, extra = 0;
    bool printable[256] = {false};
    for (int b = 0; b < 256; b++)
        printable[b] = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    for (int b = 0; b < 256; b++)
        if (printable[b]) order[n++] = (unsigned)b;
    for (int b = 0; b < 256; b++)
        if (!printable[b]) order[n++] = 256u + (unsigned)extra++;
}

void synth_vocab_free(synth_vocab *v) {
    if (!v) return;
    free(v->tokens);
    free(v->types);
    free(v->merges);
    free(v->arena);
    memset(v, 0, sizeof *v);
}

int synth_vocab_build(const synth_preset *p, synth_vocab *v, err *e) {
    memset(v, 0, sizeof *v);
    const size_t n = (size_t)p->n_vocab;
    const size_t base = (size_t)p->tok_special_base;
    const bool qwen = p->tok == SYNTH_TOK_QWEN35;
    const size_t n_special = qwen ? sizeof qwen_specials / sizeof qwen_specials[0] : LLAMA3_N_SPECIAL;
    if (base < 256 + 2 || base + n_special > n)
        return err_set(e, ERR_ARG, "synth vocab for %s: %zu tokens cannot hold 256 bytes, 2 merges and %zu "
                       "special tokens from id %zu", p->name, n, n_special, base);

    arena a = {.cap = n * 40 + 4096};
    a.buf = malloc(a.cap);
    v->arena = a.buf;
    v->tokens = calloc(n, sizeof *v->tokens);
    v->types = calloc(n, sizeof *v->types);
    v->merges = calloc(base - 256, sizeof *v->merges);
    if (!a.buf || !v->tokens || !v->types || !v->merges) {
        synth_vocab_free(v);
        return err_set(e, ERR_NOMEM, "synth vocab: out of memory for %zu tokens", n);
    }

    char tmp[64], c[4];
    unsigned order[256];
    byte_token_order(order);
    for (size_t i = 0; i < 256; i++) {
        v->tokens[i] = arena_put(&a, utf8(order[i], c));
        v->types[i] = TT_NORMAL;
    }
    size_t id = 256, nm = 0;
    /* "to" = t + o, "tok" = to + k, then every "tok..." token t spawns t+digit, breadth first. */
    v->tokens[id] = arena_put(&a, "to");
    v->merges[nm++] = arena_put(&a, "t o");
    id++;
    const size_t tok_id = id;
    v->tokens[id] = arena_put(&a, "tok");
    v->merges[nm++] = arena_put(&a, "to k");
    id++;
    for (size_t q = tok_id; id < base; q++) {
        for (int d = 0; d < 10 && id < base; d++) {
            snprintf(tmp, sizeof tmp, "%s%d", v->tokens[q], d);
            v->tokens[id] = arena_put(&a, tmp);
            snprintf(tmp, sizeof tmp, "%s %d", v->tokens[q], d);
            v->merges[nm++] = arena_put(&a, tmp);
            id++;
        }
    }
    for (size_t i = 0; i < base - 256; i++) v->types[256 + i] = TT_NORMAL;
    for (size_t i = 0; i < n_special; i++) {
        const char *s;
        if (qwen) {
            s = qwen_specials[i];
        } else if (i < sizeof llama3_specials / sizeof llama3_specials[0]) {
            s = llama3_specials[i];
        } else {
            snprintf(tmp, sizeof tmp, "<|reserved_special_token_%zu|>", i - 8); /* 11 -> _3 */
            s = tmp;
        }
        v->tokens[base + i] = arena_put(&a, s);
        v->types[base + i] = (s[1] == '|') ? TT_CONTROL : TT_USER;
    }
    for (size_t i = base + n_special; i < n; i++) {
        snprintf(tmp, sizeof tmp, "[PAD%zu]", i);
        v->tokens[i] = arena_put(&a, tmp);
        v->types[i] = TT_UNUSED;
    }
    for (size_t i = 0; i < n; i++)
        if (!v->tokens[i]) {
            synth_vocab_free(v);
            return err_set(e, ERR_NOMEM, "synth vocab: string arena of %zu bytes too small", a.cap);
        }
    for (size_t i = 0; i < nm; i++)
        if (!v->merges[i]) {
            synth_vocab_free(v);
            return err_set(e, ERR_NOMEM, "synth vocab: string arena of %zu bytes too small", a.cap);
        }
    v->n_tokens = n;
    v->n_merges = nm;
    if (qwen) {
        v->bos = (int32_t)base;     /* <|endoftext|> */
        v->eos = (int32_t)base + 2; /* <|im_end|> */
        v->pad = (int32_t)base;     /* <|endoftext|> */
        v->add_bos = false;
        v->pre = "qwen35";
        v->chat_template = qwen_template;
    } else {
        v->bos = (int32_t)base;     /* <|begin_of_text|> */
        v->eos = (int32_t)base + 9; /* <|eot_id|> (Instruct) */
        v->pad = -1;
        v->add_bos = true;
        v->pre = "llama-bpe";
        v->chat_template = llama3_template;
    }
    v->add_eos = false;
    return 0;
}
