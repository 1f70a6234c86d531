/* libggprof.so's side of CUDA kernel timing: asks the CUDA driver to load libggprof-cupti.so, and lends it the sink. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device_api.h"
#include "engine.h"
#include "self_path.h"

/* Why the driver loads the CUPTI library, and not a wrapper of ours: CUDA programs reach the driver through
 * tables, not through the PLT. The runtime (static by default with nvcc, and inside cuBLAS) opens libcuda
 * with dlopen and takes every entry point from cuGetProcAddress, so an LD_PRELOAD definition of cuInit never
 * sees them. The driver itself, in cuInit, loads the library named by CUDA_INJECTION64_PATH and calls its
 * InitializeInjection: NVIDIA's own way in for tools (Nsight Systems, CUPTI's samples), before any context
 * exists, whoever called cuInit. So libggprof.so names libggprof-cupti.so there when it is loaded, and the
 * CUPTI library (and libcupti) is loaded only when, and if, the program starts using CUDA. The variable is
 * read by the driver, which comes later: setting it from a constructor is in time. */

static const ggprof_device_api k_api = {
    GGPROF_DEVICE_API_VERSION, sizeof(ggprof_device_api), ggprof_device_ready, ggprof_current_place, ggprof_emit,
    ggprof_note,
};

GGPROF_API const ggprof_device_api *ggprof_device_api_v1(void) { return &k_api; }

__attribute__((constructor)) static void cuda_hook_init(void) {
    const char *ring = getenv("GGPROF_RING");
    const char *off  = getenv("GGPROF_CUDA");
    if (!ring || !*ring || (off && strcmp(off, "0") == 0)) return; /* not recording, or asked not to */
    char self[PATH_MAX], path[PATH_MAX + 32];
    if (ggprof_self_dir((const void *) cuda_hook_init, self, sizeof(self)) != 0) return;
    snprintf(path, sizeof(path), "%s/%s", self, GGPROF_CUPTI_LIB_NAME);
    if (access(path, R_OK) != 0) return; /* built without CUDA: nothing to load, nothing to say */
    const char *cur = getenv("CUDA_INJECTION64_PATH");
    if (cur && *cur && strcmp(cur, path) != 0) {
        /* The driver loads one injection library, and CUPTI takes one subscriber: the other tool keeps it. */
        fprintf(stderr, "ggprof: cuda: kernel timing off: CUDA_INJECTION64_PATH is already set to %s\n", cur);
        return;
    }
    setenv("CUDA_INJECTION64_PATH", path, 1);
}
