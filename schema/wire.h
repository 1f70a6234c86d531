/* The messages the engine writes into the ring and the collector reads: one definition for both sides. */
#ifndef GGPROF_WIRE_H
#define GGPROF_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* Limits of the ggml ABI that the records mirror (ggml.h: GGML_MAX_SRC, GGML_MAX_NAME, GGML_MAX_OP_PARAMS). */
#define GGPROF_MAX_SRC        10
#define GGPROF_MAX_NAME       64
#define GGPROF_N_OP_PARAMS    16 /* GGML_MAX_OP_PARAMS / sizeof(int32_t) */
#define GGPROF_MAX_STR        256

/* v3 record types: 0 and 1 as in the upstream profiler; 2 is ours, for time that belongs to no op. */
enum ggprof_record_type {
    GGPROF_REC_OP   = 0,
    GGPROF_REC_COPY = 1,
    GGPROF_REC_SYNC = 2,
};

/* What a SYNC record stands for; the names are what the records carry in `name`. */
enum ggprof_sync_kind {
    GGPROF_SYNC_CPU_PLAN    = 0, /* backend graph_compute before ggml_graph_compute: plan and work buffer */
    GGPROF_SYNC_CPU_KICKOFF = 1, /* thread 0 waiting for the team to start (OpenMP builds) */
    GGPROF_SYNC_CPU_BARRIER = 2, /* thread 0 in the barrier between two nodes: waiting for the slowest thread */
    GGPROF_SYNC_CPU_JOIN    = 3, /* after the last tick: final barrier and thread join */
    GGPROF_SYNC_BACKEND_WAIT = 4, /* the host waiting for an asynchronous backend (GPU, RPC) to finish */
    GGPROF_SYNC_COUNT
};
extern const char *const ggprof_sync_names[GGPROF_SYNC_COUNT];

/* How a record's time was measured, so that nobody mistakes one method for another. */
enum ggprof_timing {
    GGPROF_TIMING_NONE       = 0,
    GGPROF_TIMING_HOST_CALL  = 1, /* host clock around one call (split launch, copy) */
    GGPROF_TIMING_CPU_TICK   = 2, /* thread-0 ticks from the CPU backend's abort callback */
    GGPROF_TIMING_SERIALIZED = 3, /* host clock around one node computed alone, then synchronized */
    GGPROF_TIMING_DEVICE     = 4, /* device timestamps, put on the host clock */
};

/* Copy directions, by whether each side's buffer is host memory. */
enum ggprof_copy_dir { GGPROF_COPY_H2D = 0, GGPROF_COPY_D2H = 1, GGPROF_COPY_D2D = 2, GGPROF_COPY_H2H = 3 };
extern const char *const ggprof_copy_names[4];

/* Recording levels: each includes the ones before it. */
enum ggprof_level { GGPROF_LEVEL_GRAPH = 0, GGPROF_LEVEL_SPLIT = 1, GGPROF_LEVEL_OP = 2 };

/* Every message starts with this header; size includes it and is a multiple of 8. */
typedef struct {
    uint32_t size;
    uint16_t kind;
    uint16_t flags;
} ggprof_msg_hdr;

enum ggprof_msg_kind {
    GGPROF_MSG_PAD     = 0, /* filler up to the end of the ring */
    GGPROF_MSG_PROCESS = 1, /* once per process: who it is and which ggml it found */
    GGPROF_MSG_TYPE    = 2, /* one ggml type: id, name, sizes (all types, once per process) */
    GGPROF_MSG_BACKEND = 3, /* a scheduler's backend */
    GGPROF_MSG_NODE    = 4, /* a node description, sent once, referenced by id afterwards */
    GGPROF_MSG_GRAPH   = 5, /* one graph compute */
    GGPROF_MSG_SPLIT   = 6, /* one split compute */
    GGPROF_MSG_EVENT   = 7, /* OP, COPY or SYNC record */
    GGPROF_MSG_NOTE    = 8, /* a line the engine wants the user to see (feature off, version mismatch) */
    GGPROF_MSG_CPU_OPS = 9, /* a CPU split's ops in compact form; the collector makes OP and SYNC records */
    GGPROF_MSG_KERNEL  = 10, /* one device kernel (CUPTI, OpenCL profiling, Vulkan timestamps) */
    GGPROF_MSG_FLUSH   = 11, /* GGML_PROFILE: write the profile now and acknowledge (see ggprof collect) */
    GGPROF_MSG_REGION  = 12, /* a named stretch of a thread's time (ggprof_region_begin/end) */
    GGPROF_MSG_BATCH   = 13, /* one llama_decode call: its batch's tokens and sequences */
    GGPROF_MSG_FUSION  = 14, /* device nodes a backend computed as one (ggml-vulkan's RMS_NORM+MUL) */
    GGPROF_MSG_BUFFER  = 15, /* a backend buffer allocated, given a usage, or freed */
    GGPROF_MSG_DEVMEM  = 16, /* a device's free and total memory, as its backend reports it */
    GGPROF_MSG_PLACEMENT = 17, /* where a graph's tensors lie in the buffers, as ggml-alloc planned them */
    GGPROF_MSG_LOSS    = 18, /* records a thread could not write, per graph (its layout: ring.h) */
    GGPROF_MSG_NODE_PLACES = 19, /* which backend each node of a scheduler's plan ran on, and why */
    GGPROF_MSG_CPU_THREADS = 20, /* record --threads: each CPU op's busy and barrier wait on every thread */
    GGPROF_MSG_CPU_PLAN = 21, /* the CPU threads a ggml_graph_compute plan asked for, when more than any before */
    GGPROF_MSG_THREAD_END = 22, /* a thread's scheduler counters as it ends, and every thread's at the process's exit */
    GGPROF_MSG_CPU_OPS_PLAN = 23, /* which node each op of a CPU split's CPU_OPS is, once per plan */
};

typedef struct {
    ggprof_msg_hdr h;
    uint64_t start_ns, end_ns;
    uint32_t depth, pad;
    char     name[GGPROF_MAX_NAME];
} ggprof_msg_region;

typedef struct {
    ggprof_msg_hdr h;
    uint32_t seq;
    uint32_t final; /* the process is exiting: the collector exits after writing */
} ggprof_msg_flush;

typedef struct {
    ggprof_msg_hdr h;
    int32_t  pid, ppid;
    uint64_t start_ns;                 /* CLOCK_MONOTONIC when the engine attached */
    char     exe[GGPROF_MAX_STR];
    char     ggml_version[32];
    char     ggml_commit[32];
    char     ggml_lib[GGPROF_MAX_STR]; /* path of the libggml-base the engine resolved */
} ggprof_msg_process;

typedef struct {
    ggprof_msg_hdr h;
    int32_t  type;
    int32_t  blck_size;
    uint64_t type_size;
    char     name[32];
} ggprof_msg_type;

typedef struct {
    ggprof_msg_hdr h;
    uint32_t sched_id;   /* 0: backends used outside any scheduler */
    int32_t  backend_id; /* the scheduler's index (0 = highest priority) */
    int32_t  device_type;
    int32_t  is_host;
    char     name[GGPROF_MAX_NAME];
    char     device[GGPROF_MAX_NAME];
    char     description[GGPROF_MAX_STR];
} ggprof_msg_backend;

/* A node as the upstream profiler describes it: op, output and sources. Names are strings so that readers never
 * depend on one ggml version's enum values. */
typedef struct {
    ggprof_msg_hdr h;
    uint32_t node_id;
    int32_t  out_type;
    int32_t  sub_op;
    int32_t  n_src;
    int32_t  op_id;                  /* the op's enum value in the recorded ggml (-1: unknown, e.g. read from JSON) */
    int32_t  pad0;
    int64_t  ne[4];
    int64_t  ne_src[GGPROF_MAX_SRC][4];
    int64_t  nb_src[GGPROF_MAX_SRC][4];
    int32_t  type_src[GGPROF_MAX_SRC];
    int32_t  op_params[GGPROF_N_OP_PARAMS];
    uint64_t nbytes;                 /* ggml_nbytes of the output */
    char     op[32];                 /* ggml_op_name */
    char     sub_op_name[32];        /* unary or glu op name, "" if none */
    char     tensor_name[GGPROF_MAX_NAME];
} ggprof_msg_node;

typedef struct {
    ggprof_msg_hdr h;
    uint64_t graph_id;
    uint32_t sched_id;
    int32_t  n_nodes;
    int32_t  n_splits;
    uint32_t batch;   /* the llama_decode call (ggprof_msg_batch.batch) it was computed in; 0: none */
    uint64_t start_ns, duration_ns;
} ggprof_msg_graph;

/* One sequence of a batch: its tokens, their positions and outputs (logits asked for). */
#define GGPROF_MAX_BATCH_SEQS 16
typedef struct {
    int32_t seq_id, n_tokens, pos_min, pos_max, n_outputs, pad; /* pos -1: llama.cpp chose the positions */
} ggprof_batch_seq;

/* One llama_decode (or llama_encode) call of a llama.cpp program, from libllama's exported entry point. The message
 * ends after the sequences it lists (ggprof_batch_listed of them: h.size is GGPROF_BATCH_SIZE of that), so a decode of
 * one sequence is 72 bytes, not 432. */
typedef struct {
    ggprof_msg_hdr   h;
    uint32_t         batch;      /* per process, from 1 */
    int32_t          status;     /* what llama_decode returned (0: success) */
    int32_t          n_tokens, n_seqs; /* sequences in the batch; the first GGPROF_MAX_BATCH_SEQS are in seqs */
    int32_t          n_outputs, api;   /* api: 0 llama_decode, 1 llama_encode */
    uint64_t         start_ns, duration_ns;
    ggprof_batch_seq seqs[GGPROF_MAX_BATCH_SEQS];
} ggprof_msg_batch;
#define GGPROF_BATCH_SIZE(listed) ((uint32_t) (offsetof(ggprof_msg_batch, seqs) + (size_t) (listed) * sizeof(ggprof_batch_seq)))
/* The sequences a BATCH message lists: its n_seqs up to GGPROF_MAX_BATCH_SEQS, and no more than its size holds. */
static inline int ggprof_batch_listed(const ggprof_msg_batch *b) {
    size_t room = b->h.size >= offsetof(ggprof_msg_batch, seqs)
                      ? (b->h.size - offsetof(ggprof_msg_batch, seqs)) / sizeof(ggprof_batch_seq) : 0;
    int    n    = b->n_seqs < 0 ? 0 : b->n_seqs < GGPROF_MAX_BATCH_SEQS ? b->n_seqs : GGPROF_MAX_BATCH_SEQS;
    return (size_t) n < room ? n : (int) room;
}

typedef struct {
    ggprof_msg_hdr h;
    uint64_t graph_id;
    uint32_t sched_id;
    int32_t  split_id;
    int32_t  backend_id;
    int32_t  n_nodes;
    int32_t  node_start;    /* index in the scheduler's graph of this split's first node */
    int32_t  ticks_matched; /* 1 matched, 0 mismatched (no op times given), -1 not a ticked split */
    int32_t  n_ticks, n_expected;
    uint64_t start_ns, duration_ns;
    uint64_t engine_ns;     /* time the engine itself spent around this split, before and after it */
} ggprof_msg_split;

typedef struct {
    ggprof_msg_hdr h;
    uint16_t type;       /* enum ggprof_record_type */
    uint16_t timing;     /* enum ggprof_timing */
    uint16_t sub;        /* SYNC: enum ggprof_sync_kind; COPY: enum ggprof_copy_dir */
    int16_t  backend_id;
    uint32_t node_id;    /* OP: the node; COPY: the source tensor; 0: none */
    uint32_t sched_id;
    uint64_t graph_id;   /* UINT64_MAX: outside any graph compute */
    int32_t  split_id;
    int32_t  node_index; /* -1: none */
    int32_t  fused_index;/* OP: node index of a second node computed with this one, else -1 */
    uint32_t fused_node_id;
    uint64_t start_ns, duration_ns;
    uint64_t bytes;
    uint64_t wait_ns;    /* OP: thread 0's barrier wait inside the op; COPY: offset of a partial copy */
} ggprof_msg_event;

typedef struct {
    ggprof_msg_hdr h;
    char text[GGPROF_MAX_STR];
} ggprof_msg_note;

/* ggml_cplan.n_threads of a ggml_graph_compute, sent when it exceeds the most sent (with a note saying it for people):
 * the store keeps the most as meta threads.PID. A newer kind, no ring version bump: an older collector skips it. */
typedef struct {
    ggprof_msg_hdr h;
    int32_t        n_threads;
    uint32_t       reserved;
} ggprof_msg_cpu_plan;

/* A thread's scheduler counters, read by the engine from /proc (schedstat, stat) as the thread ends (a thread that
 * wrote records, as its slot is released) and for every thread of the process at its exit: record's /proc sampler
 * reads the same files while the process runs, and these make its thread_stats exact at the end however seldom it
 * sampled (collector/proc_sample.c). The process is the slot's; tid may be another thread of it. A newer kind, no
 * ring version bump: an older collector skips it. */
typedef struct {
    ggprof_msg_hdr h;
    int32_t        tid;
    uint32_t       reserved;
    uint64_t       start_ns;               /* the thread's start (stat's starttime, clock ticks), on CLOCK_MONOTONIC */
    uint64_t       at_ns;                  /* when the counters were read, CLOCK_MONOTONIC */
    uint64_t       cpu_ns, runq_ns, slices; /* schedstat: on a CPU, waiting for one, time slices */
    char           name[16];               /* comm, NUL-ended */
} ggprof_msg_thread_end;

/* A thread's /proc/.../stat and schedstat texts read the one way both sides need them (the engine for THREAD_END,
 * record's sampler at its samples): its name (comm), state letter, start (stat's starttime: clock ticks since boot,
 * 0 if the line stops before it) and schedstat's counters. 0, or -1 when either text is malformed. */
typedef struct {
    char     name[16];
    char     state;
    uint64_t start_ticks, cpu_ns, runq_ns, slices;
} ggprof_proc_thread;
int ggprof_proc_thread_parse(const char *stat, const char *schedstat, ggprof_proc_thread *t);
/* A small file (/proc, /sys) read whole into buf, NUL-ended: its length, or -1. */
long ggprof_read_small(const char *path, char *buf, unsigned long len);

/* One CPU op as thread 0 saw it, in the raw units of the engine's stamps (the time-stamp counter; CLOCK_MONOTONIC
 * ns where there is none). 16 bytes: the engine writes this on the computing thread, where every cache line written
 * into the ring is a miss, and leaves the conversion to ns to the reader (ggprof_cpu_ops_expand). Which node each op
 * is comes once per plan (CPU_OPS_PLAN), not with every token. */
typedef struct {
    uint64_t tick;    /* the op's end: thread 0's tick after computing it (stamp) */
    uint32_t barrier; /* stamp units thread 0 waited in the barrier after it (saturates: ~1.4 s at 3 GHz) */
    uint32_t wait;    /* stamp units of thread 0's barrier waits inside it (saturates likewise) */
} ggprof_cpu_op;

/* Which node an op of a CPU split is: its description and the node computed with it (RMS_NORM+MUL), by their
 * places among the split's nodes (the split's first node is 0). */
typedef struct {
    uint32_t node_id, fused_node_id; /* fused: 0 when none */
    int32_t  node, fused;            /* fused: -1 when none */
} ggprof_cpu_op_id;

/* A CPU split's plan: its ops' nodes, in the order CPU_OPS sends their times. Sent once, before the first CPU_OPS
 * that uses it, and again only when a walk finds the split's nodes changed (a new plan_id); in chunks of at most
 * GGPROF_CPU_OPS_MAX ids, in order: first is the first id's index, n_total the plan's size. plan_id: the process's
 * own, from 1. A description: the collector keeps it whole, as the node descriptions. */
typedef struct {
    ggprof_msg_hdr   h;
    uint32_t         plan_id;
    uint32_t         first, n, n_total;
    ggprof_cpu_op_id ids[];
} ggprof_msg_cpu_ops_plan;

#define GGPROF_CPU_OPS_FIRST 1 /* h.flags: the chunk begins the split (plan and kick-off apply) */
#define GGPROF_CPU_OPS_LAST  2 /* h.flags: the chunk ends the split (the join applies) */
#define GGPROF_CPU_OPS_MAX   4096

/* The ops of one CPU split (or a chunk of them). Times between the split's start and the first op, and after
 * the last tick, become SYNC records (cpu_plan, cpu_kickoff, cpu_join); so do the barrier waits. A stamp x is
 * x's CLOCK_MONOTONIC time by the two anchors, read together at the split's start and at its end:
 * anchor_ns + (x - anchor_stamp) * (end_anchor_ns - anchor_ns) / (end_stamp - anchor_stamp). */
typedef struct {
    ggprof_msg_hdr h;
    uint64_t graph_id;
    uint32_t sched_id;
    int32_t  split_id;
    int32_t  backend_id;
    uint32_t n_ops;
    uint64_t start_ns;       /* where the first op's time starts (split start for the first chunk) */
    uint64_t plan_end_ns;    /* first chunk: ggml_graph_compute entered (0: not seen) */
    uint64_t kickoff_end_ns; /* first chunk: thread 0 began its first node (0: not seen) */
    uint64_t end_ns;         /* the split's end (every chunk: no converted tick lies past it) */
    uint64_t floor_ns;       /* no converted tick lies before it: the previous chunk's last tick, the first chunk's
                              * kick-off end, else its plan end, else the split's start */
    uint64_t anchor_stamp, anchor_ns;  /* a stamp and CLOCK_MONOTONIC read together as the split began */
    uint64_t end_stamp, end_anchor_ns; /* and as it ended */
    uint32_t plan_id;        /* the plan (CPU_OPS_PLAN) naming the ops' nodes; 0: none (a chunk without ops) */
    uint32_t first;          /* the plan's index of ops[0] */
    int32_t  node_start;     /* the split's first node in its graph: a node's index is node_start + its place */
    uint32_t reserved;
    ggprof_cpu_op ops[];
} ggprof_msg_cpu_ops;

/* A kernel as the device's own tracing saw it. Times are already on the host's CLOCK_MONOTONIC (the
 * producer calibrates its device clock). Attribution to a ggml node is -1 where it is not known. */
typedef struct {
    ggprof_msg_hdr h;
    uint64_t graph_id;       /* GGPROF_GRAPH_NONE if not attributed */
    uint32_t sched_id;
    int32_t  split_id, backend_id, node_index;
    uint32_t node_id;        /* the node being dispatched when the kernel was launched, 0 if none */
    uint32_t api;            /* enum ggprof_kernel_api */
    uint32_t device;         /* the API's device ordinal */
    uint32_t pad;
    uint64_t stream;         /* stream or queue handle */
    uint64_t correlation;    /* the API's correlation id (CUPTI), or 0 */
    uint64_t graph_node;     /* CUDA graph node id when launched from a CUDA graph, or 0 */
    uint64_t start_ns, end_ns;
    char     name[GGPROF_MAX_STR];
} ggprof_msg_kernel;

/* Nodes of a device split that the backend computed with the node before them: ggml-vulkan (and ggml-cuda) skip
 * a node they fused into the one before without looking at it, so a node the backend never asked ggml_is_empty
 * about, after one it did, belongs to that one's group (engine/interpose.c). head is the group's first node, whose
 * dispatches carry the group's time; node_id[] its members, head first (the first GGPROF_MAX_FUSED of n). */
#define GGPROF_MAX_FUSED 26
typedef struct {
    ggprof_msg_hdr h;
    uint64_t graph_id;
    uint32_t sched_id;
    int32_t  split_id;
    int32_t  head_index; /* the head's node index in its graph */
    uint32_t n;          /* members, head included (2 or more) */
    uint32_t node_id[GGPROF_MAX_FUSED];
} ggprof_msg_fusion;

/* A backend buffer's life (engine/memory.c): allocated from a buffer type, or made over memory the program already
 * has (mmapped weights: ggml_backend_cpu_buffer_from_ptr, ggml_backend_dev_buffer_from_host_ptr); its usage set
 * (llama.cpp marks its weights, ggml-alloc its compute buffers); freed. A handle names a buffer until it is freed. */
enum ggprof_buffer_event { GGPROF_BUF_ALLOC = 0, GGPROF_BUF_USAGE = 1, GGPROF_BUF_FREE = 2 };
enum ggprof_buffer_source { GGPROF_BUF_FROM_BUFT = 0, GGPROF_BUF_FROM_HOST_PTR = 1 };
typedef struct {
    ggprof_msg_hdr h;
    uint32_t event;     /* enum ggprof_buffer_event */
    uint32_t usage;     /* ggml's enum ggml_backend_buffer_usage: 0 any, 1 weights, 2 compute */
    uint32_t source;    /* enum ggprof_buffer_source */
    uint32_t is_host;
    uint64_t handle;    /* the buffer's address in the program */
    uint64_t size, alignment;
    uint64_t t_ns;
    char     buft[GGPROF_MAX_NAME];   /* its buffer type's name: CPU, CPU_Mapped, Vulkan0, RPC0[host:port] */
    char     device[GGPROF_MAX_NAME]; /* its buffer type's device, "" when it has none */
} ggprof_msg_buffer;

/* A device's memory as ggml_backend_dev_memory reports it, at three moments. */
enum ggprof_devmem_moment { GGPROF_DEVMEM_START = 0, GGPROF_DEVMEM_FIRST_GRAPH = 1, GGPROF_DEVMEM_END = 2 };
typedef struct {
    ggprof_msg_hdr h;
    uint32_t moment;    /* enum ggprof_devmem_moment */
    int32_t  dev_type;  /* ggml_backend_dev_type, as the recorded ggml numbers it */
    uint64_t t_ns;
    uint64_t free, total;
    char     device[GGPROF_MAX_NAME];
} ggprof_msg_devmem;

/* One tensor of a placement: where ggml-alloc put it, and the steps of the graph it is alive in, by ggml-alloc's
 * rule (allocated at its node, or before the first node for leafs and inputs; freed after its last consumer, its
 * views' consumers included; outputs never). Views hold no memory of their own: root names the entry that does. */
#define GGPROF_PL_LEAF     1u  /* not a node of the graph: a source (weights, inputs, the KV cache) */
#define GGPROF_PL_INPUT    2u  /* flagged input (GGML_TENSOR_FLAG_INPUT) */
#define GGPROF_PL_OUTPUT   4u  /* flagged output: never freed */
#define GGPROF_PL_VIEW     8u  /* a view: its memory is root's */
#define GGPROF_PL_COMPUTED 16u /* a node the backend computes (writes) */
#define GGPROF_PL_PLANNED  32u /* placed by this plan (ggml-alloc gave it its memory), not there before */
typedef struct {
    uint32_t node_id;     /* its description (MSG_NODE) */
    int32_t  node_index;  /* in the graph; -1: a leaf */
    int32_t  first, last; /* alive from step first to step last (-1: before the first node) */
    int32_t  root;        /* the entry whose memory it is: itself, or its view source */
    uint32_t flags;       /* GGPROF_PL_* */
    uint64_t handle;      /* its buffer (MSG_BUFFER handle), 0: none */
    uint64_t offset;      /* from the buffer's base */
    uint64_t size;        /* ggml_backend_buffer_get_alloc_size: what ggml-alloc reserved for it, before alignment */
} ggprof_placement;

/* A placement: the plan ggml-alloc made for a graph when it reserved its buffers (ggml_gallocr_reserve_n: a
 * scheduler's reserve, or a graph that no longer fits), read once per plan, never per token. Large plans come in
 * chunks: first_entry is the first entry's index, n_total the plan's size. */
#define GGPROF_PLACEMENT_CHUNK 1024
typedef struct {
    ggprof_msg_hdr h;
    uint32_t plan;        /* per process, from 1 */
    uint32_t sched_id;    /* 0: a graph allocator used without a scheduler */
    uint32_t first_entry, n, n_total;
    int32_t  n_nodes;
    uint64_t t_ns;
    ggprof_placement e[];
} ggprof_msg_placement;

/* Why a node ran where it did (docs/placement.md). PREFERRED: on the scheduler's highest-priority device (or there is
 * none); otherwise the first that holds of: the device's supports_op refuses it, its weights lie in a host buffer,
 * its inputs do, or none of these (the scheduler's own choice). */
enum ggprof_place_reason {
    GGPROF_PLACE_PREFERRED = 0,
    GGPROF_PLACE_UNSUPPORTED = 1,
    GGPROF_PLACE_WEIGHTS_ON_HOST = 2,
    GGPROF_PLACE_INPUTS_ON_HOST = 3,
    GGPROF_PLACE_SCHEDULER = 4,
    GGPROF_PLACE_COUNT
};
extern const char *const ggprof_place_reason_names[GGPROF_PLACE_COUNT];

/* One node of a plan: the backend the scheduler assigned it (ggml_backend_sched_get_tensor_backend), ids as in the
 * scheduler's BACKEND messages. */
typedef struct {
    int32_t  node_index;           /* in the scheduler's graph, as op records count it */
    uint32_t node_id;              /* its description (MSG_NODE) */
    int16_t  backend_id;
    int16_t  preferred_backend_id; /* the highest-priority device it did not run on; -1: none */
    uint16_t reason;               /* enum ggprof_place_reason */
    uint16_t n_src;                /* how many of src[] hold a node */
    int32_t  src[GGPROF_MAX_SRC];  /* the nodes it reads (node indexes, through views); leafs are not listed */
} ggprof_node_place;

/* A plan's node placement, sent once per plan (a scheduler's graph of new shape or splits), not per token, in chunks
 * as MSG_PLACEMENT: first_entry is the first entry's index, n_total the plan's size. graph_id: the first graph
 * computed with it. */
#define GGPROF_NODE_PLACES_CHUNK 512
typedef struct {
    ggprof_msg_hdr h;
    uint32_t sched_id;
    uint32_t first_entry, n, n_total;
    uint64_t graph_id;
    ggprof_node_place e[];
} ggprof_msg_node_places;

/* record --threads (GGPROF_THREADS=1): a CPU split's ops on every thread of its compute, from each thread's arrival
 * at each barrier (kernels/cpu/cpu_ticks.c, docs/how-it-works.md "Threads"). One entry per op and thread, for the
 * ops that end at a barrier; busy: the thread's time from the previous barrier's exit (the first op: from where
 * the first op starts) to its arrivals at the op's barriers, wait: from those arrivals to the barriers' exits
 * (thread 0's exits, which all threads leave together). imbalance_ns: on thread 0's entry only, the op's slowest
 * minus fastest arrival summed over its barriers. Thread 0's wait is its barrier + wait of CPU_OPS, converted. */
typedef struct {
    int32_t  node_index; /* as in CPU_OPS */
    int32_t  tid;        /* the thread's kernel id */
    uint16_t thread;     /* 0: the compute's thread 0; workers 1.. by ascending tid */
    uint16_t reserved;
    uint32_t busy_ns, wait_ns, imbalance_ns; /* saturate at ~4 s */
} ggprof_cpu_thread_op;

#define GGPROF_CPU_THREADS_MAX 1024 /* entries per message; a split's entries come in as many as it needs */
typedef struct {
    ggprof_msg_hdr h;
    uint64_t graph_id;
    uint32_t sched_id;
    int32_t  split_id;
    uint32_t n;         /* entries in e[] */
    uint32_t n_threads; /* threads of the compute, thread 0 included */
    ggprof_cpu_thread_op e[];
} ggprof_msg_cpu_threads;

enum ggprof_kernel_api { GGPROF_API_CUDA = 1, GGPROF_API_OPENCL = 2, GGPROF_API_VULKAN = 3 };

#define GGPROF_GRAPH_NONE UINT64_MAX


/* The layouts cross a process boundary (engine -> ring -> collector): a change of size is a change of the wire,
 * which the ring's version must follow (ring.h). Every message is a multiple of 8 bytes, 8-byte aligned at most. */
#define GGPROF_WIRE_SIZE(t, n)                                                                                 \
    _Static_assert(sizeof(t) == (n), #t " changed size: bump GGPROF_RING_VERSION");                           \
    _Static_assert(sizeof(t) % 8 == 0 && _Alignof(t) <= 8, #t " breaks the ring's 8-byte message rule")
GGPROF_WIRE_SIZE(ggprof_msg_hdr, 8);
GGPROF_WIRE_SIZE(ggprof_msg_region, 96);
GGPROF_WIRE_SIZE(ggprof_msg_flush, 16);
GGPROF_WIRE_SIZE(ggprof_msg_process, 600);
GGPROF_WIRE_SIZE(ggprof_msg_type, 56);
GGPROF_WIRE_SIZE(ggprof_msg_backend, 408);
GGPROF_WIRE_SIZE(ggprof_msg_node, 944);
GGPROF_WIRE_SIZE(ggprof_msg_graph, 48);
GGPROF_WIRE_SIZE(ggprof_msg_batch, 432);
GGPROF_WIRE_SIZE(ggprof_msg_split, 72);
GGPROF_WIRE_SIZE(ggprof_msg_event, 80);
GGPROF_WIRE_SIZE(ggprof_msg_note, 264);
GGPROF_WIRE_SIZE(ggprof_msg_cpu_plan, 16);
GGPROF_WIRE_SIZE(ggprof_msg_thread_end, 72);
GGPROF_WIRE_SIZE(ggprof_msg_cpu_ops, 120);
GGPROF_WIRE_SIZE(ggprof_msg_cpu_ops_plan, 24);
GGPROF_WIRE_SIZE(ggprof_cpu_op_id, 16);
GGPROF_WIRE_SIZE(ggprof_msg_kernel, 344);
GGPROF_WIRE_SIZE(ggprof_msg_fusion, 136);
GGPROF_WIRE_SIZE(ggprof_cpu_op, 16);
GGPROF_WIRE_SIZE(ggprof_msg_buffer, 184);
GGPROF_WIRE_SIZE(ggprof_msg_devmem, 104);
GGPROF_WIRE_SIZE(ggprof_placement, 48);
GGPROF_WIRE_SIZE(ggprof_msg_placement, 40);
GGPROF_WIRE_SIZE(ggprof_node_place, 56);
GGPROF_WIRE_SIZE(ggprof_msg_node_places, 32);
GGPROF_WIRE_SIZE(ggprof_cpu_thread_op, 24);
GGPROF_WIRE_SIZE(ggprof_msg_cpu_threads, 32);
_Static_assert(sizeof(ggprof_msg_cpu_ops) % _Alignof(ggprof_cpu_op) == 0, "ops[] starts aligned");
_Static_assert(sizeof(ggprof_msg_cpu_ops_plan) % _Alignof(ggprof_cpu_op_id) == 0, "ids[] starts aligned");

/* One interval of a CPU_OPS message: an op (type OP) or a wait (type SYNC, sync naming its kind). */
typedef struct {
    int      type, sync;
    uint32_t node_id, fused_node_id;
    int32_t  node_index, fused_index;
    uint64_t start_ns, duration_ns, wait_ns;
} ggprof_cpu_interval;

/* Turns a CPU_OPS message into the intervals that tile the split: plan, kick-off, each op up to its tick,
 * the barrier after it, the join, converting the stamps to ns. The one reading of the compact form, for every
 * consumer; a message whose n_ops exceeds its size gives nothing. ids: its ops' nodes (ggprof_cpu_plans_find), or
 * NULL where only the intervals count (the ops then name no node). */
void ggprof_cpu_ops_expand(const ggprof_msg_cpu_ops *m, const ggprof_cpu_op_id *ids,
                           void (*fn)(const ggprof_cpu_interval *iv, void *user), void *user);

/* The CPU_OPS plans a reader has seen, by process and plan id: what names a CPU_OPS message's ops. Memory grows
 * with the plans' bytes received, never with what a message claims. */
typedef struct ggprof_cpu_plans ggprof_cpu_plans;
ggprof_cpu_plans *ggprof_cpu_plans_new(void);
void ggprof_cpu_plans_free(ggprof_cpu_plans *t);
/* Takes a CPU_OPS_PLAN message of process pid: 0, or -1 when it is malformed or out of order (then left out). */
int ggprof_cpu_plans_add(ggprof_cpu_plans *t, int32_t pid, const ggprof_msg_hdr *m);
/* The ids of m's ops in process pid's plan, or NULL when the plan, or that part of it, never arrived (or m has no
 * ops; or t is NULL: no plan seen). */
const ggprof_cpu_op_id *ggprof_cpu_plans_find(const ggprof_cpu_plans *t, int32_t pid, const ggprof_msg_cpu_ops *m);

/* For the engine, as a split's ops go out in chunks: the floor_ns and start_ns of the chunk after m, as
 * ggprof_cpu_ops_expand has m's last op end and its barrier (m holds at least one op). */
void ggprof_cpu_ops_carry(const ggprof_msg_cpu_ops *m, uint64_t *floor_ns, uint64_t *start_ns);

#endif
