/* libggprof.so's side of Vulkan dispatch timing: enables the ggprof Vulkan layer when the program is recorded. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "self_path.h"
#include "vk_layer_name.h"

/* Why a layer, enabled through the environment: a Vulkan program reaches the driver through the loader's
 * dispatch tables (ggml-vulkan through vulkan.hpp's dynamic dispatcher), so an LD_PRELOAD definition of
 * vkCmdDispatch never sees the calls. The loader itself puts the layers named by VK_INSTANCE_LAYERS, found in
 * VK_LAYER_PATH, between the program and the driver, for every instance created later. Both are read in
 * vkCreateInstance, after this constructor: setting them here is in time. The layer (vk_layer.c) loads only
 * into programs started by `ggprof record` (GGPROF_RING), and where the build made it (vulkan/vk_layer.h). */
__attribute__((constructor)) static void vulkan_hook_init(void) {
    const char *ring = getenv("GGPROF_RING");
    const char *off  = getenv("GGPROF_VULKAN");
    if (!ring || !*ring || (off && strcmp(off, "0") == 0)) return; /* not recording, or asked not to */
    char self[PATH_MAX], dir[PATH_MAX + 8], lib[PATH_MAX + 32];
    if (ggprof_self_dir((const void *) vulkan_hook_init, self, sizeof(self)) != 0) return;
    snprintf(dir, sizeof(dir), "%s/vulkan", self);
    snprintf(lib, sizeof(lib), "%s/%s", self, GGPROF_VK_LAYER_LIB);
    if (access(lib, R_OK) != 0 || access(dir, R_OK) != 0) return; /* built without Vulkan headers */

    /* Prepended to the user's VK_LAYER_PATH (a search path: their layers stay findable), appended to their
     * VK_INSTANCE_LAYERS (an ordered list: their choice of layers and order stays). Never twice, so that a
     * recorded program that starts another one does not grow the variables. */
    const char *path = getenv("VK_LAYER_PATH");
    if (!path || !*path) {
        setenv("VK_LAYER_PATH", dir, 1);
    } else if (!strstr(path, dir)) {
        size_t n = strlen(dir) + strlen(path) + 2;
        char  *v = malloc(n);
        if (!v) return;
        snprintf(v, n, "%s:%s", dir, path);
        setenv("VK_LAYER_PATH", v, 1);
        free(v);
    }
    /* Kernel names: ggml-vulkan names its pipelines (mul_mat_vec_f16_f32_f32, rms_norm_mul_f32) through
     * VK_EXT_debug_utils only when GGML_VK_DEBUG_MARKERS is set; the cost is one name per pipeline when it is
     * created and one queue label per graph. GGPROF_VULKAN_NAMES=0 leaves the program's environment as it was. */
    const char *names = getenv("GGPROF_VULKAN_NAMES");
    if (!(names && strcmp(names, "0") == 0)) setenv("GGML_VK_DEBUG_MARKERS", "1", 0);
    const char *layers = getenv("VK_INSTANCE_LAYERS");
    if (!layers || !*layers) {
        setenv("VK_INSTANCE_LAYERS", GGPROF_VK_LAYER_NAME, 1);
    } else if (!strstr(layers, GGPROF_VK_LAYER_NAME)) {
        size_t n = strlen(layers) + strlen(GGPROF_VK_LAYER_NAME) + 2;
        char  *v = malloc(n);
        if (!v) return;
        snprintf(v, n, "%s:%s", layers, GGPROF_VK_LAYER_NAME);
        setenv("VK_INSTANCE_LAYERS", v, 1);
        free(v);
    }
}
