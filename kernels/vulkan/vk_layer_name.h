/* The name and file of ggprof's Vulkan layer, shared by the hook in libggprof.so and the Makefile's manifest. */
#ifndef GGPROF_VK_LAYER_NAME_H
#define GGPROF_VK_LAYER_NAME_H

/* Keep in step with the manifest rule in the Makefile (it writes build/lib/vulkan/ggprof_layer.json). */
#define GGPROF_VK_LAYER_NAME "VK_LAYER_GGPROF_timestamps"
#define GGPROF_VK_LAYER_LIB  "libggprof-vulkan.so"

#endif
