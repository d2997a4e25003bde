/* chat: the public entry point of the template renderer and the built-in fallback templates.
 * One render = one arena (jinja.h); any error unwinds here through longjmp and frees it. */
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "chat/jinja.h"

static const struct {
    const char *name, *text;
} BUILTINS[] = {
    {"chatml",
     "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
     "'<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"},
    {"llama3",
     "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + "
     "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}{%- if "
     "add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"},
    {"gemma",
     "{{- bos_token }}{%- for message in messages %}{%- set role = 'model' if message['role'] == 'assistant' else "
     "message['role'] %}{{- '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
     "{%- endfor %}{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}{%- endif %}"},
};

const char *chat_builtin_template(const char *name) {
    for (size_t i = 0; i < sizeof BUILTINS / sizeof BUILTINS[0]; i++)
        if (!strcmp(BUILTINS[i].name, name)) return BUILTINS[i].text;
    return NULL;
}

const char *chat_builtin_names(void) { return "chatml, llama3, gemma"; }

/* transformers' _alias_reasoning_fields: {"thinking": r, **message, "reasoning_content": r} */
static jv *alias_reasoning(jctx *c, jv *msg) {
    static const char *fields[] = {"reasoning_content", "thinking", "reasoning"};
    jv *r = NULL;
    for (size_t i = 0; i < 3 && !r; i++) {
        jv *v = jv_gets(msg, fields[i]);
        if (v && v->k != JV_NONE) r = v;
    }
    if (!r) return msg;
    jv *out = jv_dict(c);
    jv_set(c, out, jv_strz(c, "thinking"), r);
    for (size_t i = 0; i < msg->d.n; i++) jv_set(c, out, msg->d.key[i], msg->d.val[i]);
    jv_set(c, out, jv_strz(c, "reasoning_content"), r);
    return out;
}

int chat_render(const char *tmpl, size_t tmpl_len, const char *messages_json, size_t messages_len,
                const char *tools_json, size_t tools_len, const chat_opts *o, char **out, size_t *out_len, err *e) {
    *out = NULL;
    *out_len = 0;
    jctx *c = calloc(1, sizeof *c);
    if (!c) return err_set(e, ERR_NOMEM, "out of memory");
    c->e = e;
    c->now = o->now;
    if (setjmp(c->jb)) {
        ja_free(&c->arena);
        free(c);
        return e && e->code ? e->code : ERR_FORMAT;
    }
    jtok *toks;
    size_t nt;
    jinja_lex(c, tmpl, tmpl_len, &toks, &nt);
    jnode *root = jinja_parse(c, toks, nt);
    jv *msgs = jv_from_json(c, messages_json, messages_len, "messages");
    if (msgs->k != JV_LIST) jinja_fail(c, 0, "messages: expected a JSON array of message objects");
    for (size_t i = 0; i < msgs->l.n; i++) {
        if (msgs->l.v[i]->k != JV_DICT) jinja_fail(c, 0, "messages[%zu]: expected an object", i);
        msgs->l.v[i] = alias_reasoning(c, msgs->l.v[i]);
    }
    jv *tools = jv_none();
    if (tools_json) {
        tools = jv_from_json(c, tools_json, tools_len, "tools");
        if (tools->k != JV_LIST) jinja_fail(c, 0, "tools: expected a JSON array");
    }
    jscope *g = jscope_new(c, NULL);
    c->globals = g;
    jinja_add_globals(c, g);
    jscope_set(c, g, "messages", msgs);
    jscope_set(c, g, "tools", tools);
    jscope_set(c, g, "documents", jv_none());
    jscope_set(c, g, "add_generation_prompt", jv_bool(o->add_generation_prompt));
    if (o->bos_token) jscope_set(c, g, "bos_token", jv_strz(c, o->bos_token));
    if (o->eos_token) jscope_set(c, g, "eos_token", jv_strz(c, o->eos_token));
    if (o->enable_thinking >= 0) jscope_set(c, g, "enable_thinking", jv_bool(o->enable_thinking));
    jscope *top = jscope_new(c, g); /* the template's own top level */
    c->globals = top;
    jbuf buf = {0};
    jinja_render_body(c, top, root, &buf);
    char *s = malloc(buf.n + 1);
    if (!s) {
        ja_free(&c->arena);
        free(c);
        return err_set(e, ERR_NOMEM, "out of memory for %zu bytes of output", buf.n);
    }
    if (buf.n) memcpy(s, buf.p, buf.n);
    s[buf.n] = 0;
    *out = s;
    *out_len = buf.n;
    ja_free(&c->arena);
    free(c);
    return 0;
}
