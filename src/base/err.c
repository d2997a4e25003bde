#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(err *e, int code, const char *fmt, ...) {
    if (!e) return code;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return code;
}

int err_wrap(err *e, const char *fmt, ...) {
    if (!e) return ERR_ARG;
    char prefix[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[sizeof e->msg];
    memcpy(old, e->msg, sizeof old);
    size_t n = strlen(prefix);
    if (n > sizeof e->msg - 3) n = sizeof e->msg - 3;
    memcpy(e->msg, prefix, n);
    memcpy(e->msg + n, ": ", 2);
    size_t room = sizeof e->msg - n - 3, m = strnlen(old, sizeof old);
    if (m > room) m = room;
    memcpy(e->msg + n + 2, old, m);
    e->msg[n + 2 + m] = 0;
    return e->code;
}

const char *err_code_name(int code) {
    switch (code) {
    case ERR_OK: return "ok";
    case ERR_IO: return "io";
    case ERR_FORMAT: return "format";
    case ERR_UNSUPPORTED: return "unsupported";
    case ERR_RANGE: return "range";
    case ERR_NOMEM: return "out of memory";
    case ERR_ARG: return "argument";
    case ERR_NOTFOUND: return "not found";
    }
    return "unknown";
}
