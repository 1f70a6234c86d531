/* The parts of ggml's ABI the engine relies on, declared here so that libggprof.so never links ggml. */
#ifndef GGPROF_GGML_ABI_H
#define GGPROF_GGML_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* struct ggml_tensor as in ggml 0.23 (llama.cpp v0.4.0). ggprof_abi_check() verifies this layout against
 * the running ggml with a probe tensor before the engine reads any field; enum values are never assumed
 * but learned from probe graphs, since they move between ggml versions. */
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
    struct ggml_tensor *src[GGML_ABI_MAX_SRC];
    struct ggml_tensor *view_src;
    size_t  view_offs;
    void   *data;
    char    name[GGML_ABI_MAX_NAME];
    void   *extra;
    char    padding[8];
};

/* Flags and constants that are part of the published ggml.h contract. */
#define GGML_ABI_FLAG_OUTPUT  2
#define GGML_ABI_FLAG_COMPUTE 16
#define GGML_ABI_TYPE_F32     0
#define GGML_ABI_DEV_CPU      0
#define GGML_ABI_DEV_ACCEL    3

struct ggml_cgraph;
struct ggml_context;
struct ggml_cplan;
struct ggml_threadpool;
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

/* The ggml functions the engine calls (resolved at run time from the ggml the program loaded). */
#define GGPROF_GGML_FUNCS(X)                                                                                   \
    X(const char *, ggml_version, (void))                                                                     \
    X(const char *, ggml_commit, (void))                                                                      \
    X(size_t, ggml_tensor_overhead, (void))                                                                   \
    X(struct ggml_context *, ggml_init, (struct ggml_init_params))                                            \
    X(void, ggml_free, (struct ggml_context *))                                                               \
    X(struct ggml_tensor *, ggml_new_tensor_2d, (struct ggml_context *, int32_t, int64_t, int64_t))           \
    X(struct ggml_tensor *, ggml_set_name, (struct ggml_tensor *, const char *))                              \
    X(void, ggml_set_output, (struct ggml_tensor *))                                                          \
    X(struct ggml_tensor *, ggml_add, (struct ggml_context *, struct ggml_tensor *, struct ggml_tensor *))    \
    X(struct ggml_tensor *, ggml_mul, (struct ggml_context *, struct ggml_tensor *, struct ggml_tensor *))    \
    X(struct ggml_tensor *, ggml_rms_norm, (struct ggml_context *, struct ggml_tensor *, float))              \
    X(struct ggml_tensor *, ggml_reshape_2d, (struct ggml_context *, struct ggml_tensor *, int64_t, int64_t)) \
    X(struct ggml_tensor *, ggml_view_1d, (struct ggml_context *, struct ggml_tensor *, int64_t, size_t))     \
    X(struct ggml_tensor *, ggml_permute, (struct ggml_context *, struct ggml_tensor *, int, int, int, int))  \
    X(struct ggml_tensor *, ggml_transpose, (struct ggml_context *, struct ggml_tensor *))                    \
    X(struct ggml_tensor *, ggml_relu, (struct ggml_context *, struct ggml_tensor *))                         \
    X(struct ggml_tensor *, ggml_swiglu, (struct ggml_context *, struct ggml_tensor *))                       \
    X(const char *, ggml_op_name, (int32_t))                                                                  \
    X(const char *, ggml_unary_op_name, (int32_t))                                                            \
    X(const char *, ggml_glu_op_name, (int32_t))                                                              \
    X(const char *, ggml_type_name, (int32_t))                                                                \
    X(size_t, ggml_type_size, (int32_t))                                                                      \
    X(int64_t, ggml_blck_size, (int32_t))                                                                     \
    X(size_t, ggml_nbytes, (const struct ggml_tensor *))                                                      \
    X(int, ggml_graph_n_nodes, (struct ggml_cgraph *))                                                        \
    X(struct ggml_tensor **, ggml_graph_nodes, (struct ggml_cgraph *))                                        \
    X(const char *, ggml_backend_name, (ggml_backend_t))                                                      \
    X(ggml_backend_dev_t, ggml_backend_get_device, (ggml_backend_t))                                          \
    X(const char *, ggml_backend_dev_name, (ggml_backend_dev_t))                                              \
    X(const char *, ggml_backend_dev_description, (ggml_backend_dev_t))                                       \
    X(int, ggml_backend_dev_type, (ggml_backend_dev_t))                                                       \
    X(ggml_backend_reg_t, ggml_backend_dev_backend_reg, (ggml_backend_dev_t))                                 \
    X(bool, ggml_backend_buffer_is_host, (ggml_backend_buffer_t))                                             \
    X(int, ggml_backend_sched_get_n_backends, (ggml_backend_sched_t))                                         \
    X(ggml_backend_t, ggml_backend_sched_get_backend, (ggml_backend_sched_t, int))                            \
    X(int, ggml_backend_sched_get_n_splits, (ggml_backend_sched_t))                                           \
    X(void, ggml_backend_synchronize, (ggml_backend_t))                                                       \
    X(ggml_cgraph_view_buf, ggml_graph_view, (struct ggml_cgraph *, int, int))

#endif
