/* cuda_backend: the CUDA device of backends/backend.h ("cuda", "cuda:N"), in the llm170cuda library.
 * Plain C with no CUDA headers, so the CLI can include it. The core library does not link the CUDA
 * backend: a program that wants it calls cuda_backend_register once at start-up, after which
 * backend_open("cuda:N") and backend_devices() know it. */
#ifndef LLM170_BACKENDS_CUDA_CUDA_BACKEND_H
#define LLM170_BACKENDS_CUDA_CUDA_BACKEND_H

#include "backends/backend.h"

/* The device: "cuda" (device 0) or "cuda:N". NULL with a message (listing the devices) when there is no
 * such GPU. The backend and everything it allocated is freed by backend_free. */
backend *cuda_backend_new(const char *device, err *e);
/* Registers the CUDA devices with backend_open / backend_devices. */
void cuda_backend_register(void);

#endif
