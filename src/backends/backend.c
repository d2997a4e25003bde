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

#define MAX_PROVIDERS 4
static const backend_provider *providers[MAX_PROVIDERS];
static int n_providers;

void backend_register(const backend_provider *p) {
    for (int i = 0; i < n_providers; i++)
        if (providers[i] == p) return;
    if (n_providers < MAX_PROVIDERS) providers[n_providers++] = p;
}

const char *backend_devices(void) {
    static char list[512];
    int o = snprintf(list, sizeof list, "cpu");
    for (int i = 0; i < n_providers && o < (int)sizeof list; i++) {
        const char *l = providers[i]->list();
        if (l && *l) o += snprintf(list + o, sizeof list - (size_t)o, ",%s", l);
    }
    return list;
}

enum qtype backend_default_cache_type(const backend *b) {
    if (b && b->ops->default_cache_type) return b->ops->default_cache_type(b);
    return QT_F32; /* cpu: f32 (backend.h says why) */
}

bool backend_cache_type_ok(const backend *b, enum qtype t, int64_t D) {
    if (b && b->ops->cache_type_ok) return b->ops->cache_type_ok(b, t, D);
    if (t == QT_F32 || t == QT_F16 || t == QT_BF16) return true;
    return t == QT_Q8_0 && D % 32 == 0;
}

backend *backend_open(const char *device, int n_threads, bool exact, err *e) {
    if (!device || !*device || !strcmp(device, "cpu")) return cpu_backend_new(n_threads, exact, e);
    for (int i = 0; i < n_providers; i++) {
        const size_t n = strlen(providers[i]->prefix);
        if (!strncmp(device, providers[i]->prefix, n) && (device[n] == 0 || device[n] == ':'))
            return providers[i]->open(device, n_threads, exact, e);
    }
    if (!strncmp(device, "cuda", 4))
        err_set(e, ERR_UNSUPPORTED,
                "device '%s' is not available: this build has no CUDA backend (configure with -DLLM170_CUDA=ON where "
                "nvcc is found); devices: %s",
                device, backend_devices());
    else
        err_set(e, ERR_UNSUPPORTED, "device '%s' is not available: this build has %s", device, backend_devices());
    return NULL;
}
