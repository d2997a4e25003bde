/* srv toolcall: a model's tool calls found in its output text, whole or as it streams.
 *
 * Formats (tried in this order; what the families we run emit):
 *   - Qwen2.5 / Hermes: <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, one or more, maybe
 *     after some text. A last call whose closing tag never came (the model ended its turn right after the
 *     JSON) still counts if its JSON is whole.
 *   - Llama 3.x and the generic fallback: the whole reply is one JSON object {"name": "f", "parameters" or
 *     "arguments": {...}} (Llama 3.1 may put <|python_tag|> first), or an array of such objects, and every
 *     name is one of the request's tools. Anything else is plain text.
 * Arguments come out as JSON text (what OpenAI's "arguments" holds; Anthropic's "input" is its parse).
 *
 * The stream form holds back text that may be the start of "<tool_call>" (as stop strings are held back)
 * and, while the reply so far could be a bare JSON call ('{', '[' or <|python_tag|> first), all of it
 * until the end. Ownership: calls and texts handed out are malloc'd; the receiver frees them
 * (srv_tool_call_free). */
#ifndef LLM170_SERVER_TOOLCALL_H
#define LLM170_SERVER_TOOLCALL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct srv_tool_call {
    char id[40];       /* "call_..." (OpenAI) ; Anthropic answers use "toolu_..." made from the same */
    char *name;
    char *arguments;   /* JSON object text */
} srv_tool_call;

void srv_tool_call_free(srv_tool_call *c);

/* The tool names a reply may call: the request's tools (a JSON array, OpenAI shape). */
typedef struct srv_tool_names {
    char **names;
    int n;
} srv_tool_names;

/* Parses a whole reply: *content gets the text outside calls (malloc'd, maybe empty), *calls the calls
 * (malloc'd array, NULL when none). names: accepted names for the bare-JSON forms (NULL: any). */
int srv_tools_parse(const char *text, size_t len, const srv_tool_names *names, char **content, srv_tool_call **calls,
                    int *n_calls);

/* The stream form. */
typedef struct srv_tool_stream {
    char *buf;             /* text received and not yet handed out */
    size_t len, cap;
    int state;             /* see toolcall.c */
    bool any_text;         /* non-blank text was handed out */
    int n_calls;
    const srv_tool_names *names;
} srv_tool_stream;

typedef void (*srv_tool_text_fn)(void *ctx, const char *text, size_t len);
typedef void (*srv_tool_call_fn)(void *ctx, srv_tool_call *call); /* takes the call */

void srv_tool_stream_init(srv_tool_stream *ts, const srv_tool_names *names);
/* Feeds text; hands out what is decided through on_text / on_call. final: the reply ended. */
void srv_tool_stream_push(srv_tool_stream *ts, const char *text, size_t len, bool final, srv_tool_text_fn on_text,
                          srv_tool_call_fn on_call, void *ctx);
void srv_tool_stream_free(srv_tool_stream *ts);

/* Names from a tools array (OpenAI shape: [{"type": "function", "function": {"name": ...}}]). */
int srv_tool_names_from_json(const char *tools_json, srv_tool_names *out);
void srv_tool_names_free(srv_tool_names *n);

#endif
