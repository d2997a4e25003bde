/* srv request: the bodies of POST /v1/chat/completions, /v1/completions and /v1/messages (and
 * /v1/messages/count_tokens) parsed into one srv_params, with no model at hand: every check that needs
 * only the JSON is made here (types, ranges, required fields), so this is what fuzz/fuzz_request.c drives.
 * Checks that need the model (its name, the context size, token ids) are the routes' job.
 *
 * Chat messages are normalized to the OpenAI shape the chat template reads ({"role", "content": string}
 * plus any other fields the client sent, such as tool_calls); Anthropic's system prompt and content
 * blocks become such messages. Ownership: srv_params owns every pointer in it; srv_params_free frees them. */
#ifndef LLM170_SERVER_REQUEST_H
#define LLM170_SERVER_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llm170.h"
#include "server/json.h"
#include "server/jsonc.h"

typedef enum srv_api { SRV_API_CHAT, SRV_API_COMPLETION, SRV_API_MESSAGES, SRV_API_COUNT_TOKENS } srv_api;

#define SRV_MAX_STOP 16        /* stop strings per request (OpenAI allows 4; Anthropic more) */
#define SRV_MAX_STOP_LEN 256   /* bytes per stop string: they are searched after every token */
#define SRV_MAX_TOP_LOGPROBS 20
#define SRV_MAX_TOKENS_CAP 1000000 /* beyond this max_tokens is absurd for any context */

enum { SRV_TOOLS_AUTO, SRV_TOOLS_NONE, SRV_TOOLS_REQUIRED, SRV_TOOLS_NAMED };

typedef struct srv_params {
    srv_api api;
    char *model;              /* requested model name, or NULL */
    bool stream, include_usage;
    long long max_tokens;     /* -1: until the context ends */
    llm170_sampler_params sp; /* temperature etc.; seed random unless given */
    bool seed_given;
    char *stop[SRV_MAX_STOP];
    int n_stop;
    int n_probs;              /* -1: no logprobs; else alternatives per token (0..20) */
    bool ignore_eos;
    /* the prompt: exactly one of these */
    char *prompt;             /* completions: text */
    int32_t *prompt_ids;      /* completions: token ids */
    size_t n_prompt_ids;
    char *messages;           /* chat / messages: a JSON array for the chat template */
    char *tools;              /* JSON array in OpenAI's shape (Anthropic's converted), or NULL */
    int tool_choice;          /* SRV_TOOLS_* */
    char *tool_name;          /* SRV_TOOLS_NAMED: the function */
    int enable_thinking;      /* -1: the template's default */
    srv_jc_schema *schema;    /* response_format json_object / json_schema (or a forced tool call, set by the
                                 routes): the reply is constrained to it (see jsonc.h); NULL: free text */
    char *prefill;            /* set by the routes: text appended after the generation prompt (a forced
                                 tool call's opening), part of the reply though the model did not write it */
} srv_params;

/* Parses body (len bytes) for api. Returns 0, or -1 with e filled (status 400). */
int srv_parse_request(srv_api api, const char *body, size_t len, srv_params *p, srv_err *e);
void srv_params_free(srv_params *p);

/* ---- request_tools.c (used by request.c) ---- */
/* tools and tool_choice of either API into p->tools (OpenAI shape), p->tool_choice, p->tool_name. */
int srv_parse_tools(const json_t *o, srv_params *p, srv_err *e);
/* An OpenAI assistant message's tool_calls: checked, arguments made objects (for the template). */
int srv_norm_tool_calls(json_t *msg, const char *where, srv_err *e);
/* An Anthropic message's content blocks (text, tool_use, tool_result) as template messages appended to
 * out_arr: a "tool" message per tool_result, then the message itself (text, tool_calls). */
int srv_norm_anthropic_blocks(const json_t *blocks, const char *where, const char *role, json_t *out_arr, srv_err *e);

#endif
