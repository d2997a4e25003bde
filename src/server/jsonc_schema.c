/* srv jsonc schema: a JSON schema compiled into jc_nodes (see jsonc.h for the subset and why). */
#include <stdlib.h>
#include <string.h>

#include "server/jsonc.h"

typedef struct build {
    srv_jc_schema *s;
    int cap_nodes, cap_lits;
    srv_err *e;
} build;

static int new_node(build *b, uint8_t kind) {
    srv_jc_schema *s = b->s;
    if (s->n_nodes == b->cap_nodes) {
        int cap = b->cap_nodes ? 2 * b->cap_nodes : 16;
        jc_node *t = realloc(s->nodes, sizeof *t * (size_t)cap);
        if (!t) return -1;
        s->nodes = t, b->cap_nodes = cap;
    }
    if (s->n_nodes >= UINT16_MAX) return -1;
    s->nodes[s->n_nodes] = (jc_node){.kind = kind, .items = -1};
    return s->n_nodes++;
}

/* Appends a literal (takes text). */
static int new_lit(build *b, char *text, int node) {
    srv_jc_schema *s = b->s;
    if (!text) return -1;
    if (s->n_lits == b->cap_lits) {
        int cap = b->cap_lits ? 2 * b->cap_lits : 16;
        char **t = realloc(s->lits, sizeof *t * (size_t)cap);
        int *tn = t ? realloc(s->lit_node, sizeof *tn * (size_t)cap) : NULL;
        if (t) s->lits = t;
        if (!tn) {
            free(text);
            return -1;
        }
        s->lit_node = tn, b->cap_lits = cap;
    }
    s->lits[s->n_lits] = text;
    s->lit_node[s->n_lits] = node;
    return s->n_lits++;
}

static const char *ignored[] = {"title", "description", "default", "examples", "format", "$schema", "$id", "$comment",
                                "strict", "type", "properties", "required", "additionalProperties", "items", "enum",
                                "const"};

static bool known_key(const char *k) {
    for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++)
        if (!strcmp(k, ignored[i])) return true;
    return false;
}

static int compile(build *b, const json_t *v, const char *path, int depth);

static int compile_enum(build *b, const json_t *vals, const char *path) {
    if (!json_is_array(vals) || json_array_size(vals) == 0 || json_array_size(vals) > JC_MAX_PROPS)
        return srv_fail(b->e, 400, "response_format", "%s: enum must be an array of 1..%d values", path, JC_MAX_PROPS);
    int id = new_node(b, JC_ENUM);
    if (id < 0) return srv_fail(b->e, 400, NULL, "out of memory");
    b->s->nodes[id].first = b->s->n_lits;
    for (size_t i = 0; i < json_array_size(vals); i++) {
        const json_t *x = json_array_get(vals, i);
        if (json_is_object(x) || json_is_array(x))
            return srv_fail(b->e, 400, "response_format", "%s: enum values must be strings, numbers, booleans or null", path);
        if (new_lit(b, json_dumps(x, JSON_ENCODE_ANY | JSON_COMPACT), -1) < 0)
            return srv_fail(b->e, 400, NULL, "out of memory");
    }
    b->s->nodes[id].n = (int)json_array_size(vals);
    return id;
}

static int compile_object(build *b, const json_t *v, const char *path, int depth) {
    const json_t *props = json_object_get(v, "properties"), *req = json_object_get(v, "required"),
                 *addl = json_object_get(v, "additionalProperties");
    if (props && !json_is_object(props))
        return srv_fail(b->e, 400, "response_format", "%s.properties must be an object", path);
    if (addl && !json_is_boolean(addl))
        return srv_fail(b->e, 400, "response_format", "%s.additionalProperties: only true or false is supported", path);
    size_t np = props ? json_object_size(props) : 0;
    if (np > JC_MAX_PROPS)
        return srv_fail(b->e, 400, "response_format", "%s: at most %d properties, got %zu", path, JC_MAX_PROPS, np);
    int id = new_node(b, JC_OBJECT);
    if (id < 0) return srv_fail(b->e, 400, NULL, "out of memory");
    /* no properties and extra ones allowed: a free-form object */
    b->s->nodes[id].free_keys = np == 0 && !json_is_false(addl);
    b->s->nodes[id].first = b->s->n_lits;
    b->s->nodes[id].n = (int)np;
    const char *key;
    const json_t *sub;
    /* the key literals first, contiguous; the value nodes after (they may add literals of their own) */
    json_object_foreach((json_t *)props, key, sub) {
        json_t *k = json_string(key);
        int rc = k ? new_lit(b, json_dumps(k, JSON_ENCODE_ANY | JSON_COMPACT), -1) : -1;
        json_decref(k);
        if (rc < 0) return srv_fail(b->e, 400, NULL, "out of memory");
    }
    int i = 0;
    json_object_foreach((json_t *)props, key, sub) {
        char p[256];
        snprintf(p, sizeof p, "%.160s.properties.%.64s", path, key);
        int child = compile(b, sub, p, depth + 1);
        if (child < 0) return -1;
        b->s->lit_node[b->s->nodes[id].first + i++] = child;
    }
    if (req && !json_is_array(req)) return srv_fail(b->e, 400, "response_format", "%s.required must be an array", path);
    for (size_t r = 0; req && r < json_array_size(req); r++) {
        const char *name = json_string_value(json_array_get(req, r));
        int found = -1;
        i = 0;
        json_object_foreach((json_t *)props, key, sub) {
            if (name && !strcmp(key, name)) found = i;
            i++;
        }
        if (found < 0)
            return srv_fail(b->e, 400, "response_format", "%s.required names '%.64s', which is not in properties", path,
                            name ? name : "(not a string)");
        b->s->nodes[id].required |= 1ull << found;
    }
    return id;
}

static int compile(build *b, const json_t *v, const char *path, int depth) {
    if (depth >= JC_MAX_DEPTH - 2)
        return srv_fail(b->e, 400, "response_format", "%s: the schema nests deeper than %d", path, JC_MAX_DEPTH - 2);
    if (json_is_true(v)) return new_node(b, JC_ANY);
    if (!json_is_object(v)) return srv_fail(b->e, 400, "response_format", "%s must be a schema object", path);
    const char *key;
    const json_t *sub;
    json_object_foreach((json_t *)v, key, sub) {
        if (!known_key(key))
            return srv_fail(b->e, 400, "response_format", "%s: the schema keyword '%.64s' is not supported (supported: "
                            "type, properties, required, additionalProperties, items, enum, const)", path, key);
    }
    const json_t *type = json_object_get(v, "type"), *en = json_object_get(v, "enum"), *cn = json_object_get(v, "const");
    if (type && !json_is_string(type))
        return srv_fail(b->e, 400, "response_format", "%s.type must be one type name (type lists are not supported)", path);
    if (cn) {
        json_t *one = json_pack("[O]", cn);
        int id = compile_enum(b, one, path);
        json_decref(one);
        return id;
    }
    if (en) return compile_enum(b, en, path);
    const char *t = type ? json_string_value(type) : json_object_get(v, "properties") ? "object" : NULL;
    if (!t) return new_node(b, JC_ANY);
    if (!strcmp(t, "object")) return compile_object(b, v, path, depth);
    if (!strcmp(t, "array")) {
        const json_t *items = json_object_get(v, "items");
        int id = new_node(b, JC_ARRAY);
        if (id < 0) return srv_fail(b->e, 400, NULL, "out of memory");
        if (items) {
            char p[256];
            snprintf(p, sizeof p, "%.200s.items", path);
            int child = compile(b, items, p, depth + 1);
            if (child < 0) return -1;
            b->s->nodes[id].items = child;
        }
        return id;
    }
    if (!strcmp(t, "string")) return new_node(b, JC_STRING);
    if (!strcmp(t, "number")) return new_node(b, JC_NUMBER);
    if (!strcmp(t, "integer")) return new_node(b, JC_INTEGER);
    if (!strcmp(t, "boolean") || !strcmp(t, "null")) {
        json_t *vals = !strcmp(t, "null") ? json_pack("[n]") : json_pack("[b,b]", 1, 0);
        int id = compile_enum(b, vals, path);
        json_decref(vals);
        return id;
    }
    return srv_fail(b->e, 400, "response_format", "%s.type '%.32s' is not a JSON schema type", path, t);
}

int srv_jc_compile(const json_t *schema, srv_jc_schema **out, srv_err *e) {
    *out = NULL;
    build b = {.s = calloc(1, sizeof(srv_jc_schema)), .e = e};
    if (!b.s) return srv_fail(e, 400, NULL, "out of memory");
    json_t *any_obj = schema ? NULL : json_pack("{s:s}", "type", "object");
    int root = compile(&b, schema ? schema : any_obj, "schema", 0);
    json_decref(any_obj);
    if (root >= 0 && b.s->nodes[root].kind != JC_OBJECT) {
        srv_fail(e, 400, "response_format", "the schema's root must be an object (\"type\": \"object\")");
        root = -1;
    }
    if (root < 0) {
        srv_jc_schema_free(b.s);
        return -1;
    }
    b.s->root = root;
    *out = b.s;
    return 0;
}

int srv_jc_tool_call_schema(const char *tools_json, const char *name, srv_jc_schema **out, srv_err *e) {
    json_t *tools = json_loads(tools_json, 0, NULL), *names = json_array(), *params = NULL;
    for (size_t i = 0; i < json_array_size(tools); i++) {
        json_t *fn = json_object_get(json_array_get(tools, i), "function");
        const char *n = json_string_value(json_object_get(fn, "name"));
        if (!n || (name && strcmp(n, name) != 0)) continue;
        json_array_append_new(names, json_string(n));
        params = json_object_get(fn, "parameters");
    }
    /* one possible function: its arguments follow its schema; several: any object (no anyOf here) */
    json_t *args = json_array_size(names) == 1 && params ? json_incref(params) : json_pack("{s:s}", "type", "object");
    json_t *schema = json_pack("{s:s,s:{s:{s:o},s:o},s:[s,s]}", "type", "object", "properties", "name", "enum", names,
                               "arguments", args, "required", "name", "arguments");
    int rc = srv_jc_compile(schema, out, e);
    if (rc) snprintf(e->msg + strlen(e->msg), sizeof e->msg - strlen(e->msg), " (in the tool's parameters)");
    json_decref(schema);
    json_decref(tools);
    return rc;
}

void srv_jc_schema_free(srv_jc_schema *s) {
    if (!s) return;
    for (int i = 0; i < s->n_lits; i++) free(s->lits[i]);
    free(s->lits);
    free(s->lit_node);
    free(s->nodes);
    free(s);
}
