/* backend: the executor's error record and the device registry (which devices this build has). */
#include "backends/backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int exec_fail(exec *x, int code, const char *fmt, ...) {
    if (x->status) return x->status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->msg, sizeof x->msg, fmt, ap);
    va_end(ap);
    x->status = code ? code : ERR_NOMEM;
    return x->status;
}

int exec_status(exec *x, err *e) {
    int rc = x->status;
    if (!rc) return 0;
    err_set(e, rc, "%s (%s executor)", x->msg, x->dev->name);
    x->status = 0;
    x->msg[0] = 0;
    return rc;
}

const char *backend_devices(void) { return "cpu"; }

enum qtype backend_default_cache_type(const backend *b) {
    (void)b; /* cpu: f32 (backend.h says why) */
    return QT_F32;
}

bool backend_cache_type_ok(const backend *b, enum qtype t, int64_t D) {
    (void)b; /* every device of this build takes these */
    if (t == QT_F32 || t == QT_F16 || t == QT_BF16) return true;
    return t == QT_Q8_0 && D % 32 == 0;
}

backend *backend_open(const char *device, int n_threads, bool exact, err *e) {
    if (!device || !*device || !strcmp(device, "cpu")) return cpu_backend_new(n_threads, exact, e);
    err_set(e, ERR_UNSUPPORTED, "device '%s' is not available: this build has %s", device, backend_devices());
    return NULL;
}
