/* Entry patching for ggml functions called directly inside a program (patch.h). Instructions are decoded with
 * capstone (Debian's libcapstone4, opened at run time: the injected library links nothing it does not need, and a
 * program that needs no patch never loads it). */
#include "patch.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <linux/futex.h>
#include <linux/membarrier.h>

#if defined(__x86_64__)
#include <capstone/capstone.h>

static struct {
    cs_err (*open)(cs_arch, cs_mode, csh *);
    cs_err (*option)(csh, cs_opt_type, size_t);
    size_t (*disasm)(csh, const uint8_t *, size_t, uint64_t, size_t, cs_insn **);
    void (*free)(cs_insn *, size_t);
    cs_err (*close)(csh *);
    csh  h;
    bool ok;
} cs;
static pthread_once_t cs_once = PTHREAD_ONCE_INIT;

static void cs_load(void) {
    void *lib = dlopen("libcapstone.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    cs.open   = (__typeof__(cs.open)) dlsym(lib, "cs_open");
    cs.option = (__typeof__(cs.option)) dlsym(lib, "cs_option");
    cs.disasm = (__typeof__(cs.disasm)) dlsym(lib, "cs_disasm");
    cs.free   = (__typeof__(cs.free)) dlsym(lib, "cs_free");
    cs.close  = (__typeof__(cs.close)) dlsym(lib, "cs_close");
    if (!cs.open || !cs.option || !cs.disasm || !cs.free || !cs.close) return;
    if (cs.open(CS_ARCH_X86, CS_MODE_64, &cs.h) != CS_ERR_OK) return;
    cs.ok = cs.option(cs.h, CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK;
}

bool ggprof_patch_supported(void) {
    pthread_once(&cs_once, cs_load);
    return cs.ok;
}

static bool has_group(const cs_insn *in, uint8_t grp) {
    for (int i = 0; i < in->detail->groups_count; i++) {
        if (in->detail->groups[i] == grp) return true;
    }
    return false;
}

/* A branch whose target is an immediate (jmp/jcc/call rel8 or rel32): its target, else 0. */
static uint64_t rel_target(const cs_insn *in) {
    if (!has_group(in, CS_GRP_JUMP) && !has_group(in, CS_GRP_CALL)) return 0;
    const cs_x86 *x = &in->detail->x86;
    if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM) return 0;
    return (uint64_t) x->operands[0].imm;
}

static bool rip_relative(const cs_insn *in) {
    const cs_x86 *x = &in->detail->x86;
    for (int i = 0; i < x->op_count; i++) {
        if (x->operands[i].type == X86_OP_MEM && x->operands[i].mem.base == X86_REG_RIP) return true;
    }
    return false;
}

static bool fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

/* One page within a 32-bit displacement of near: the trampoline must reach back, and RIP-relative operands it
 * carries must still reach their data. */
static unsigned char *page_near(uintptr_t near) {
    long      pg   = sysconf(_SC_PAGESIZE);
    uintptr_t base = near & ~(uintptr_t) (pg - 1);
    for (uintptr_t step = 1u << 16; step < (1u << 30); step += 1u << 16) {
        for (int dir = -1; dir <= 1; dir += 2) {
            uintptr_t a = dir < 0 ? base - step : base + step;
            if (dir < 0 && step > base) continue;
            void *p = mmap((void *) a, (size_t) pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                           -1, 0);
            if (p == MAP_FAILED) continue;
            if ((uintptr_t) p == a) return p;
            munmap(p, (size_t) pg);
        }
    }
    return NULL;
}

static void put32(unsigned char *p, int32_t v) { memcpy(p, &v, 4); }

/* ---- Keeping the program's other threads out while an entry is written (docs/how-it-works.md, "Patching a running
 * program"). Every other thread of /proc/self/task gets a private real-time signal whose handler reports the
 * thread's PC and parks it on a futex until the patch is written; a parked PC inside the displaced bytes is moved to
 * the trampoline's matching instruction. A thread that blocks the signal is let be only while it sleeps in the
 * kernel at a PC outside the displaced bytes (/proc/self/task/TID/syscall); one that neither parks nor sleeps within
 * STOP_WAIT_NS refuses the patch. Between the first signal and the release the patching thread calls nothing that
 * could take a lock a parked thread holds (no malloc, no stdio): raw system calls only. */
#define STOP_MAX     1024
#define STOP_WAIT_NS 500000000L /* 0.5 s for every thread to park */

enum { T_WAIT, T_PARKED, T_GONE, T_ASLEEP };
static struct {
    _Atomic int gen; /* the stop in progress, 0 when none */
    _Atomic int released; /* the last stop whose threads may go on (futex word) */
    _Atomic int n;
    int         sig; /* the signal, chosen once and kept installed: a pending one may arrive late */
    struct {
        _Atomic pid_t     tid;
        _Atomic int       parked, left; /* the stop it parked for, and left the handler of */
        _Atomic uintptr_t pc, newpc;
        int               state;
    } t[STOP_MAX];
} stop;
static pthread_mutex_t stop_mu = PTHREAD_MUTEX_INITIALIZER;

static void park_handler(int sig, siginfo_t *si, void *ctx) {
    (void) sig, (void) si;
    int saved = errno;
    int g     = atomic_load(&stop.gen);
    if (g) {
        pid_t       tid = (pid_t) syscall(SYS_gettid);
        ucontext_t *uc  = ctx;
        int         n   = atomic_load(&stop.n);
        for (int i = 0; i < n; i++) {
            if (atomic_load(&stop.t[i].tid) != tid) continue;
            atomic_store(&stop.t[i].pc, (uintptr_t) uc->uc_mcontext.gregs[REG_RIP]);
            atomic_store(&stop.t[i].parked, g);
            for (int r; (r = atomic_load(&stop.released)) != g;) {
                syscall(SYS_futex, &stop.released, FUTEX_WAIT_PRIVATE, r, NULL, NULL, 0);
            }
            uintptr_t np = atomic_load(&stop.t[i].newpc);
            if (np) uc->uc_mcontext.gregs[REG_RIP] = (greg_t) np;
            atomic_store(&stop.t[i].left, g); /* its slot may be reused from now on */
            break;
        }
    }
    errno = saved;
}

/* The signal: ours if installed and still ours, else the highest real-time one nobody handles. */
static bool stop_signal(void) {
    struct sigaction cur;
    if (stop.sig && sigaction(stop.sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == park_handler) {
        return true;
    }
    for (int s = SIGRTMAX; s > SIGRTMIN + 2; s--) {
        if (sigaction(s, NULL, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = park_handler;
        sa.sa_flags     = SA_SIGINFO | SA_RESTART;
        sigfillset(&sa.sa_mask); /* nothing interrupts a parked thread */
        if (sigaction(s, &sa, NULL) != 0) continue;
        stop.sig = s;
        return true;
    }
    return false;
}

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Reads /proc/self/task/TID/NAME into buf (raw calls: no allocation while threads are parked). */
static ssize_t read_task_file(pid_t tid, const char *name, char *buf, size_t len) {
    char path[64], num[16];
    int  k = 0;
    for (unsigned v = (unsigned) tid; k == 0 || v; v /= 10) num[k++] = (char) ('0' + v % 10);
    size_t o = 0;
    const char *pre = "/proc/self/task/";
    while (*pre) path[o++] = *pre++;
    while (k) path[o++] = num[--k];
    path[o++] = '/';
    while (*name && o < sizeof(path) - 1) path[o++] = *name++;
    path[o] = '\0';
    int fd = (int) syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = syscall(SYS_read, fd, buf, len - 1);
    syscall(SYS_close, fd);
    if (n < 0) return -1;
    buf[n] = '\0';
    return n;
}

/* Whether thread tid has sig blocked: the SigBlk line of its status. */
static bool task_blocks(pid_t tid, int sig) {
    char buf[2048];
    if (read_task_file(tid, "status", buf, sizeof(buf)) <= 0) return false;
    const char *p = strstr(buf, "\nSigBlk:\t");
    if (!p) return false;
    unsigned long long m = strtoull(p + 9, NULL, 16);
    return (m >> (sig - 1)) & 1;
}

/* Where thread tid sleeps in a system call: its user PC from /proc/self/task/TID/syscall ("NR args... SP PC");
 * false otherwise. */
static bool task_asleep_at(pid_t tid, uintptr_t *pc) {
    char buf[256];
    /* "-1 SP PC" is a thread out of any system call (preempted: it may be in a handler whose interrupted PC is
     * anywhere): only one inside a system call is known to be at PC. */
    if (read_task_file(tid, "syscall", buf, sizeof(buf)) <= 0 || buf[0] < '0' || buf[0] > '9') return false;
    char *last = strrchr(buf, ' ');
    if (!last) return false;
    char *end = NULL;
    *pc = (uintptr_t) strtoull(last + 1, &end, 16);
    return end != last + 1;
}

/* Adds each thread of /proc/self/task not listed yet (but this one) and signals it; the count added, -1 when the
 * list cannot be read or is full. */
static int stop_more(pid_t self) {
    int fd = (int) syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int  added = 0;
    char buf[4096];
    for (;;) {
        long nb = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (nb <= 0) {
            if (nb < 0) added = -1;
            break;
        }
        for (long off = 0; off < nb;) {
            struct { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; } *d =
                (void *) (buf + off);
            off += d->reclen;
            if (d->name[0] < '0' || d->name[0] > '9') continue;
            pid_t tid = (pid_t) strtol(d->name, NULL, 10);
            int   n   = atomic_load(&stop.n), i = 0;
            while (i < n && atomic_load(&stop.t[i].tid) != tid) i++;
            if (tid == self || i < n) continue;
            if (n == STOP_MAX) {
                syscall(SYS_close, fd);
                return -1;
            }
            atomic_store(&stop.t[n].parked, 0);
            atomic_store(&stop.t[n].newpc, 0);
            stop.t[n].state = T_WAIT;
            atomic_store(&stop.t[n].tid, tid);
            atomic_store(&stop.n, n + 1);
            if (syscall(SYS_tgkill, getpid(), tid, stop.sig) != 0) stop.t[n].state = T_GONE;
            added++;
        }
    }
    syscall(SYS_close, fd);
    return added;
}

/* Stops every other thread: true when each is parked, gone, or asleep in the kernel with the signal blocked. Else
 * why says which would not stop, and the threads are released. */
static void stop_release(void);
static bool stop_others(char *why, size_t why_len) {
    if (!stop_signal()) {
        snprintf(why, why_len, "no free real-time signal to stop the program's threads with");
        return false;
    }
    static int gens;
    int        g = ++gens;
    if (g <= 0) g = gens = 1;
    atomic_store(&stop.n, 0);
    atomic_store(&stop.gen, g);
    pid_t self     = (pid_t) syscall(SYS_gettid);
    long  deadline = now_ns() + STOP_WAIT_NS, next_check = deadline - STOP_WAIT_NS + 5000000;
    pid_t stuck    = 0;
    int   added;
    bool  unreadable = false;
    /* Again until no thread appears that was not signalled (one may have been made before its maker parked). */
    while ((added = stop_more(self)) != 0) {
        if (added < 0) {
            unreadable = true;
            break;
        }
        for (bool blocked_checked = false;;) {
            int n = atomic_load(&stop.n), waiting = 0;
            for (int i = 0; i < n; i++) {
                if (stop.t[i].state != T_WAIT) continue;
                pid_t tid = atomic_load(&stop.t[i].tid);
                if (atomic_load(&stop.t[i].parked) == g) {
                    stop.t[i].state = T_PARKED;
                } else if (syscall(SYS_tgkill, getpid(), tid, 0) != 0) {
                    stop.t[i].state = T_GONE;
                } else if (blocked_checked && task_blocks(tid, stop.sig)) {
                    uintptr_t pc;
                    if (task_asleep_at(tid, &pc)) {
                        atomic_store(&stop.t[i].pc, pc);
                        stop.t[i].state = T_ASLEEP;
                    } else {
                        waiting++, stuck = tid;
                    }
                } else {
                    waiting++, stuck = tid;
                }
            }
            if (!waiting) break;
            if (now_ns() > deadline) break;
            struct timespec ts = { 0, 50000 };
            nanosleep(&ts, NULL);
            /* Every 5 ms, whether one that has not parked blocks the signal. */
            long t = now_ns();
            blocked_checked = t > next_check;
            if (blocked_checked) next_check = t + 5000000;
        }
        if (now_ns() > deadline) break;
    }
    int n = atomic_load(&stop.n);
    bool all = !unreadable;
    for (int i = 0; i < n && all; i++) all = stop.t[i].state != T_WAIT;
    if (all) return true;
    stop_release();
    if (unreadable) snprintf(why, why_len, "the program's threads cannot be listed (/proc/self/task)");
    else snprintf(why, why_len, "thread %d of the program did not stop within %ld ms", (int) stuck, STOP_WAIT_NS / 1000000);
    return false;
}

/* Lets the threads go, and waits until each parked one has read its new PC: the next stop reuses the slots. */
static void stop_release(void) {
    int g = atomic_load(&stop.gen);
    atomic_store(&stop.gen, 0);
    atomic_store(&stop.released, g);
    syscall(SYS_futex, &stop.released, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
    int n = atomic_load(&stop.n);
    for (int i = 0; i < n; i++) {
        if (atomic_load(&stop.t[i].parked) != g) continue;
        while (atomic_load(&stop.t[i].left) != g) sched_yield();
    }
}

/* Every core that runs this process's threads executes a serializing instruction (cross-modifying code). */
static void sync_cores(void) {
    static int registered; /* 1 registered, -1 not available */
    if (!registered) {
        registered = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0 ? 1 : -1;
    }
    if (registered > 0) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

bool ggprof_patch_entry(void *fn, size_t size, void *hook, void *_Atomic *original, char *why, size_t why_len) {
#define FAIL(...) do { snprintf(why, why_len, __VA_ARGS__); goto fail; } while (0)
    cs_insn *all = NULL;
    size_t   n_all = 0;
    unsigned char *tr = NULL;
    long     pg = sysconf(_SC_PAGESIZE);
    if (!ggprof_patch_supported()) {
        snprintf(why, why_len, "no disassembler (libcapstone.so.4, Debian's libcapstone4)");
        return false;
    }
    if (size == 0) {
        snprintf(why, why_len, "its size is unknown");
        return false;
    }
    unsigned char *f = fn;
    size_t skip = 0;
    static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
    if (memcmp(f, endbr64, 4) == 0) skip = 4; /* indirect calls land on it: the jump goes after it */
    n_all = cs.disasm(cs.h, f, size, (uint64_t) (uintptr_t) f, 0, &all);
    if (n_all == 0) FAIL("capstone decodes nothing at its entry");
    /* The instructions the 5-byte jump displaces. */
    size_t first = 0, n_moved = 0, covered = 0;
    while (first < n_all && all[first].address < (uint64_t) (uintptr_t) (f + skip)) first++;
    while (first + n_moved < n_all && covered < 5) {
        const cs_insn *in = &all[first + n_moved];
        if (in->address != (uint64_t) (uintptr_t) (f + skip + covered)) FAIL("instructions do not follow at +%zu", covered);
        covered += in->size;
        n_moved++;
        if (covered < 5 && (has_group(in, CS_GRP_RET) || (has_group(in, CS_GRP_JUMP) && !rel_target(in)))) {
            FAIL("it leaves (%s) within its first 5 bytes", in->mnemonic);
        }
        /* A thread inside the call would return into the displaced bytes, where no stop can see it. */
        if (covered < 5 && has_group(in, CS_GRP_CALL)) FAIL("it calls (%s) within its first 5 bytes", in->mnemonic);
    }
    /* Each displaced instruction starts within the jump's 5 bytes: at most 4 + 15 bytes. */
    if (covered > PATCH_MAX_DISPLACED) FAIL("its first instructions are %zu bytes long", covered);
    if (covered < 5) FAIL("it is %zu bytes long, shorter than the jump", (size_t) (all[n_all - 1].address + all[n_all - 1].size - (uintptr_t) f));
    uint64_t lo = (uint64_t) (uintptr_t) (f + skip), hi = lo + covered;
    /* Nothing in the function may branch into the displaced bytes (past their first), nor they into each other. */
    for (size_t i = 0; i < n_all; i++) {
        uint64_t t = rel_target(&all[i]);
        if (t >= lo && t < hi) FAIL("%s at +%#lx branches into the displaced bytes", all[i].mnemonic,
                                    (unsigned long) (all[i].address - (uint64_t) (uintptr_t) f));
    }
    tr = page_near((uintptr_t) f);
    if (!tr) FAIL("no page within reach of it for the trampoline");
    /* The trampoline: the displaced instructions, moved; a jump back; then the stub the entry jumps to. */
    unsigned char *o = tr;
    uint8_t  at_entry[PATCH_MAX_DISPLACED], at_tr[PATCH_MAX_DISPLACED]; /* each displaced instruction's offsets */
    for (size_t k = 0; k < n_moved; k++) {
        const cs_insn *in = &all[first + k];
        uint64_t t = rel_target(in);
        at_entry[k] = (uint8_t) (in->address - lo);
        at_tr[k]    = (uint8_t) (o - tr);
        int64_t  here = (int64_t) (uintptr_t) o;
        if (t) {
            const uint8_t *op = in->detail->x86.opcode;
            if (has_group(in, CS_GRP_CALL)) {
                *o++ = 0xe8;
            } else if (in->id == X86_INS_JMP) {
                *o++ = 0xe9;
            } else if (op[0] >= 0x70 && op[0] <= 0x7f) {
                *o++ = 0x0f, *o++ = (unsigned char) (0x80 + (op[0] - 0x70));
            } else if (op[0] == 0x0f && op[1] >= 0x80 && op[1] <= 0x8f) {
                *o++ = 0x0f, *o++ = op[1];
            } else {
                FAIL("%s at its entry cannot be moved", in->mnemonic);
            }
            int64_t rel = (int64_t) t - ((int64_t) (uintptr_t) o + 4);
            if (!fits32(rel)) FAIL("the target of %s is out of reach", in->mnemonic);
            put32(o, (int32_t) rel);
            o += 4;
            continue;
        }
        memcpy(o, in->bytes, in->size);
        if (rip_relative(in)) {
            const cs_x86 *x = &in->detail->x86;
            if (x->encoding.disp_offset == 0 || x->encoding.disp_size != 4) FAIL("%s: no 32-bit displacement", in->mnemonic);
            int64_t disp = x->disp + ((int64_t) in->address - here);
            if (!fits32(disp)) FAIL("%s's operand is out of reach of the trampoline", in->mnemonic);
            put32(o + x->encoding.disp_offset, (int32_t) disp);
        }
        o += in->size;
    }
    *o++ = 0xe9;
    put32(o, (int32_t) ((int64_t) hi - ((int64_t) (uintptr_t) o + 4)));
    o += 4;
    unsigned char *stub = o;
    *o++ = 0xff, *o++ = 0x25, put32(o, 0), o += 4; /* jmp *0(%rip) */
    memcpy(o, &hook, sizeof(hook));
    o += sizeof(hook);
    if (mprotect(tr, (size_t) pg, PROT_READ | PROT_EXEC) != 0) FAIL("mprotect of the trampoline failed");
    /* The entry: jmp stub, the rest of the displaced bytes int3 (nothing branches there: checked above). */
    unsigned char jmp[PATCH_MAX_DISPLACED];
    jmp[0] = 0xe9;
    put32(jmp + 1, (int32_t) ((int64_t) (uintptr_t) stub - ((int64_t) lo + 5)));
    memset(jmp + 5, 0xcc, sizeof(jmp) - 5);
    uintptr_t p0 = (uintptr_t) (f + skip) & ~(uintptr_t) (pg - 1), p1 = ((uintptr_t) hi + (uintptr_t) pg - 1) & ~(uintptr_t) (pg - 1);
    pthread_mutex_lock(&stop_mu);
    if (!stop_others(why, why_len)) {
        pthread_mutex_unlock(&stop_mu);
        goto fail;
    }
    /* Every other thread is parked (or asleep in the kernel with the signal blocked): from here to stop_release,
     * system calls only. A thread inside the displaced bytes goes on at the trampoline's copy of its instruction. */
    const char *refused = NULL;
    int  n = atomic_load(&stop.n);
    bool asleep = false;
    for (int i = 0; i < n && !refused; i++) {
        if (stop.t[i].state != T_PARKED && stop.t[i].state != T_ASLEEP) continue;
        uintptr_t pc = atomic_load(&stop.t[i].pc);
        asleep |= stop.t[i].state == T_ASLEEP;
        if (pc <= lo || pc >= hi) continue;
        size_t k = 0;
        while (k < n_moved && at_entry[k] != pc - lo) k++;
        if (k == n_moved) refused = "a thread stopped in the middle of one of its first instructions";
        else if (stop.t[i].state == T_ASLEEP) refused = "a thread that blocks signals sleeps inside its first instructions";
        else atomic_store(&stop.t[i].newpc, (uintptr_t) (tr + at_tr[k]));
    }
    /* With a thread asleep in the kernel (it may wake): a self-jump first, so that one arriving spins until the
     * jump is whole; its two bytes must be one store. */
    if (!refused && asleep && lo % 64 == 63) refused = "a thread that blocks signals is asleep and its entry straddles a cache line";
    if (!refused && mprotect((void *) p0, p1 - p0, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) refused = "its code cannot be made writable";
    if (!refused) {
        /* The wrapper forwards to the trampoline before any thread can reach it through the jump. */
        atomic_store_explicit(original, (void *) tr, memory_order_release);
        if (asleep) {
            uint16_t spin = 0xfeeb, head;
            memcpy(&head, jmp, 2);
            __atomic_store_n((uint16_t *) (f + skip), spin, __ATOMIC_SEQ_CST);
            sync_cores();
            memcpy(f + skip + 2, jmp + 2, covered - 2);
            sync_cores();
            __atomic_store_n((uint16_t *) (f + skip), head, __ATOMIC_SEQ_CST);
        } else {
            memcpy(f + skip, jmp, covered);
        }
        mprotect((void *) p0, p1 - p0, PROT_READ | PROT_EXEC);
        __builtin___clear_cache((char *) f, (char *) hi);
        sync_cores();
    } else {
        for (int i = 0; i < n; i++) atomic_store(&stop.t[i].newpc, 0);
    }
    stop_release(); /* parked threads leave the handler through sigreturn: serializing */
    pthread_mutex_unlock(&stop_mu);
    if (refused) FAIL("%s", refused);
    cs.free(all, n_all);
    return true;
fail:
    if (all) cs.free(all, n_all);
    if (tr) munmap(tr, (size_t) pg);
    return false;
#undef FAIL
}

long ggprof_patch_first_arg_slot(const void *fn, size_t size) {
    if (!ggprof_patch_supported() || !fn) return -1;
    cs_insn *in = NULL;
    size_t   n  = cs.disasm(cs.h, fn, size && size < 64 ? size : 64, (uint64_t) (uintptr_t) fn, 8, &in);
    long     slot = -1, loaded = -1;
    x86_reg  reg  = X86_REG_INVALID;
    for (size_t i = 0; i < n && slot < 0; i++) {
        const cs_x86 *x = &in[i].detail->x86;
        bool branch = in[i].id == X86_INS_JMP || in[i].id == X86_INS_CALL;
        for (int k = 0; k < x->op_count; k++) {
            const cs_x86_op *op = &x->operands[k];
            if (op->type == X86_OP_MEM && op->mem.base == X86_REG_RDI && op->mem.index == X86_REG_INVALID &&
                op->mem.disp > 0 && op->mem.disp % 8 == 0) {
                if (branch) slot = (long) op->mem.disp;
                else if (in[i].id == X86_INS_MOV && x->op_count == 2 && k == 1 && x->operands[0].type == X86_OP_REG) {
                    loaded = (long) op->mem.disp, reg = x->operands[0].reg;
                }
            } else if (branch && op->type == X86_OP_REG && op->reg == reg && loaded > 0) {
                slot = loaded;
            }
        }
    }
    if (n) cs.free(in, n);
    return slot;
}

#else
bool ggprof_patch_supported(void) { return false; }
bool ggprof_patch_entry(void *fn, size_t size, void *hook, void *_Atomic *original, char *why, size_t why_len) {
    (void) fn, (void) size, (void) hook, (void) original;
    snprintf(why, why_len, "entry patching is implemented for x86-64 only");
    return false;
}
long ggprof_patch_first_arg_slot(const void *fn, size_t size) {
    (void) fn, (void) size;
    return -1;
}
#endif
