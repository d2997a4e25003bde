/* Backend conformance on every device this build's core has (backend_devices(): the CPU; the CUDA backend
 * is registered only by the CLI, whose `llm170 cuda-check --engine` runs the same suite on a GPU). The
 * suite and its tolerances: src/backends/conformance.c. */
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/conformance.h"
#include "check.h"

int main(void) {
    char list[256];
    snprintf(list, sizeof list, "%s", backend_devices());
    for (char *s = strtok(list, ", "); s; s = strtok(NULL, ", ")) {
        int n = 0, bad = backend_conformance(s, &n);
        CHECKF(bad == 0, "%s: %d of %d conformance checks failed", s, bad, n);
        CHECKF(n > 100, "%s: only %d conformance checks ran", s, n);
    }
    return check_report("test_backend_conformance");
}
