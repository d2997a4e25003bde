/* llm170 template: renders a conversation with a chat template and prints the result exactly (no
 * trailing newline added), so a template can be checked outside the server.
 * The template comes from a model file (tokenizer.chat_template; bos/eos texts from its vocabulary, as
 * transformers' tokenizer passes them), a .jinja file, or a built-in fallback (--builtin NAME). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "cli/cli.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "template: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
        len += got;
        if (len + 1 == cap) {
            char *b = cap < (1u << 28) ? realloc(buf, cap *= 2) : NULL;
            if (!b) free(buf);
            buf = b;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "template: %s is too large or out of memory\n", path);
        return NULL;
    }
    buf[len] = 0;
    *n = len;
    return buf;
}

static int usage(void) {
    fprintf(stderr, "usage: llm170 template (--model M | --template FILE.jinja | --builtin NAME) --messages CONV.json\n"
                    "                       [--tools TOOLS.json] [--add-generation-prompt]\n"
                    "                       [--enable-thinking | --no-enable-thinking] [--bos TEXT] [--eos TEXT]\n"
                    "built-in templates: %s\n", chat_builtin_names());
    return 2;
}

/* A model's template and its bos/eos texts (copied: the file is closed before rendering). */
static int from_model(const char *path, char **tmpl, size_t *tn, char **bos, char **eos) {
    err e = {0};
    gguf_file *f = NULL;
    if (gguf_open(&f, path, &e)) return fprintf(stderr, "error: %s\n", e.msg), 1;
    gguf_str s;
    if (gguf_get_str(f, "tokenizer.chat_template", &s, &e)) {
        gguf_close(f);
        return fprintf(stderr, "error: %s has no tokenizer.chat_template; use --builtin (%s) or --template\n", path,
                       chat_builtin_names()), 1;
    }
    *tmpl = malloc(s.len + 1);
    if (!*tmpl) return gguf_close(f), 1;
    memcpy(*tmpl, s.ptr, s.len);
    (*tmpl)[s.len] = 0;
    *tn = s.len;
    tokenizer *t = NULL;
    if (!tok_load_gguf(&t, f, &e)) {
        size_t n;
        const char *x;
        if (tok_bos(t) >= 0 && !*bos) x = tok_token_text(t, tok_bos(t), &n), *bos = strndup(x, n);
        if (tok_eos(t) >= 0 && !*eos) x = tok_token_text(t, tok_eos(t), &n), *eos = strndup(x, n);
        tok_free(t);
    }
    gguf_close(f);
    return 0;
}

int cmd_template(int argc, char **argv) {
    const char *model = NULL, *tfile = NULL, *builtin = NULL, *mfile = NULL, *tools_file = NULL;
    char *bos = NULL, *eos = NULL;
    chat_opts o = {.enable_thinking = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--model") && more) model = argv[++i];
        else if (!strcmp(a, "--template") && more) tfile = argv[++i];
        else if (!strcmp(a, "--builtin") && more) builtin = argv[++i];
        else if (!strcmp(a, "--messages") && more) mfile = argv[++i];
        else if (!strcmp(a, "--tools") && more) tools_file = argv[++i];
        else if (!strcmp(a, "--bos") && more) free(bos), bos = strdup(argv[++i]);
        else if (!strcmp(a, "--eos") && more) free(eos), eos = strdup(argv[++i]);
        else if (!strcmp(a, "--add-generation-prompt")) o.add_generation_prompt = true;
        else if (!strcmp(a, "--enable-thinking")) o.enable_thinking = 1;
        else if (!strcmp(a, "--no-enable-thinking")) o.enable_thinking = 0;
        else {
            fprintf(stderr, "template: unknown or incomplete argument '%s'\n", a);
            return usage();
        }
    }
    if (!mfile || (!!model + !!tfile + !!builtin) != 1) return free(bos), free(eos), usage();
    char *tmpl = NULL, *msgs = NULL, *tools = NULL;
    size_t tn = 0, mn = 0, tl = 0;
    int rc = 1;
    if (model) {
        if (from_model(model, &tmpl, &tn, &bos, &eos)) goto done;
    } else if (tfile) {
        if (!(tmpl = slurp(tfile, &tn))) goto done;
    } else {
        const char *b = chat_builtin_template(builtin);
        if (!b) {
            fprintf(stderr, "template: unknown built-in '%s' (have: %s)\n", builtin, chat_builtin_names());
            goto done;
        }
        tmpl = strdup(b);
        tn = strlen(b);
    }
    if (!(msgs = slurp(mfile, &mn))) goto done;
    if (tools_file && !(tools = slurp(tools_file, &tl))) goto done;
    o.bos_token = bos, o.eos_token = eos;
    char *out;
    size_t on;
    err e = {0};
    if (chat_render(tmpl, tn, msgs, mn, tools, tl, &o, &out, &on, &e)) {
        fprintf(stderr, "template: %s\n", e.msg);
        goto done;
    }
    fwrite(out, 1, on, stdout);
    free(out);
    rc = 0;
done:
    free(tmpl);
    free(msgs);
    free(tools);
    free(bos);
    free(eos);
    return rc;
}
