/* Entry patching for ggml functions called directly inside a program (patch.h). Instructions are decoded with
 * capstone (Debian's libcapstone4, opened at run time: the injected library links nothing it does not need, and a
 * program that needs no patch never loads it). */
#include "patch.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/membarrier.h>

#include "stop_threads.h"

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

/* Every core that runs this process's threads executes a serializing instruction (cross-modifying code). */
static void sync_cores(void) {
    static int registered; /* 1 registered, -1 not available */
    if (!registered) {
        registered = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0 ? 1 : -1;
    }
    if (registered > 0) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

/* A patch in three steps, each refusing with why: decode the instructions the jump displaces, build the trampoline
 * that runs them moved, write the jump while the other threads are stopped. */
#define REFUSE(...)                                                                                            \
    do {                                                                                                       \
        snprintf(why, why_len, __VA_ARGS__);                                                                   \
        return false;                                                                                          \
    } while (0)

/* The entry's first instructions, which the 5-byte jump displaces. */
typedef struct {
    unsigned char *f;       /* the function */
    size_t         skip;    /* its endbr64 (4) or nothing (0): the jump goes after it */
    cs_insn       *all;     /* the function decoded, n_all instructions; the caller frees them */
    size_t         n_all;
    size_t         first, n_moved; /* all[first .. first + n_moved - 1] are displaced */
    size_t         covered; /* their bytes, 5 .. PATCH_MAX_DISPLACED */
    uint64_t       lo, hi;  /* where they lie: [lo, hi) */
} displaced;

/* The page the displaced instructions are moved to. */
typedef struct {
    unsigned char *tr;   /* the page (the caller unmaps it when the patch is refused) */
    unsigned char *stub; /* what the entry's jump reaches: a jump to the hook */
    uint8_t        at_entry[PATCH_MAX_DISPLACED], at_tr[PATCH_MAX_DISPLACED]; /* each displaced instruction's offsets */
} trampoline;

/* Decodes the function with capstone and finds the instructions the jump displaces; refuses one that cannot be moved
 * from there (it leaves, calls, or is branched into within them). */
static bool decode_displaced(displaced *d, void *fn, size_t size, char *why, size_t why_len) {
    unsigned char *f = d->f = fn;
    static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
    if (memcmp(f, endbr64, 4) == 0) d->skip = 4; /* indirect calls land on it: the jump goes after it */
    size_t skip = d->skip;
    d->n_all = cs.disasm(cs.h, f, size, (uint64_t) (uintptr_t) f, 0, &d->all);
    const cs_insn *all   = d->all;
    size_t         n_all = d->n_all;
    if (n_all == 0) REFUSE("capstone decodes nothing at its entry");
    size_t first = 0, n_moved = 0, covered = 0;
    while (first < n_all && all[first].address < (uint64_t) (uintptr_t) (f + skip)) first++;
    while (first + n_moved < n_all && covered < 5) {
        const cs_insn *in = &all[first + n_moved];
        if (in->address != (uint64_t) (uintptr_t) (f + skip + covered)) REFUSE("instructions do not follow at +%zu", covered);
        covered += in->size;
        n_moved++;
        if (covered < 5 && (has_group(in, CS_GRP_RET) || (has_group(in, CS_GRP_JUMP) && !rel_target(in)))) {
            REFUSE("it leaves (%s) within its first 5 bytes", in->mnemonic);
        }
        /* A thread inside the call would return into the displaced bytes, where no stop can see it. */
        if (covered < 5 && has_group(in, CS_GRP_CALL)) REFUSE("it calls (%s) within its first 5 bytes", in->mnemonic);
    }
    /* Each displaced instruction starts within the jump's 5 bytes: at most 4 + 15 bytes. */
    if (covered > PATCH_MAX_DISPLACED) REFUSE("its first instructions are %zu bytes long", covered);
    if (covered < 5) REFUSE("it is %zu bytes long, shorter than the jump", (size_t) (all[n_all - 1].address + all[n_all - 1].size - (uintptr_t) f));
    uint64_t lo = (uint64_t) (uintptr_t) (f + skip), hi = lo + covered;
    /* Nothing in the function may branch into the displaced bytes (past their first), nor they into each other. */
    for (size_t i = 0; i < n_all; i++) {
        uint64_t t = rel_target(&all[i]);
        if (t >= lo && t < hi) REFUSE("%s at +%#lx branches into the displaced bytes", all[i].mnemonic,
                                      (unsigned long) (all[i].address - (uint64_t) (uintptr_t) f));
    }
    d->first = first, d->n_moved = n_moved, d->covered = covered, d->lo = lo, d->hi = hi;
    return true;
}

/* Builds the trampoline within reach of the function: the displaced instructions, moved (relative branches and
 * RIP-relative operands re-aimed); a jump back; then the stub the entry jumps to, which jumps to hook. */
static bool build_trampoline(trampoline *t, const displaced *d, void *hook, char *why, size_t why_len) {
    long pg = sysconf(_SC_PAGESIZE);
    unsigned char *tr = t->tr = page_near((uintptr_t) d->f);
    if (!tr) REFUSE("no page within reach of it for the trampoline");
    unsigned char *o = tr;
    for (size_t k = 0; k < d->n_moved; k++) {
        const cs_insn *in = &d->all[d->first + k];
        uint64_t target = rel_target(in);
        t->at_entry[k] = (uint8_t) (in->address - d->lo);
        t->at_tr[k]    = (uint8_t) (o - tr);
        int64_t  here = (int64_t) (uintptr_t) o;
        if (target) {
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
                REFUSE("%s at its entry cannot be moved", in->mnemonic);
            }
            int64_t rel = (int64_t) target - ((int64_t) (uintptr_t) o + 4);
            if (!fits32(rel)) REFUSE("the target of %s is out of reach", in->mnemonic);
            put32(o, (int32_t) rel);
            o += 4;
            continue;
        }
        memcpy(o, in->bytes, in->size);
        if (rip_relative(in)) {
            const cs_x86 *x = &in->detail->x86;
            if (x->encoding.disp_offset == 0 || x->encoding.disp_size != 4) REFUSE("%s: no 32-bit displacement", in->mnemonic);
            int64_t disp = x->disp + ((int64_t) in->address - here);
            if (!fits32(disp)) REFUSE("%s's operand is out of reach of the trampoline", in->mnemonic);
            put32(o + x->encoding.disp_offset, (int32_t) disp);
        }
        o += in->size;
    }
    *o++ = 0xe9;
    put32(o, (int32_t) ((int64_t) d->hi - ((int64_t) (uintptr_t) o + 4)));
    o += 4;
    t->stub = o;
    *o++ = 0xff, *o++ = 0x25, put32(o, 0), o += 4; /* jmp *0(%rip) */
    memcpy(o, &hook, sizeof(hook));
    o += sizeof(hook);
    if (mprotect(tr, (size_t) pg, PROT_READ | PROT_EXEC) != 0) REFUSE("mprotect of the trampoline failed");
    return true;
}

/* Stores the trampoline into *original, then writes the jump to its stub over the displaced bytes while every other
 * thread is stopped (stop_threads.h); a thread stopped inside them goes on at the trampoline's copy of its
 * instruction. Refused, with nothing written, when a thread stopped where it cannot be moved. */
static bool write_stopped(const displaced *d, const trampoline *t, void *_Atomic *original, char *why, size_t why_len) {
    long pg = sysconf(_SC_PAGESIZE);
    unsigned char *f = d->f;
    size_t   skip = d->skip, covered = d->covered;
    uint64_t lo = d->lo, hi = d->hi;
    /* The entry: jmp stub, the rest of the displaced bytes int3 (nothing branches there: checked by the decode). */
    unsigned char jmp[PATCH_MAX_DISPLACED];
    jmp[0] = 0xe9;
    put32(jmp + 1, (int32_t) ((int64_t) (uintptr_t) t->stub - ((int64_t) lo + 5)));
    memset(jmp + 5, 0xcc, sizeof(jmp) - 5);
    uintptr_t p0 = (uintptr_t) (f + skip) & ~(uintptr_t) (pg - 1), p1 = ((uintptr_t) hi + (uintptr_t) pg - 1) & ~(uintptr_t) (pg - 1);
    if (!ggprof_stop_others(why, why_len)) return false;
    /* Every other thread is parked (or asleep in the kernel with the signal blocked): from here to
     * ggprof_stop_release, system calls only. A thread inside the displaced bytes goes on at the trampoline's copy of
     * its instruction. */
    const char *refused = NULL;
    int  n = ggprof_stop_count();
    bool asleep = false;
    for (int i = 0; i < n && !refused; i++) {
        uintptr_t pc;
        bool      sleeping;
        if (!ggprof_stop_thread(i, &pc, &sleeping)) continue;
        asleep |= sleeping;
        if (pc <= lo || pc >= hi) continue;
        size_t k = 0;
        while (k < d->n_moved && t->at_entry[k] != pc - lo) k++;
        if (k == d->n_moved) refused = "a thread stopped in the middle of one of its first instructions";
        else if (sleeping) refused = "a thread that blocks signals sleeps inside its first instructions";
        else ggprof_stop_move(i, (uintptr_t) (t->tr + t->at_tr[k]));
    }
    /* With a thread asleep in the kernel (it may wake): a self-jump first, so that one arriving spins until the
     * jump is whole; its two bytes must be one store. */
    if (!refused && asleep && lo % 64 == 63) refused = "a thread that blocks signals is asleep and its entry straddles a cache line";
    if (!refused && mprotect((void *) p0, p1 - p0, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) refused = "its code cannot be made writable";
    if (!refused) {
        /* The wrapper forwards to the trampoline before any thread can reach it through the jump. */
        atomic_store_explicit(original, (void *) t->tr, memory_order_release);
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
        for (int i = 0; i < n; i++) ggprof_stop_move(i, 0);
    }
    ggprof_stop_release(); /* parked threads leave the handler through sigreturn: serializing */
    if (refused) REFUSE("%s", refused);
    return true;
}
#undef REFUSE

bool ggprof_patch_entry(void *fn, size_t size, void *hook, void *_Atomic *original, char *why, size_t why_len) {
    if (!ggprof_patch_supported()) {
        snprintf(why, why_len, "no disassembler (libcapstone.so.4, Debian's libcapstone4)");
        return false;
    }
    if (size == 0) {
        snprintf(why, why_len, "its size is unknown");
        return false;
    }
    displaced  d = { 0 };
    trampoline t = { 0 };
    bool ok = decode_displaced(&d, fn, size, why, why_len) && build_trampoline(&t, &d, hook, why, why_len) &&
              write_stopped(&d, &t, original, why, why_len);
    if (d.all) cs.free(d.all, d.n_all);
    if (!ok && t.tr) munmap(t.tr, (size_t) sysconf(_SC_PAGESIZE));
    return ok;
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
