/* err: errors as values.
 *
 * Functions on input paths (files, user flags, requests) return an int status (0 = ok, negative = error)
 * and fill an `err` with a message that says what was expected, what was found and where. `assert` only
 * guards internal invariants. An `err` is a plain value owned by the caller; it holds no heap memory.
 */
#ifndef LLM170_BASE_ERR_H
#define LLM170_BASE_ERR_H

#include <stddef.h>

enum err_code {
    ERR_OK = 0,
    ERR_IO = -1,       /* open/read/mmap/write failed */
    ERR_FORMAT = -2,   /* the input is malformed */
    ERR_UNSUPPORTED = -3, /* well-formed but not something we handle (name it, list what is) */
    ERR_RANGE = -4,    /* a value or size is outside its documented cap */
    ERR_NOMEM = -5,    /* an allocation failed */
    ERR_ARG = -6,      /* a caller/user argument is invalid */
    ERR_NOTFOUND = -7, /* a key, tensor or file is missing */
};

typedef struct err {
    int code;
    char msg[512];
} err;

/* Sets e->code and e->msg (printf-style) and returns code, so `return err_set(e, ERR_FORMAT, ...)`.
 * e may be NULL. */
int err_set(err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an error's message (adds context while unwinding). Returns e->code. */
int err_wrap(err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A short name for an error code ("format", "io", ...). */
const char *err_code_name(int code);

#endif
