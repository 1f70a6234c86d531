/* Unit tests of entry patching (engine/patch.c), of the thread stopping it writes under (engine/stop_threads.c), and
 * of the ELF reader that finds what to patch (engine/elf_image.c), on functions of this test program itself: patched
 * entries reach the hook, trampolines run the original (its RIP-relative loads and calls moved), a function that
 * branches into its first bytes is refused and left as it was, stopped threads run no further until released (one
 * asleep with signals blocked counts as stopped, one spinning with them blocked refuses the stop), patching stays
 * safe while 8 threads call the function (1000 fresh copies of two prologues), 18 displaced bytes are moved whole,
 * and the symbol table finds static functions that dlsym cannot. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "elf_image.h"
#include "harness.h"
#include "patch.h"
#include "stop_threads.h"

/* noinline/noclone and used: the compiler keeps each a real function with its own entry. volatile data makes the
 * first instructions RIP-relative loads. */
static volatile int g_counter = 40;
__attribute__((noinline, noclone, used)) int target_add(int a, int b) { return a + b + g_counter; }
__attribute__((noinline, noclone, used)) static int helper_twice(int x) { return 2 * x + g_counter; }
__attribute__((noinline, noclone, used)) int target_calls(int x) { return helper_twice(x) + 1; }

static void *_Atomic orig_add_slot, *_Atomic orig_calls_slot; /* the wrappers' slots, as the engine's */
#define orig_add   ((int (*)(int, int)) atomic_load(&orig_add_slot))
#define orig_calls ((int (*)(int)) atomic_load(&orig_calls_slot))
static int hook_add(int a, int b) { return orig_add(a, b) * 1000; }
static int hook_calls(int x) { return orig_calls(x) * 1000; }

static int main_bias(struct dl_phdr_info *info, size_t size, void *data) {
    (void) size;
    *(uintptr_t *) data = info->dlpi_addr; /* the first object is the program */
    return 1;
}

/* The size and run-time address of this program's function `name`, from its symbol table. */
static size_t size_of(const char *name, uintptr_t *addr) {
    char    exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    uintptr_t bias = 0;
    dl_iterate_phdr(main_bias, &bias);
    ggprof_elf e;
    size_t     size = 0;
    *addr = 0;
    if (!ggprof_elf_open(&e, exe, bias)) return 0;
    *addr = ggprof_elf_func(&e, name, &size);
    ggprof_elf_close(&e);
    return size;
}

static void test_elf_finds_functions(void) {
    uintptr_t a = 0;
    CHECK(size_of("target_add", &a) > 0);
    CHECK(a == (uintptr_t) target_add);
    CHECK(size_of("helper_twice", &a) > 0); /* a static function: in .symtab only */
    CHECK(a == (uintptr_t) helper_twice);
    CHECK(size_of("no_such_function_here", &a) == 0);
    CHECK(a == 0);
}

static void test_patch_runs_hook_and_original(void) {
    if (!ggprof_patch_supported()) {
        printf("# no libcapstone.so.4: patching untested\n");
        CHECK(0);
        return;
    }
    uintptr_t a = 0;
    size_t    size = size_of("target_add", &a);
    char      why[160] = "";
    CHECK_EQ_INT(target_add(1, 2), 43);
    bool ok = ggprof_patch_entry((void *) target_add, size, (void *) hook_add, &orig_add_slot, why, sizeof(why));
    if (!ok) printf("# refused: %s\n", why);
    CHECK(ok);
    int (*volatile call)(int, int) = target_add; /* called through a pointer: no constant folding */
    CHECK_EQ_INT(call(1, 2), 43000);
    CHECK_EQ_INT(orig_add(1, 2), 43);
    g_counter = 50;
    CHECK_EQ_INT(call(1, 2), 53000); /* the moved load still reads the variable */
    g_counter = 40;

    size = size_of("target_calls", &a);
    ok   = ggprof_patch_entry((void *) target_calls, size, (void *) hook_calls, &orig_calls_slot, why, sizeof(why));
    if (!ok) printf("# refused: %s\n", why);
    CHECK(ok);
    int (*volatile c2)(int) = target_calls;
    CHECK_EQ_INT(c2(5), 51000);
}

/* A function whose loop jumps back to its very first instruction: the jump would land in the patch. Hand-written
 * machine code, in a page of its own: endbr64; dec edi; jnz back to the dec; mov eax, edi; ret. */
static void test_patch_refuses_branch_into_entry(void) {
    if (!ggprof_patch_supported()) return;
    static const unsigned char code[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0xff, 0xcf, 0x75, 0xfc, 0x89, 0xf8, 0xc3 };
    long pg = sysconf(_SC_PAGESIZE);
    unsigned char *p = mmap(NULL, (size_t) pg, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    if (p == MAP_FAILED) return;
    memcpy(p, code, sizeof(code));
    void *_Atomic orig = NULL;
    char  why[160] = "";
    CHECK(!ggprof_patch_entry(p, sizeof(code), (void *) hook_calls, &orig, why, sizeof(why)));
    CHECK(atomic_load(&orig) == NULL); /* nor the slot */
    CHECK(strstr(why, "branches into") != NULL);
    CHECK(memcmp(p, code, sizeof(code)) == 0); /* nothing written */
    munmap(p, (size_t) pg);
}

/* ggml_backend_graph_compute_async's shape: `return backend->iface.graph_compute(backend, cgraph)`. */
struct fake_backend {
    void *guid;
    void *slots[12];
};
/* Not instrumented under make test SAN=...: a sanitizer's checks (TSan's function entry too) would come before the
 * load. */
__attribute__((noinline, noclone, used, no_sanitize("address", "undefined", "thread"))) int
fake_compute_async(struct fake_backend *b, int x) {
    return ((int (*)(struct fake_backend *, int)) b->slots[10])(b, x);
}

static void test_first_arg_slot(void) {
    if (!ggprof_patch_supported()) return;
    uintptr_t a = 0;
    size_t    size = size_of("fake_compute_async", &a);
    CHECK_EQ_INT(ggprof_patch_first_arg_slot((const void *) fake_compute_async, size),
                 (long) offsetof(struct fake_backend, slots[10]));
    CHECK_EQ_INT(ggprof_patch_first_arg_slot((const void *) target_add, 0), -1);
}


/* ---- Stopping threads (engine/stop_threads.c). Spinners count their turns: a stopped one counts no further until
 * released. One kind blocks every signal first: spinning, it cannot be stopped; asleep in a system call, it counts as
 * stopped where it sleeps. */
#define SPINNERS 3
enum { SPIN, SPIN_BLOCKED, SLEEP_BLOCKED };
static struct { _Atomic long turns; char pad[56]; } spin_count[SPINNERS + 1];
static _Atomic int spin_quit;
struct spinner { int slot, kind; };

__attribute__((noinline, noclone, used)) static void *spinner(void *arg) {
    const struct spinner *sp = arg;
    if (sp->kind != SPIN) {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
    }
    while (!atomic_load(&spin_quit)) {
        atomic_fetch_add_explicit(&spin_count[sp->slot].turns, 1, memory_order_relaxed);
        if (sp->kind == SLEEP_BLOCKED) {
            struct timespec ts = { 0, 20000000 };
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

/* Starts n threads of kinds[i] and waits until each has counted a turn. */
static void spinners_start(pthread_t *th, struct spinner *sp, const int *kinds, int n) {
    atomic_store(&spin_quit, 0);
    for (int i = 0; i < n; i++) {
        sp[i] = (struct spinner) { i, kinds[i] };
        atomic_store(&spin_count[i].turns, 0);
        pthread_create(&th[i], NULL, spinner, &sp[i]);
    }
    for (int i = 0; i < n; i++) {
        while (atomic_load(&spin_count[i].turns) == 0) sched_yield();
    }
}

static void spinners_stop(pthread_t *th, int n) {
    atomic_store(&spin_quit, 1);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
}

/* What a stop finds before any spinner starts: the threads a runtime keeps (TSan's, asleep with signals blocked);
 * the tests count the spinners on top of them. */
struct stop_tally { int listed, parked, asleep, at_pc; };
static struct stop_tally stop_and_count(uintptr_t fn, size_t size, bool *stopped) {
    struct stop_tally c = { 0, 0, 0, 0 };
    char              why[160] = "";
    *stopped = ggprof_stop_others(why, sizeof(why));
    if (!*stopped) {
        printf("# not stopped: %s\n", why);
        return c;
    }
    /* Until the release: system calls only (a parked thread may hold a lock). */
    c.listed = ggprof_stop_count();
    for (int i = 0; i < c.listed; i++) {
        uintptr_t pc = 0;
        bool      asleep = false;
        if (!ggprof_stop_thread(i, &pc, &asleep)) continue;
        c.parked += !asleep;
        c.asleep += asleep && pc != 0;
        c.at_pc += pc >= fn && pc < fn + size;
    }
    return c;
}

/* The same before any spinner starts, after a thread made and joined: TSan starts its own at the first. */
static void *no_op(void *arg) { return arg; }
static struct stop_tally stop_baseline(bool *stopped) {
    pthread_t t;
    if (pthread_create(&t, NULL, no_op, NULL) == 0) pthread_join(t, NULL);
    struct stop_tally c = stop_and_count(0, 0, stopped);
    if (*stopped) ggprof_stop_release();
    return c;
}

/* Whether spinner i counts again within 5 s. */
static bool spinner_goes_on(int i) {
    long before = atomic_load(&spin_count[i].turns);
    for (long t0 = (long) time(NULL); time(NULL) - t0 < 5;) {
        if (atomic_load(&spin_count[i].turns) != before) return true;
        sched_yield();
    }
    return false;
}

static void test_stop_parks_threads(void) {
    static const int kinds[SPINNERS] = { SPIN, SPIN, SPIN };
    pthread_t      th[SPINNERS];
    struct spinner sp[SPINNERS];
    uintptr_t      fn = 0;
    size_t         size = size_of("spinner", &fn);
    CHECK(size > 0);
    bool stopped;
    struct stop_tally base = stop_baseline(&stopped);
    CHECK(stopped);
    spinners_start(th, sp, kinds, SPINNERS);
    struct stop_tally c = stop_and_count(fn, size, &stopped);
    if (!stopped) {
        CHECK(stopped);
        spinners_stop(th, SPINNERS);
        return;
    }
    long before[SPINNERS], after[SPINNERS];
    for (int i = 0; i < SPINNERS; i++) before[i] = atomic_load(&spin_count[i].turns);
    struct timespec ts = { 0, 30000000 };
    nanosleep(&ts, NULL);
    for (int i = 0; i < SPINNERS; i++) after[i] = atomic_load(&spin_count[i].turns);
    ggprof_stop_release();
    CHECK_EQ_INT(c.listed, base.listed + SPINNERS);
    CHECK_EQ_INT(c.parked, base.parked + SPINNERS);
#if !defined(__SANITIZE_THREAD__) /* TSan runs a deferred signal's handler from its own code: the PC is TSan's */
    CHECK_EQ_INT(c.at_pc, SPINNERS); /* where each was interrupted: inside its loop */
#endif
    for (int i = 0; i < SPINNERS; i++) CHECK_EQ_INT(after[i], before[i]); /* no turn while stopped */
    for (int i = 0; i < SPINNERS; i++) CHECK(spinner_goes_on(i));
    /* A second stop reuses the slots. */
    stop_and_count(fn, size, &stopped);
    if (stopped) ggprof_stop_release();
    CHECK(stopped);
    spinners_stop(th, SPINNERS);
}

static void test_stop_with_signals_blocked(void) {
    pthread_t      th[2];
    struct spinner sp[2];
    bool           stopped;
    struct stop_tally base = stop_baseline(&stopped);
    CHECK(stopped);
    /* Asleep in the kernel with every signal blocked: stopped, at a PC it reports, and not movable. */
    static const int sleeping[2] = { SPIN, SLEEP_BLOCKED };
    spinners_start(th, sp, sleeping, 2);
    struct stop_tally c = stop_and_count(0, 0, &stopped);
    if (stopped) ggprof_stop_release();
    CHECK(stopped);
    CHECK_EQ_INT(c.listed, base.listed + 2);
    CHECK_EQ_INT(c.parked, base.parked + 1);
    CHECK_EQ_INT(c.asleep, base.asleep + 1);
    spinners_stop(th, 2);
    /* Running with every signal blocked: the stop is refused, naming it, and the others go on. */
    static const int spinning[2] = { SPIN, SPIN_BLOCKED };
    spinners_start(th, sp, spinning, 2);
    char why[160] = "";
    stopped = ggprof_stop_others(why, sizeof(why));
    if (stopped) ggprof_stop_release();
    CHECK(!stopped);
    CHECK(strstr(why, "did not stop within") != NULL);
    CHECK(spinner_goes_on(0));
    CHECK(spinner_goes_on(1));
    spinners_stop(th, 2);
}

/* ---- Patching while 8 threads call the function (docs/how-it-works.md, "Patching a running program"): each
 * trial copies the code into a fresh page, lets the threads call the copy, patches it, and waits until the hook is
 * reached. Trials run in a child per batch, so that a thread killed by the patch is counted, not fatal. */
#define STRESS_THREADS 8
#define STRESS_TRIALS  1000
#define STRESS_BATCH   100

typedef long (*fn2)(long, long);
static fn2 _Atomic   s_fn;
static void *_Atomic s_orig;
static _Atomic long  s_hooked, s_wrong;
static _Atomic int   s_quit;
static long          s_plus; /* the function computes a + b + s_plus */
static struct { _Atomic long calls; char pad[56]; } s_count[STRESS_THREADS];

static long stress_hook(long a, long b) {
    atomic_fetch_add(&s_hooked, 1);
    return ((fn2) atomic_load(&s_orig))(a, b);
}

static void *stress_worker(void *arg) {
    long t = (long) (intptr_t) arg;
    for (long i = t; !atomic_load(&s_quit); i += STRESS_THREADS) {
        fn2 f = atomic_load(&s_fn);
        if (f(i, 3) != i + 3 + s_plus) atomic_fetch_add(&s_wrong, 1);
        atomic_fetch_add_explicit(&s_count[t].calls, 1, memory_order_relaxed);
        if ((i / STRESS_THREADS) % 4096 == 0) sched_yield(); /* 8 threads on 2 busy cores: a stop needs them all */
    }
    return NULL;
}

static long stress_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct stress_shared {
    _Atomic int started, refused, wrong, stalled;
    char        why[160];
};

/* One child: trials from sh->started until `end`, each on a fresh copy of code at page offset `at`. */
static void stress_child(struct stress_shared *sh, int end, const unsigned char *code, size_t len, size_t at) {
    long      pg = sysconf(_SC_PAGESIZE);
    pthread_t th[STRESS_THREADS];
    for (int t = 0; t < STRESS_THREADS; t++) {
        atomic_store(&s_count[t].calls, 0);
    }
    for (;;) {
        int trial = atomic_load(&sh->started);
        if (trial >= end) break;
        atomic_store(&sh->started, trial + 1);
        unsigned char *p = mmap(NULL, (size_t) pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) _exit(4);
        memset(p, 0xcc, (size_t) pg);
        memcpy(p + at, code, len);
        mprotect(p, (size_t) pg, PROT_READ | PROT_EXEC);
        atomic_store(&s_fn, (fn2) (void *) (p + at));
        if (trial % STRESS_BATCH == 0 || trial == atomic_load(&sh->started) - 1) {
            static bool running;
            if (!running) {
                running = true;
                for (int t = 0; t < STRESS_THREADS; t++) pthread_create(&th[t], NULL, stress_worker, (void *) (intptr_t) t);
            }
        }
        /* Every thread calls the new copy before it is patched. */
        long seen[STRESS_THREADS], t0 = stress_now_ms();
        for (int t = 0; t < STRESS_THREADS; t++) seen[t] = atomic_load(&s_count[t].calls);
        for (int busy = 0; busy < STRESS_THREADS / 2 && stress_now_ms() - t0 < 5000;) { /* half the threads call it */
            busy = 0;
            for (int t = 0; t < STRESS_THREADS; t++) busy += atomic_load(&s_count[t].calls) >= seen[t] + 2;
            if (busy < STRESS_THREADS / 2) sched_yield();
        }
        long  hooked = atomic_load(&s_hooked);
        char  why[160] = "";
        if (!ggprof_patch_entry(p + at, len, (void *) stress_hook, &s_orig, why, sizeof(why))) {
            if (!atomic_fetch_add(&sh->refused, 1)) snprintf(sh->why, sizeof(sh->why), "%s", why);
            continue;
        }
        t0 = stress_now_ms();
        while (atomic_load(&s_hooked) < hooked + 2 && stress_now_ms() - t0 < 5000) sched_yield();
        if (atomic_load(&s_hooked) < hooked + 2) atomic_fetch_add(&sh->stalled, 1);
    }
    atomic_store(&s_quit, 1);
    for (int t = 0; t < STRESS_THREADS; t++) pthread_join(th[t], NULL);
    atomic_fetch_add(&sh->wrong, (int) atomic_load(&s_wrong));
    _exit(0);
}

/* Runs STRESS_TRIALS trials on code; returns how many killed the process. */
static int stress(const char *name, const unsigned char *code, size_t len, size_t at, long plus) {
    struct stress_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) return -1;
    memset(sh, 0, sizeof(*sh));
    s_plus = plus;
    int  killed = 0, other = 0;
    long t0     = stress_now_ms();
    while (atomic_load(&sh->started) < STRESS_TRIALS) {
        int   end = atomic_load(&sh->started) + STRESS_BATCH;
        pid_t pid = fork();
        if (pid == 0) stress_child(sh, end < STRESS_TRIALS ? end : STRESS_TRIALS, code, len, at);
        int st = 0;
        waitpid(pid, &st, 0);
        if (WIFSIGNALED(st)) killed++;
        else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) other++;
    }
    printf("# %s: %d trials, %d killed, %d wrong results, %d refused%s%s, %d without the hook reached, %ld ms\n", name,
           STRESS_TRIALS, killed, atomic_load(&sh->wrong), atomic_load(&sh->refused), sh->why[0] ? ": " : "", sh->why,
           atomic_load(&sh->stalled), stress_now_ms() - t0);
    CHECK_EQ_INT(killed, 0);
    CHECK_EQ_INT(other, 0);
    CHECK_EQ_INT(atomic_load(&sh->wrong), 0);
    CHECK_EQ_INT(atomic_load(&sh->refused), 0);
    CHECK_EQ_INT(atomic_load(&sh->stalled), 0);
    munmap(sh, sizeof(*sh));
    return killed;
}

/* gcc -O2 -fcf-protection's shape: endbr64; push r12; push rbp; push rbx; lea rax, [rdi + rsi]; add rax, 7; pop rbx;
 * pop rbp; pop r12; ret. The jump displaces the pushes and the lea. */
static void test_patch_while_threads_call_endbr(void) {
    if (!ggprof_patch_supported()) return;
    static const unsigned char code[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x54, 0x55, 0x53, 0x48, 0x8d, 0x04, 0x37,
                                          0x48, 0x83, 0xc0, 0x07, 0x5b, 0x5d, 0x41, 0x5c, 0xc3 };
    stress("endbr64 + pushes", code, sizeof(code), 16, 7);
}

/* push rbp; mov rbp, rsp; lea rax, [rdi + 1]; add rax, rsi; pop rbp; ret, 4 bytes before a 64-byte boundary: the
 * jump's 5 bytes straddle two cache lines. */
static void test_patch_while_threads_call_straddling(void) {
    if (!ggprof_patch_supported()) return;
    static const unsigned char code[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x8d, 0x47, 0x01, 0x48, 0x01, 0xf0, 0x5d, 0xc3 };
    stress("push; mov; lea across a cache line", code, sizeof(code), 60, 1);
}

/* The most the jump can displace: a 4-byte instruction, then a 14-byte one (lock add qword fs:[rax + rcx*8], 1),
 * 18 bytes moved whole to the trampoline and the rest of the entry int3. */
static void test_patch_longest_displaced(void) {
    if (!ggprof_patch_supported()) return;
    static const unsigned char code[] = { 0x48, 0x8d, 0x47, 0x01, 0x64, 0xf0, 0x48, 0x81, 0x84, 0xc8, 0, 0, 0, 0,
                                          1, 0, 0, 0, 0xc3 };
    long pg = sysconf(_SC_PAGESIZE);
    unsigned char *p = mmap(NULL, (size_t) pg, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    if (p == MAP_FAILED) return;
    memcpy(p, code, sizeof(code));
    void *_Atomic orig = NULL;
    char why[160] = "";
    bool ok = ggprof_patch_entry(p, sizeof(code), (void *) hook_calls, &orig, why, sizeof(why));
    if (!ok) printf("# refused: %s\n", why);
    CHECK(ok);
    CHECK_EQ_INT(p[0], 0xe9);
    int int3 = 0;
    for (int i = 5; i < 18; i++) int3 += p[i] == 0xcc;
    CHECK_EQ_INT(int3, 13);          /* the displaced bytes after the jump, and nothing beyond them */
    CHECK_EQ_INT(p[18], 0xc3);
    CHECK(ok && memcmp(atomic_load(&orig), code, 18) == 0); /* moved whole */
    munmap(p, (size_t) pg);
}

int main(void) {
    int failures = 0;
    RUN(test_elf_finds_functions);
    RUN(test_patch_runs_hook_and_original);
    RUN(test_patch_refuses_branch_into_entry);
    RUN(test_first_arg_slot);
    RUN(test_stop_parks_threads);
    RUN(test_stop_with_signals_blocked);
    RUN(test_patch_longest_displaced);
    RUN(test_patch_while_threads_call_endbr);
    RUN(test_patch_while_threads_call_straddling);
    return failures ? 1 : 0;
}
