/* The engine's interface for kernels/: what they use of libggprof.so (its state, emitting, notes, descriptions,
 * resolving). What only the engine's own files share is in internal.h. */
#ifndef GGPROF_ENGINE_H
#define GGPROF_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "clock_map.h"
#include "device_api.h"
#include "ggml_abi.h"
#include "wire.h"

/* One ggml found in the process: its functions and the enum values learned from probe graphs. Each function of
 * GGPROF_GGML_FUNCS is the member fn_<name> (g->fn_ggml_init): the name alone is ggml's function, or the engine's
 * wrapper of it, and real_<name> a wrapper's resolved function (REAL, below), never this pointer. */
typedef struct {
#define X(ret, name, args, feature) ret(*fn_##name) args;
    GGPROF_GGML_FUNCS(X)
#undef X
    struct {
        int32_t none, add, mul, rms_norm, reshape, view, permute, transpose, unary, glu;
    } op;
    size_t links_off; /* where struct ggml_tensor_links begins in this ggml's tensors (ggml_abi.h) */
    bool ok;       /* layout verified and every required function found */
    bool graph_view_ok; /* ggml_graph_view understood: non-CPU backends can be timed node by node */
    bool has_compute_flag; /* graphs flag the nodes to compute (GGML_TENSOR_FLAG_COMPUTE, ggml 2025 on) */
    char lib[256]; /* path of libggml-base, or of the program or library that has ggml inside */
    uintptr_t bias; /* where lib is loaded */
    bool lib_is_main; /* lib is the executable (dlsym cannot be asked about it) */
} ggprof_ggml;

/* Moves with every wrapped ggml call that can change a graph's nodes or their metadata: building, renaming,
 * flagging, splitting (the sink keeps it, interpose.c and memory.c bump it: ggprof_graph_changed, internal.h). What
 * the engine learned from walking a split's nodes holds while it stays put (kernels/cpu's split plans). */
extern _Atomic uint32_t ggprof_graph_gen;
static inline uint32_t ggprof_graph_gen_now(void) { return atomic_load_explicit(&ggprof_graph_gen, memory_order_acquire); }

/* Process-wide engine state. */
typedef struct {
    /* Read by every wrapper, before the set-up's pthread_once too: atomic (loads are plain moves on x86-64). */
    _Atomic bool enabled;  /* a ring is attached (or the in-process profile is on) and ggml passed the check */
    _Atomic bool broken;   /* turned off for good, with a note printed once */
    int      level;        /* enum ggprof_level */
    bool     cpu_fusion;   /* the CPU backend fuses RMS_NORM+MUL (GGML_CPU_DISABLE_FUSION unset) */
    bool     serialize_gpu;/* time GPU backends node by node too (record --serialize), not only ACCEL ones */
    bool     device_nodes; /* join device kernels to graph nodes (GGPROF_DEVICE_NODES=0: to splits only) */
    bool     alternate;    /* half the scheduler graphs at level graph (record --alternate, ggprof_alternate_full) */
    uint32_t sample;       /* record --sample N: one scheduler graph in N at the level, the rest at level graph */
    int32_t  pid;
    ggprof_ggml g;
} ggprof_engine;

extern ggprof_engine ggprof_eng;

/* The part of a tensor after its flags (sources, view, name), where this ggml keeps it. */
static inline const struct ggml_tensor_links *ggprof_links(const struct ggml_tensor *t) {
    return ggml_abi_links(t, ggprof_eng.g.links_off);
}

/* Whether the CPU backend's abort callback should carry the tick now: a recording at level op. Needs no
 * ggml, so it can be asked before the engine has found it. */
bool ggprof_ticks_wanted(void);

/* For producers that do not need ggml (device kernel tracing): attaches the sink and describes the process
 * once. Returns true when records can be written. */
bool ggprof_device_ready(void);

/* A function of the ggml found (its library's dynamic symbols, else the symbol table of the program or library
 * that has ggml inside), NULL when absent (probe.c). */
void *ggprof_ggml_sym(const ggprof_ggml *g, const char *name);

/* Where the calling thread is (ggprof_place, device_api.h). */
bool ggprof_current_place(ggprof_place *out);

/* Resolves the definition of `name` that the caller would have reached without us. */
void *ggprof_resolve_real(const char *name, const void *caller, const void *self);
/* A wrapper whose real function exists nowhere (the program called what no loaded library defines): abort. */
_Noreturn void ggprof_missing_real(const char *name);

/* In every wrapper: real_<fn>, the function it stands in for, found from its caller's library once. REAL_FROM takes
 * a slot of the file's own: a wrapper whose function may be patched (reach.h) forwards to the trampoline put there. */
#define REAL_FROM(slot, fn)                                                                                    \
    __typeof__(&fn) real_##fn = (__typeof__(&fn)) atomic_load_explicit(&slot, memory_order_acquire);           \
    if (!real_##fn) {                                                                                          \
        real_##fn = (__typeof__(&fn)) ggprof_resolve_real(#fn, __builtin_return_address(0), (void *) fn);      \
        if (!real_##fn) ggprof_missing_real(#fn);                                                              \
        atomic_store_explicit(&slot, (void *) real_##fn, memory_order_release);                               \
    }
#define REAL(fn)                                                                                               \
    static void *_Atomic real_##fn##_slot;                                                                     \
    REAL_FROM(real_##fn##_slot, fn)

/* Emitters: each writes one message to the calling thread's ring slot; 0 if written, -1 if dropped. */
int      ggprof_emit(const ggprof_msg_hdr *msg);
/* A message built in place, in the calling thread's slot (no copy): room for size bytes of that kind, or NULL (then
 * build it elsewhere and hand it to ggprof_emit, which writes, drops and counts, or leaves it out as it would have);
 * ggprof_emit_commit publishes it, whole and with its header, before this thread emits anything else. */
void    *ggprof_emit_reserve(uint32_t size, uint16_t kind);
void     ggprof_emit_commit(uint32_t size);
/* Whether a ring exists at all (it may exist when GGML_PROFILE's start failed after creating it): without one, a
 * message goes nowhere. */
bool     ggprof_sink_has_ring(void);
/* Counts msg as dropped, as ggprof_emit does when the ring has no room, without writing it (its records would name
 * what did not reach the ring); nothing where there is no ring. */
void     ggprof_emit_dropped(const ggprof_msg_hdr *msg);
/* The process's first graph begins: tells the collector (ggprof_ring_began). */
void     ggprof_emit_began(void);
/* A node's description sent once (describe.c; ggprof_node_id, internal.h, in one step), in two steps, for callers that remember ids by a node's place in its graph: the key of the node's
 * description, and its id. *kept says whether the id may be remembered (its description reached the trace);
 * remembered ids hold only while ggprof_desc_epoch() returns the value it had when they were given. */
uint64_t ggprof_node_key(const struct ggml_tensor *t, int is_copy);
uint32_t ggprof_node_id_keyed(const struct ggml_tensor *t, uint64_t key, bool *kept);
uint32_t ggprof_desc_epoch(void);
void     ggprof_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));       /* stderr and the trace */
void     ggprof_trace_note(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* the trace only */

/* Thread-local recursion guard: engine code that calls back into ggml never records itself. Taken only through
 * GGPROF_GUARD, which holds it to the end of the enclosing block, however the block is left (heaptrack's
 * RecursionGuard, as a C cleanup); read as !ggprof_busy. */
extern __thread int ggprof_busy;
static inline int  ggprof_guard_take(void) { return ggprof_busy++; }
static inline void ggprof_guard_drop(int *taken) { (void) taken, ggprof_busy--; }
#define GGPROF_GUARD int ggprof_guard_ __attribute__((cleanup(ggprof_guard_drop), unused)) = ggprof_guard_take()

#endif
