/* The bottom of libggprof.so: the sink (the ring, notes, emitting per thread, the process message, fork), the engine's
 * process-wide state and the graph generation. It calls nothing of the engine's other files: what must run at its
 * start-up and fork is registered with it by the files above (a table of hooks, as timing.h's CPU timing is). */
#include "engine.h"

#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "timing.h"

ggprof_engine ggprof_eng;
const ggprof_cpu_timing *_Atomic ggprof_cpu;

void ggprof_register_cpu_timing(const ggprof_cpu_timing *t) { atomic_store(&ggprof_cpu, t); }
__thread int  ggprof_busy;

_Atomic uint32_t ggprof_graph_gen;

static ggprof_ring     g_ring;
static pthread_key_t   g_slot_key;
static bool            g_sink_ok;
static _Atomic int     g_process_sent;
static __thread ggprof_ring_slot *t_slot;
static __thread int               t_slot_tried;
/* A real function inside libggml-base, to find its library: the first thread to enter ggml sets it (threads may
 * enter at once: TSan found the plain store racing). */
static _Atomic(const void *) g_base_fn;

/* ---- the hooks the files above register (at load, from a constructor(101), before any wrapper can run) ---- */

#define MAX_FORK_HOOKS 4
static void (*g_fork_hooks[MAX_FORK_HOOKS])(void);
static int g_n_fork_hooks;
static int (*g_profile_start)(const char *profile, char *why, size_t why_len);

void ggprof_sink_on_fork(void (*hook)(void)) {
    if (g_n_fork_hooks < MAX_FORK_HOOKS) g_fork_hooks[g_n_fork_hooks++] = hook;
}

void ggprof_sink_set_profile_start(int (*start)(const char *profile, char *why, size_t why_len)) {
    g_profile_start = start;
}

static int profile_start(const char *profile, char *why, size_t why_len) {
    if (g_profile_start) return g_profile_start(profile, why, why_len);
    snprintf(why, why_len, "GGML_PROFILE: no profile start registered");
    return -1;
}

/* ---- the ring, behind these functions ---- */

bool ggprof_sink_has_ring(void) { return g_ring.file != NULL; }

uint32_t ggprof_sink_recording(void) {
    return g_ring.file ? atomic_load(&g_ring.file->recording) : 0;
}

void ggprof_sink_program_switch(bool on) {
    if (!g_ring.file) return;
    if (on) atomic_fetch_or(&g_ring.file->recording, GGPROF_REC_PROGRAM_ON);
    else atomic_fetch_and(&g_ring.file->recording, ~GGPROF_REC_PROGRAM_ON);
}

int ggprof_sink_create(const char *path, uint32_t n_slots, uint64_t slot_cap, uint32_t level) {
    return ggprof_ring_create(&g_ring, path, n_slots, slot_cap, level);
}

/* ---- notes: one line on stderr, and into the trace when there is one ---- */

static void vnote(bool to_stderr, const char *fmt, va_list ap) {
    ggprof_msg_note m;
    memset(&m, 0, sizeof(m));
    vsnprintf(m.text, sizeof(m.text), fmt, ap);
    if (to_stderr) fprintf(stderr, "ggprof: %s\n", m.text);
    if (g_ring.file) {
        m.h = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_NOTE, 0 };
        ggprof_emit(&m.h);
    }
}

void ggprof_note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vnote(true, fmt, ap);
    va_end(ap);
}

void ggprof_trace_note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vnote(false, fmt, ap);
    va_end(ap);
}

/* ---- per-thread ring slots ---- */

/* What this thread could not write, graph by graph (ring.h, ggprof_msg_loss). The ring's counters already hold the
 * totals exactly; this names the graphs. Kept per thread, so the drop path takes no lock, and the only cost while
 * the ring accepts is the test of t_loss_n. */
static __thread ggprof_loss_entry t_loss[GGPROF_LOSS_MAX];
static __thread uint32_t          t_loss_n;

static void loss_add(uint64_t graph_id, uint64_t records) {
    for (uint32_t i = 0; i < t_loss_n; i++) {
        if (t_loss[i].graph_id == graph_id) {
            t_loss[i].records += records;
            return;
        }
    }
    if (t_loss_n == GGPROF_LOSS_MAX) { /* full: the last entry takes the rest, its graphs unnamed */
        t_loss[GGPROF_LOSS_MAX - 1].graph_id = GGPROF_GRAPH_ANY;
        t_loss[GGPROF_LOSS_MAX - 1].records += records;
        return;
    }
    t_loss[t_loss_n++] = (ggprof_loss_entry){ graph_id, records };
}

/* Sends the pending entries as one LOSS message; they stay pending while the slot is still full. */
static void loss_flush(void) {
    if (!t_loss_n || !t_slot || !g_ring.file) return;
    ggprof_msg_loss m;
    memset(&m, 0, sizeof(m));
    m.h = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_LOSS, 0 };
    m.n = t_loss_n;
    memcpy(m.e, t_loss, t_loss_n * sizeof(t_loss[0]));
    if (ggprof_ring_write(&g_ring, t_slot, &m.h) == 0) t_loss_n = 0;
}

/* A thread's last word: while losses are pending (the ring was overloaded, never otherwise), wake the collector and
 * give it up to 50 ms to make room, so that the graphs are named; past that the counters still hold the totals. */
static void loss_last_flush(void) {
    for (int i = 0; t_loss_n && t_slot && g_ring.file && i < 50; i++) {
        loss_flush();
        if (!t_loss_n) break;
        ggprof_ring_poke(&g_ring);
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    }
}

/* ---- the threads' scheduler counters at their end (wire.h, ggprof_msg_thread_end) ---- */

/* The counters of the thread whose /proc directory is dir (/proc/thread-self, or /proc/self/task/TID at the exit),
 * as one THREAD_END message through the calling thread's slot. Its start: stat's starttime is in clock ticks since
 * boot (CLOCK_BOOTTIME), put on CLOCK_MONOTONIC by the two clocks read together here. */
static void thread_end_send(const char *dir, int32_t tid) {
    char path[64], st[1024], sc[128];
    ggprof_proc_thread t;
    snprintf(path, sizeof(path), "%s/schedstat", dir);
    if (ggprof_read_small(path, sc, sizeof(sc)) <= 0) return;
    snprintf(path, sizeof(path), "%s/stat", dir);
    if (ggprof_read_small(path, st, sizeof(st)) <= 0 || ggprof_proc_thread_parse(st, sc, &t) != 0) return;
    ggprof_msg_thread_end m;
    memset(&m, 0, sizeof(m));
    m.h      = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_THREAD_END, 0 };
    m.tid    = tid;
    m.cpu_ns = t.cpu_ns, m.runq_ns = t.runq_ns, m.slices = t.slices;
    memcpy(m.name, t.name, sizeof(m.name));
    m.at_ns  = ggprof_now_ns();
    long tck = sysconf(_SC_CLK_TCK);
    struct timespec boot;
    if (t.start_ticks && tck > 0 && clock_gettime(CLOCK_BOOTTIME, &boot) == 0) {
        uint64_t boot_ns = (uint64_t) boot.tv_sec * 1000000000u + (uint64_t) boot.tv_nsec;
        uint64_t at_boot = t.start_ticks * (1000000000u / (uint64_t) tck);
        uint64_t ago     = boot_ns > at_boot ? boot_ns - at_boot : 0;
        m.start_ns       = m.at_ns > ago ? m.at_ns - ago : 0;
    }
    ggprof_emit(&m.h);
}

/* The main thread runs no thread-specific destructor: its losses go here, and every thread's counters as the process
 * exits (a thread still computing goes on counting; record's sampler keeps whichever reading is later). */
static void sink_at_exit(void) {
    loss_last_flush();
    GGPROF_GUARD;
    DIR *d = opendir("/proc/self/task");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char dir[64];
        snprintf(dir, sizeof(dir), "/proc/self/task/%.20s", e->d_name);
        thread_end_send(dir, (int32_t) atoi(e->d_name));
    }
    closedir(d);
}

static void slot_destructor(void *p) {
    (void) p;
    loss_last_flush();
    thread_end_send("/proc/thread-self", (int32_t) syscall(SYS_gettid));
    ggprof_ring_release(&g_ring, t_slot);
    t_slot = NULL;
}

__thread int ggprof_t_graph_on = -1;

int ggprof_recording_now(void) {
    /* no ring: the C API alone (ggml-profiler.h) collects, and has its own switch */
    if (!g_ring.file) return 1;
    if (atomic_load_explicit(&g_ring.file->recording, memory_order_relaxed) != GGPROF_REC_ON) return 0;
    /* a --duration window's end, as the collector set it: off from then on, however late it wakes to say so */
    uint64_t off = atomic_load_explicit(&g_ring.file->off_at_ns, memory_order_relaxed);
    return !off || ggprof_now_ns() < off;
}

/* A scheduler graph is recorded whole or not at all, as the switch was when it began (ggprof_t_graph_on); anything
 * else as the switch is now. */
static bool switched_off(uint16_t kind) {
    return kind >= GGPROF_MSG_GRAPH && kind <= GGPROF_MSG_EVENT &&
           !(ggprof_t_graph_on >= 0 ? ggprof_t_graph_on : ggprof_recording_now());
}

/* The calling thread's slot, claimed at its first message; the losses it counted, said first. */
static ggprof_ring_slot *own_slot(void) {
    if (t_slot == NULL && !t_slot_tried) {
        t_slot_tried = 1;
        t_slot = ggprof_ring_claim(&g_ring, ggprof_eng.pid, (int32_t) syscall(SYS_gettid));
        if (t_slot) pthread_setspecific(g_slot_key, t_slot);
    }
    if (t_loss_n) loss_flush();
    return t_slot;
}

int ggprof_emit(const ggprof_msg_hdr *msg) {
    if (g_ring.file == NULL) return -1;
    if (switched_off(msg->kind)) return 0;
    ggprof_ring_slot *slot = own_slot();
    uint64_t lost, graph_id;
    int rc = ggprof_ring_write_counted(&g_ring, slot, msg, &lost, &graph_id);
    if (rc != 0 && lost && slot) loss_add(graph_id, lost); /* no slot: nowhere to say it, the counter has it */
    return rc;
}

void ggprof_emit_dropped(const ggprof_msg_hdr *msg) {
    if (g_ring.file == NULL || switched_off(msg->kind)) return;
    ggprof_ring_slot *slot = own_slot();
    uint64_t graph_id, lost = ggprof_ring_count_drop(&g_ring, slot, msg, &graph_id);
    if (lost && slot) loss_add(graph_id, lost);
}

void *ggprof_emit_reserve(uint32_t size, uint16_t kind) {
    if (g_ring.file == NULL || switched_off(kind)) return NULL;
    return ggprof_ring_reserve(&g_ring, own_slot(), size);
}

void ggprof_emit_commit(uint32_t size) { ggprof_ring_commit(&g_ring, t_slot, size); }

void ggprof_emit_began(void) {
    if (g_ring.file) ggprof_ring_began(&g_ring);
}

static void emit_process(void) {
    const ggprof_ggml *g = &ggprof_eng.g;
    ggprof_msg_process p;
    memset(&p, 0, sizeof(p));
    p.h        = (ggprof_msg_hdr){ sizeof(p), GGPROF_MSG_PROCESS, 0 };
    p.pid      = ggprof_eng.pid;
    p.ppid     = (int32_t) getppid();
    p.start_ns = ggprof_now_ns();
    ssize_t n  = readlink("/proc/self/exe", p.exe, sizeof(p.exe) - 1);
    if (n < 0) p.exe[0] = '\0';
    if (g->ok) { /* a process without ggml (a CUDA or OpenCL program) leaves these empty */
        snprintf(p.ggml_version, sizeof(p.ggml_version), "%s", g->fn_ggml_version ? g->fn_ggml_version() : "unknown");
        snprintf(p.ggml_commit, sizeof(p.ggml_commit), "%s", g->fn_ggml_commit ? g->fn_ggml_commit() : "");
        snprintf(p.ggml_lib, sizeof(p.ggml_lib), "%s", g->lib);
    }
    ggprof_emit(&p.h);
}

static void after_fork_child(void) {
    /* The child must never write into its parent's slot: it claims its own and describes itself anew (the hooks:
     * describe.c forgets the descriptions sent; under GGML_PROFILE, profile.c leaves the profile to the parent). */
    t_slot       = NULL;
    t_slot_tried = 0;
    t_loss_n     = 0; /* the parent's losses are the parent's to send */
    ggprof_eng.pid = (int32_t) getpid();
    for (int i = 0; i < g_n_fork_hooks; i++) g_fork_hooks[i](); /* profile.c, describe.c */
    if (g_sink_ok && g_ring.file) {
        atomic_fetch_add(&g_ring.file->n_processes, 1);
        if (atomic_load(&g_process_sent)) emit_process();
    }
}

/* The sink: where records go. Set up once per process, whether or not ggml is there (a CUDA or OpenCL
 * program without ggml still reports its kernels). */
static pthread_once_t g_sink_once = PTHREAD_ONCE_INIT;

static void sink_init(void) {
    GGPROF_GUARD;
    ggprof_eng.pid   = (int32_t) getpid();
    const char *ring = getenv("GGPROF_RING");
    const char *profile = getenv("GGML_PROFILE");
    char why[256];
    if (ring && *ring) {
        if (ggprof_ring_attach(&g_ring, ring, why, sizeof(why)) != 0) {
            fprintf(stderr, "ggprof: profiling off: %s\n", why);
        } else {
            g_sink_ok = true;
        }
    } else if (profile) {
        if (profile_start(profile, why, sizeof(why)) != 0) {
            fprintf(stderr, "ggprof: profiling off: %s\n", why);
        } else {
            g_sink_ok = true;
        }
    }
    if (g_sink_ok) {
        ggprof_eng.level         = (int) g_ring.file->level;
        ggprof_eng.serialize_gpu = (g_ring.file->flags & GGPROF_RING_SERIALIZE) != 0;
        const char *nodes        = getenv("GGPROF_DEVICE_NODES"); /* 0: what attribution costs, measured */
        ggprof_eng.device_nodes  = !(nodes && strcmp(nodes, "0") == 0);
        ggprof_eng.alternate     = (g_ring.file->flags & GGPROF_RING_ALTERNATE) != 0;
        ggprof_eng.sample        = g_ring.file->flags >> GGPROF_RING_SAMPLE_SHIFT;
        pthread_key_create(&g_slot_key, slot_destructor);
        pthread_atfork(NULL, NULL, after_fork_child);
        atexit(sink_at_exit);
    }
}

bool ggprof_sink_ready(void) {
    pthread_once(&g_sink_once, sink_init);
    return g_sink_ok;
}

bool ggprof_ticks_wanted(void) {
    return !ggprof_eng.broken && ggprof_sink_ready() && ggprof_eng.level >= GGPROF_LEVEL_OP;
}

bool ggprof_device_ready(void) {
    if (!ggprof_sink_ready()) return false;
    int expect = 0;
    if (atomic_compare_exchange_strong(&g_process_sent, &expect, 1)) emit_process();
    return !ggprof_busy;
}

bool ggprof_sink_attached(void) { return g_sink_ok; }

void ggprof_sink_describe_process(void) {
    atomic_store(&g_process_sent, 1);
    emit_process();
}

/* Called on every interposed call: a plain load once it is set (a compare-and-swap each time would take the
 * cache line from every other thread in ggml). */
void ggprof_engine_set_ggml(const void *fn) {
    if (atomic_load_explicit(&g_base_fn, memory_order_relaxed)) return;
    const void *none = NULL;
    atomic_compare_exchange_strong(&g_base_fn, &none, fn);
}

const void *ggprof_engine_ggml(void) { return atomic_load(&g_base_fn); }
