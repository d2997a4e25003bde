/* srv request tools: the tool fields of a request (see request.h): tools and tool_choice in both APIs'
 * shapes, made the one shape chat templates read (OpenAI's: [{"type": "function", "function": {"name",
 * "description", "parameters"}}]); assistant tool calls and tool results in the history, made the message
 * fields templates read ({"role": "assistant", "tool_calls": [{"id", "type", "function": {"name",
 * "arguments": OBJECT}}]} and {"role": "tool", "tool_call_id", "content"}). Templates (Qwen2.5's among
 * them) write the arguments with `| tojson`, so they get an object, not OpenAI's JSON-in-a-string. */
#include <stdlib.h>
#include <string.h>

#include "server/request.h"

#define SRV_MAX_TOOLS 128

static bool name_ok(const char *s) {
    size_t n = strlen(s);
    return n >= 1 && n <= 64 && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == n;
}

/* One tool, checked and made OpenAI-shaped (a new reference in *out). */
static int norm_tool(const json_t *t, size_t i, bool anthropic, json_t **out, srv_err *e) {
    if (!json_is_object(t)) return srv_fail(e, 400, "tools", "tools[%zu] must be an object, got %s", i, srv_json_type(t));
    const json_t *fn = anthropic ? t : json_object_get(t, "function");
    const char *type = json_string_value(json_object_get(t, "type"));
    if (!anthropic && (!type || strcmp(type, "function") != 0))
        return srv_fail(e, 400, "tools", "tools[%zu].type must be \"function\", got %s", i, type ? type : "nothing");
    if (anthropic && type && strcmp(type, "custom") != 0)
        return srv_fail(e, 400, "tools", "tools[%zu]: server tools (type \"%s\") are not supported; give name, "
                        "description and input_schema", i, type);
    const json_t *name = json_object_get(fn, "name");
    if (!json_is_object(fn) || !json_is_string(name) || !name_ok(json_string_value(name)))
        return srv_fail(e, 400, "tools", "tools[%zu]%s.name must be 1..64 letters, digits, '_', '-' or '.'", i,
                        anthropic ? "" : ".function");
    const json_t *params = json_object_get(fn, anthropic ? "input_schema" : "parameters");
    if (params && !json_is_object(params))
        return srv_fail(e, 400, "tools", "tools[%zu]: %s must be a JSON schema object", i,
                        anthropic ? "input_schema" : "function.parameters");
    const json_t *desc = json_object_get(fn, "description");
    json_t *f = json_pack("{s:O}", "name", name);
    if (json_is_string(desc)) json_object_set(f, "description", (json_t *)desc);
    json_object_set_new(f, "parameters", params ? json_deep_copy(params) : json_pack("{s:s,s:{}}", "type", "object",
                                                                                        "properties"));
    *out = json_pack("{s:s,s:o}", "type", "function", "function", f);
    return 0;
}

static int parse_tool_choice(const json_t *o, bool anthropic, srv_params *p, srv_err *e) {
    const json_t *tc = json_object_get(o, "tool_choice");
    if (!tc || json_is_null(tc)) return 0;
    const char *mode = json_is_string(tc) && !anthropic ? json_string_value(tc)
                                                       : json_string_value(json_object_get(tc, "type"));
    const char *name = anthropic ? json_string_value(json_object_get(tc, "name"))
                                 : json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
    if (mode && !strcmp(mode, "none")) p->tool_choice = SRV_TOOLS_NONE;
    else if (mode && !strcmp(mode, "auto")) p->tool_choice = SRV_TOOLS_AUTO;
    else if (mode && !strcmp(mode, anthropic ? "any" : "required")) p->tool_choice = SRV_TOOLS_REQUIRED;
    else if (mode && !strcmp(mode, anthropic ? "tool" : "function") && name) p->tool_choice = SRV_TOOLS_NAMED;
    else
        return srv_fail(e, 400, "tool_choice", anthropic
                        ? "tool_choice must be {\"type\": \"auto\" | \"any\" | \"none\"} or {\"type\": \"tool\", \"name\": N}"
                        : "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                          "\"function\": {\"name\": N}}");
    if (p->tool_choice != SRV_TOOLS_NONE && !p->tools)
        return srv_fail(e, 400, "tool_choice", "tool_choice needs 'tools'");
    if (p->tool_choice == SRV_TOOLS_NAMED) {
        bool found = false;
        json_t *tools = json_loads(p->tools, 0, NULL);
        for (size_t i = 0; i < json_array_size(tools) && !found; i++)
            found = !strcmp(json_string_value(json_object_get(json_object_get(json_array_get(tools, i), "function"),
                                                              "name")), name);
        json_decref(tools);
        if (!found) return srv_fail(e, 400, "tool_choice", "tool_choice names '%.64s', which is not among the tools", name);
        p->tool_name = strdup(name);
    }
    return 0;
}

int srv_parse_tools(const json_t *o, srv_params *p, srv_err *e) {
    bool anthropic = p->api == SRV_API_MESSAGES || p->api == SRV_API_COUNT_TOKENS;
    const json_t *tools = json_object_get(o, "tools");
    if (tools && !json_is_null(tools)) {
        if (!json_is_array(tools)) return srv_fail(e, 400, "tools", "'tools' must be an array, got %s", srv_json_type(tools));
        if (json_array_size(tools) > SRV_MAX_TOOLS)
            return srv_fail(e, 400, "tools", "at most %d tools, got %zu", SRV_MAX_TOOLS, json_array_size(tools));
        json_t *arr = json_array();
        for (size_t i = 0; i < json_array_size(tools); i++) {
            json_t *t = NULL;
            if (norm_tool(json_array_get(tools, i), i, anthropic, &t, e)) {
                json_decref(arr);
                return -1;
            }
            json_array_append_new(arr, t);
        }
        if (json_array_size(arr)) p->tools = json_dumps(arr, JSON_COMPACT);
        json_decref(arr);
    }
    return parse_tool_choice(o, anthropic, p, e);
}

int srv_norm_tool_calls(json_t *msg, const char *where, srv_err *e) {
    json_t *calls = json_object_get(msg, "tool_calls");
    if (!calls || json_is_null(calls)) return 0;
    if (!json_is_array(calls)) return srv_fail(e, 400, "messages", "%s.tool_calls must be an array", where);
    for (size_t i = 0; i < json_array_size(calls); i++) {
        json_t *fn = json_object_get(json_array_get(calls, i), "function");
        json_t *args = json_object_get(fn, "arguments");
        if (!json_is_object(fn) || !json_is_string(json_object_get(fn, "name")))
            return srv_fail(e, 400, "messages", "%s.tool_calls[%zu] needs function.name", where, i);
        if (json_is_string(args)) {
            json_t *v = json_loads(json_string_value(args), 0, NULL);
            if (!json_is_object(v)) {
                json_decref(v);
                return srv_fail(e, 400, "messages", "%s.tool_calls[%zu].function.arguments is not a JSON object", where, i);
            }
            json_object_set_new(fn, "arguments", v);
        } else if (!json_is_object(args)) {
            json_object_set_new(fn, "arguments", json_object());
        }
    }
    return 0;
}

/* A tool_result's content: a string or text blocks. */
static json_t *result_text(const json_t *c) {
    if (json_is_string(c)) return json_incref((json_t *)c);
    json_t *s = json_string("");
    for (size_t i = 0; json_is_array(c) && i < json_array_size(c); i++) {
        const json_t *t = json_object_get(json_array_get(c, i), "text");
        if (!json_is_string(t)) continue;
        char *joined = malloc(json_string_length(s) + json_string_length(t) + 1);
        if (!joined) break;
        memcpy(joined, json_string_value(s), json_string_length(s));
        memcpy(joined + json_string_length(s), json_string_value(t), json_string_length(t) + 1);
        json_decref(s);
        s = json_string(joined);
        free(joined);
        if (!s) return json_string("");
    }
    return s;
}

int srv_norm_anthropic_blocks(const json_t *blocks, const char *where, const char *role, json_t *out_arr, srv_err *e) {
    json_t *calls = json_array(), *text = json_array();
    size_t before = json_array_size(out_arr);
    for (size_t i = 0; i < json_array_size(blocks); i++) {
        const json_t *b = json_array_get(blocks, i);
        const char *type = json_string_value(json_object_get(b, "type"));
        if (type && !strcmp(type, "text")) {
            json_array_append(text, (json_t *)b);
        } else if (type && !strcmp(type, "tool_use") && !strcmp(role, "assistant")) {
            const json_t *name = json_object_get(b, "name"), *id = json_object_get(b, "id"), *in = json_object_get(b, "input");
            if (!json_is_string(name) || !json_is_string(id)) {
                json_decref(calls), json_decref(text);
                return srv_fail(e, 400, "messages", "%s.content[%zu]: tool_use needs id and name", where, i);
            }
            json_array_append_new(calls, json_pack("{s:O,s:s,s:{s:O,s:o}}", "id", id, "type", "function", "function",
                                                   "name", name, "arguments",
                                                   json_is_object(in) ? json_deep_copy(in) : json_object()));
        } else if (type && !strcmp(type, "tool_result") && !strcmp(role, "user")) {
            const json_t *id = json_object_get(b, "tool_use_id");
            if (!json_is_string(id)) {
                json_decref(calls), json_decref(text);
                return srv_fail(e, 400, "messages", "%s.content[%zu]: tool_result needs tool_use_id", where, i);
            }
            json_array_append_new(out_arr, json_pack("{s:s,s:O,s:o}", "role", "tool", "tool_call_id", id, "content",
                                                     result_text(json_object_get(b, "content"))));
        } else {
            json_decref(calls), json_decref(text);
            return srv_fail(e, 400, "content", "%s.content[%zu]: type %s is not supported in a%s %s message", where, i,
                            type ? type : "(none)", role[0] == 'a' ? "n" : "", role);
        }
    }
    json_t *t = result_text(text);
    json_decref(text);
    if (json_string_length(t) || json_array_size(calls) || json_array_size(out_arr) == before) {
        json_t *m = json_pack("{s:s,s:o}", "role", role, "content", t);
        if (json_array_size(calls)) json_object_set(m, "tool_calls", calls);
        json_array_append_new(out_arr, m);
    } else {
        json_decref(t);
    }
    json_decref(calls);
    return 0;
}
