/* srv json: jansson helpers shared by the server's routes: typed field readers that explain what was
 * wrong (field, expected type, found type), UTF-8-safe string making, and the two error-body formats.
 *
 * Ownership: srv_json_* getters return borrowed values (owned by the object they came from). Strings and
 * bodies returned as char * are malloc'd; the caller frees them. json_t results are new references. */
#ifndef LLM170_SERVER_JSON_H
#define LLM170_SERVER_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A request error: the HTTP status (4xx) and a message naming the field. */
typedef struct srv_err {
    int status;
    char msg[384];
    const char *param; /* the offending field, or NULL */
} srv_err;

int srv_fail(srv_err *e, int status, const char *param, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* jansson's name for a value's type ("string", "integer", ...; "absent" for NULL). */
const char *srv_json_type(const json_t *v);

/* Optional fields: absent or null leaves *out unchanged and returns 0; a value of another type (or out of
 * [lo, hi]) fills e (400) and returns -1. Integers are accepted where numbers are expected. */
int srv_json_bool(const json_t *o, const char *key, bool *out, srv_err *e);
int srv_json_int(const json_t *o, const char *key, long long lo, long long hi, long long *out, srv_err *e);
int srv_json_num(const json_t *o, const char *key, double lo, double hi, double *out, srv_err *e);
int srv_json_str(const json_t *o, const char *key, const char **out, srv_err *e);

/* A JSON string of len bytes of text; invalid UTF-8 sequences become U+FFFD (tokens can end mid-char). */
json_t *srv_json_text(const char *s, size_t len);

/* Serializes v compactly (and drops the reference). NULL only if out of memory. */
char *srv_json_dump(json_t *v, size_t *len);

/* {"error": {"message", "type", "param", "code"}} as OpenAI sends it. */
char *srv_error_openai(const srv_err *e, size_t *len);
/* {"type": "error", "error": {"type", "message"}} as Anthropic sends it. */
char *srv_error_anthropic(const srv_err *e, size_t *len);

#endif
