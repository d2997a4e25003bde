/* chat: renders a conversation with a model's chat template (`tokenizer.chat_template`, Jinja2), the
 * way transformers' apply_chat_template does: jinja2 with trim_blocks and lstrip_blocks, variables
 * messages, tools (None when absent), documents (None), add_generation_prompt, plus bos_token,
 * eos_token and enable_thinking when given; globals raise_exception, strftime_now, namespace, dict,
 * range; tojson as json.dumps(ensure_ascii=False). Messages' "thinking"/"reasoning" fields are also
 * given as "reasoning_content" (and the other way round), as transformers does.
 *
 * The renderer implements the Jinja subset real chat templates use (see src/chat/jinja.h); a template
 * outside it fails with an error naming the line and the construct, never with wrong output.
 *
 * Ownership: the rendered text is malloc'd (caller frees). Inputs are only read. */
#ifndef LLM170_CHAT_CHAT_H
#define LLM170_CHAT_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

typedef struct chat_opts {
    bool add_generation_prompt;
    int enable_thinking;   /* -1: not passed to the template (its default applies), else 0 / 1 */
    const char *bos_token; /* NULL: not passed */
    const char *eos_token;
    long long now;         /* strftime_now's clock: seconds since 1970 (UTC); 0 = now, local time */
} chat_opts;

/* messages_json: an OpenAI-style array of {"role", "content", ...}; tools_json: an array or NULL. */
int chat_render(const char *tmpl, size_t tmpl_len, const char *messages_json, size_t messages_len,
                const char *tools_json, size_t tools_len, const chat_opts *o, char **out, size_t *out_len, err *e);

/* Built-in fallback templates for files without one: "chatml", "llama3", "gemma". NULL if unknown. */
const char *chat_builtin_template(const char *name);
const char *chat_builtin_names(void);

#endif
