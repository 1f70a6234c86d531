/* The parts of ggml's ABI the engine relies on, declared here so that libggprof.so never links ggml. */
#ifndef GGPROF_GGML_ABI_H
#define GGPROF_GGML_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* struct ggml_tensor, in two parts. Its head (type to flags) has had the same layout in every ggml since
 * October 2024 (the deprecated `backend` enum of older releases sits in the padding after `type`). What follows
 * the flags moved: releases up to about November 2024 (llama.cpp b3889) keep a `grad` pointer there, later ones
 * do not. The engine reads the second part, the links, at an offset learned from probe tensors
 * (ggprof_tensor_links, engine.h), never assumed; enum values are learned from probe graphs too. */
#define GGML_ABI_MAX_DIMS      4
#define GGML_ABI_MAX_SRC       10
#define GGML_ABI_MAX_OP_PARAMS 64
#define GGML_ABI_MAX_NAME      64

struct ggml_tensor {
    int32_t type;
    void   *buffer;
    int64_t ne[GGML_ABI_MAX_DIMS];
    size_t  nb[GGML_ABI_MAX_DIMS];
    int32_t op;
    int32_t op_params[GGML_ABI_MAX_OP_PARAMS / sizeof(int32_t)];
    int32_t flags;
};

struct ggml_tensor_links {
    struct ggml_tensor *src[GGML_ABI_MAX_SRC];
    struct ggml_tensor *view_src;
    size_t  view_offs;
    void   *data;
    char    name[GGML_ABI_MAX_NAME];
    void   *extra;
};

/* The links of tensor t in a ggml that keeps them links_off bytes in. */
static inline const struct ggml_tensor_links *ggml_abi_links(const struct ggml_tensor *t, size_t links_off) {
    return (const struct ggml_tensor_links *) ((const char *) t + links_off);
}

/* Where the links begin in the ggml 0.23 layout, and the most a tensor of any known release takes. */
#define GGML_ABI_LINKS_OFFSET ((sizeof(struct ggml_tensor) + 7) & ~(size_t) 7)
#define GGML_ABI_TENSOR_MAX   (GGML_ABI_LINKS_OFFSET + 8 + sizeof(struct ggml_tensor_links) + 8)

/* Flags and constants that are part of the published ggml.h contract (GGML_TENSOR_FLAG_COMPUTE since 2025). */
#define GGML_ABI_FLAG_INPUT   1
#define GGML_ABI_FLAG_OUTPUT  2
#define GGML_ABI_FLAG_COMPUTE 16
#define GGML_ABI_TYPE_F32     0
#define GGML_ABI_BUFFER_USAGE_WEIGHTS 1 /* enum ggml_backend_buffer_usage: ANY 0, WEIGHTS 1, COMPUTE 2 */
#define GGML_ABI_DEV_CPU      0
#define GGML_ABI_DEV_ACCEL    3

struct ggml_cgraph;
struct ggml_context;
struct ggml_cplan;
struct ggml_threadpool;
struct ggml_gallocr;
typedef struct ggml_backend        *ggml_backend_t;
typedef struct ggml_backend_sched  *ggml_backend_sched_t;
typedef struct ggml_backend_reg    *ggml_backend_reg_t;
typedef struct ggml_backend_device *ggml_backend_dev_t;
typedef struct ggml_backend_buffer *ggml_backend_buffer_t;
typedef struct ggml_backend_buffer_type *ggml_backend_buffer_type_t;
typedef bool (*ggml_abort_callback)(void *data);

enum ggml_status {
    GGML_STATUS_ALLOC_FAILED = -2,
    GGML_STATUS_FAILED       = -1,
    GGML_STATUS_SUCCESS      = 0,
    GGML_STATUS_ABORTED      = 1,
};

/* struct ggml_cgraph (private in ggml 0.23), mirrored only to receive ggml_graph_view's result: the buffer is
 * padded so that a larger struct in another version cannot overflow it, and the result is checked against
 * ggml_graph_n_nodes/ggml_graph_nodes before use. */
struct ggml_cgraph_abi {
    int      size, n_nodes, n_leafs;
    void   **nodes, **grads, **grad_accs, **leafs;
    int32_t *use_counts;
    struct {
        size_t size;
        void  *used;
        void **keys;
    } visited_hash_set;
    int      order;
    uint64_t uid;
};
typedef union {
    struct ggml_cgraph_abi g;
    char                   pad[512];
} ggml_cgraph_view_buf;

struct ggml_init_params {
    size_t mem_size;
    void  *mem_buffer;
    bool   no_alloc;
};

/* The ggml functions the engine calls (resolved at run time from the ggml the program loaded). The last column
 * says what a missing one turns off: NULL, the engine (profiling off, the program runs as it would); otherwise
 * that feature only, with a note naming the function and the feature. */
#define GGML_NEEDED NULL
/* Absent (inlined away in an LTO build), the engine does without: graph nodes read from struct ggml_cgraph_abi, a
 * scheduler's backends from struct ggml_backend_sched's head (both checked before use), ggml_new_graph as
 * ggml_new_graph_custom with ggml's default size. */
#define GGML_FROM_LAYOUT "(the engine does without)"
#define GGPROF_GGML_FUNCS(X)                                                                                   \
    X(const char *, ggml_version, (void), "the ggml version")         \
    X(const char *, ggml_commit, (void), "the ggml commit")                                      \
    X(size_t, ggml_tensor_overhead, (void), GGML_NEEDED)                                                      \
    X(struct ggml_context *, ggml_init, (struct ggml_init_params), GGML_NEEDED)                               \
    X(void, ggml_free, (struct ggml_context *), GGML_NEEDED)                                                  \
    X(struct ggml_tensor *, ggml_new_tensor_2d, (struct ggml_context *, int32_t, int64_t, int64_t), GGML_NEEDED) \
    X(struct ggml_tensor *, ggml_set_name, (struct ggml_tensor *, const char *), GGML_NEEDED)                 \
    X(void, ggml_set_output, (struct ggml_tensor *), GGML_NEEDED)                                             \
    X(struct ggml_tensor *, ggml_add, (struct ggml_context *, struct ggml_tensor *, struct ggml_tensor *), GGML_NEEDED) \
    X(struct ggml_tensor *, ggml_mul, (struct ggml_context *, struct ggml_tensor *, struct ggml_tensor *), GGML_NEEDED) \
    X(struct ggml_tensor *, ggml_rms_norm, (struct ggml_context *, struct ggml_tensor *, float), GGML_NEEDED) \
    X(struct ggml_tensor *, ggml_reshape_2d, (struct ggml_context *, struct ggml_tensor *, int64_t, int64_t), GGML_NEEDED) \
    X(struct ggml_tensor *, ggml_view_1d, (struct ggml_context *, struct ggml_tensor *, int64_t, size_t), GGML_NEEDED) \
    X(struct ggml_tensor *, ggml_permute, (struct ggml_context *, struct ggml_tensor *, int, int, int, int), GGML_NEEDED) \
    X(struct ggml_tensor *, ggml_transpose, (struct ggml_context *, struct ggml_tensor *), GGML_NEEDED)      \
    X(struct ggml_tensor *, ggml_relu, (struct ggml_context *, struct ggml_tensor *), GGML_NEEDED)           \
    X(struct ggml_tensor *, ggml_swiglu, (struct ggml_context *, struct ggml_tensor *), "GLU sub-op names")  \
    X(struct ggml_cgraph *, ggml_new_graph, (struct ggml_context *), GGML_FROM_LAYOUT)                        \
    X(struct ggml_cgraph *, ggml_new_graph_custom, (struct ggml_context *, size_t, bool), GGML_FROM_LAYOUT)  \
    X(void, ggml_build_forward_expand, (struct ggml_cgraph *, struct ggml_tensor *), GGML_NEEDED)            \
    X(const char *, ggml_op_name, (int32_t), GGML_NEEDED)                                                     \
    X(const char *, ggml_unary_op_name, (int32_t), "unary sub-op names")                                    \
    X(const char *, ggml_glu_op_name, (int32_t), "GLU sub-op names")                                          \
    X(const char *, ggml_type_name, (int32_t), GGML_NEEDED)                                                   \
    X(size_t, ggml_type_size, (int32_t), GGML_NEEDED)                                                         \
    X(int64_t, ggml_blck_size, (int32_t), GGML_NEEDED)                                                        \
    X(size_t, ggml_nbytes, (const struct ggml_tensor *), GGML_NEEDED)                                         \
    X(int, ggml_graph_n_nodes, (struct ggml_cgraph *), GGML_NEEDED)                                           \
    X(struct ggml_tensor **, ggml_graph_nodes, (struct ggml_cgraph *), GGML_FROM_LAYOUT)                      \
    X(const char *, ggml_backend_name, (ggml_backend_t), GGML_NEEDED)                                         \
    X(ggml_backend_dev_t, ggml_backend_get_device, (ggml_backend_t), GGML_NEEDED)                             \
    X(const char *, ggml_backend_dev_name, (ggml_backend_dev_t), GGML_NEEDED)                                 \
    X(const char *, ggml_backend_dev_description, (ggml_backend_dev_t), GGML_NEEDED)                          \
    X(int, ggml_backend_dev_type, (ggml_backend_dev_t), GGML_NEEDED)                                          \
    X(ggml_backend_reg_t, ggml_backend_dev_backend_reg, (ggml_backend_dev_t), "abort-callback setters by registry") \
    X(void *, ggml_backend_reg_get_proc_address, (ggml_backend_reg_t, const char *), "abort-callback setters by registry") \
    X(bool, ggml_backend_buffer_is_host, (ggml_backend_buffer_t), GGML_NEEDED)                                \
    X(int, ggml_backend_sched_get_n_backends, (ggml_backend_sched_t), GGML_FROM_LAYOUT)                      \
    X(ggml_backend_t, ggml_backend_sched_get_backend, (ggml_backend_sched_t, int), GGML_FROM_LAYOUT)         \
    X(int, ggml_backend_sched_get_n_splits, (ggml_backend_sched_t), GGML_NEEDED)                              \
    X(void, ggml_backend_synchronize, (ggml_backend_t), "node-by-node timing of BLAS and GPU backends")      \
    X(ggml_cgraph_view_buf, ggml_graph_view, (struct ggml_cgraph *, int, int),                                \
      "node-by-node timing of BLAS and GPU backends")                                                          \
    X(size_t, ggml_backend_buffer_get_size, (ggml_backend_buffer_t), "memory records")                         \
    X(void *, ggml_backend_buffer_get_base, (ggml_backend_buffer_t), "memory records")                         \
    X(size_t, ggml_backend_buffer_get_alignment, (ggml_backend_buffer_t), "memory records")                    \
    X(int, ggml_backend_buffer_get_usage, (ggml_backend_buffer_t), "memory records")                           \
    X(ggml_backend_buffer_type_t, ggml_backend_buffer_get_type, (ggml_backend_buffer_t), "memory records")     \
    X(const char *, ggml_backend_buft_name, (ggml_backend_buffer_type_t), "memory records")                    \
    X(ggml_backend_dev_t, ggml_backend_buft_get_device, (ggml_backend_buffer_type_t), "buffers' devices")      \
    X(size_t, ggml_backend_buffer_get_alloc_size, (ggml_backend_buffer_t, const struct ggml_tensor *),         \
      "tensor placement")                                                                                      \
    X(bool, ggml_gallocr_alloc_graph, (struct ggml_gallocr *, struct ggml_cgraph *), "tensor placement")      \
    X(void, ggml_backend_dev_memory, (ggml_backend_dev_t, size_t *, size_t *), "device memory")              \
    X(ggml_backend_t, ggml_backend_sched_get_tensor_backend, (ggml_backend_sched_t, struct ggml_tensor *),    \
      "node placement")                                                                                        \
    X(bool, ggml_backend_supports_op, (ggml_backend_t, const struct ggml_tensor *), "node placement reasons")

#endif
