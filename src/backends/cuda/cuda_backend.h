/* cuda_backend: the CUDA device of backends/backend.h ("cuda", "cuda:N"), in the llm170cuda library.
 * Plain C with no CUDA headers, so the CLI can include it. The core library does not link the CUDA
 * backend: a program that wants it calls cuda_backend_register once at start-up, after which
 * backend_open("cuda:N") and backend_devices() know it. */
#ifndef LLM170_BACKENDS_CUDA_CUDA_BACKEND_H
#define LLM170_BACKENDS_CUDA_CUDA_BACKEND_H

#include "backends/backend.h"

/* The device: "cuda" (device 0) or "cuda:N", with ":nograph" appended ("cuda:0:nograph") to run every pass
 * eagerly, each op its own launch, instead of capturing small passes into CUDA graphs (for comparison:
 * same kernels, same order, the same bits). NULL with a message (listing the devices) when there is no
 * such GPU. The backend and everything it allocated is freed by backend_free. */
backend *cuda_backend_new(const char *device, err *e);
/* Registers the CUDA devices with backend_open / backend_devices. */
void cuda_backend_register(void);

/* Process-wide counts of the CUDA executors' graphs since start (docs/cuda.md): passes launched as one
 * graph, of which updated in place or instantiated anew, and captures given up for an eager run (an upload
 * too big for the staging buffer, a capture the driver refused to begin). */
typedef struct cuda_graph_stats {
    uint64_t launched, updated, instantiated, eager;
    uint64_t passes; /* passes run as graphs (each launched in one or more pieces: `launched` counts pieces) */
    /* host time capturing passes (their ops' launch calls) and updating / instantiating execs; GPU time of
     * the graphs (events around each launch) over gpu_timed launches */
    uint64_t capture_ns, update_ns, gpu_ns, gpu_timed;
} cuda_graph_stats;
void cuda_graph_stats_get(cuda_graph_stats *s);

#endif
