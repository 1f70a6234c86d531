/* Unit tests of entry patching (engine/patch.c) and of the ELF reader that finds what to patch (engine/elf_image.c),
 * on functions of this test program itself: patched entries reach the hook, trampolines run the original (its
 * RIP-relative loads and calls moved), a function that branches into its first bytes is refused and left as it was,
 * and the symbol table finds static functions that dlsym cannot. */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <sys/mman.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "elf_image.h"
#include "harness.h"
#include "patch.h"

/* noinline/noclone and used: the compiler keeps each a real function with its own entry. volatile data makes the
 * first instructions RIP-relative loads. */
static volatile int g_counter = 40;
__attribute__((noinline, noclone, used)) int target_add(int a, int b) { return a + b + g_counter; }
__attribute__((noinline, noclone, used)) static int helper_twice(int x) { return 2 * x + g_counter; }
__attribute__((noinline, noclone, used)) int target_calls(int x) { return helper_twice(x) + 1; }

static int (*orig_add)(int, int);
static int (*orig_calls)(int);
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
    bool ok = ggprof_patch_entry((void *) target_add, size, (void *) hook_add, (void **) &orig_add, why, sizeof(why));
    if (!ok) printf("# refused: %s\n", why);
    CHECK(ok);
    int (*volatile call)(int, int) = target_add; /* called through a pointer: no constant folding */
    CHECK_EQ_INT(call(1, 2), 43000);
    CHECK_EQ_INT(orig_add(1, 2), 43);
    g_counter = 50;
    CHECK_EQ_INT(call(1, 2), 53000); /* the moved load still reads the variable */
    g_counter = 40;

    size = size_of("target_calls", &a);
    ok   = ggprof_patch_entry((void *) target_calls, size, (void *) hook_calls, (void **) &orig_calls, why, sizeof(why));
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
    void *orig = NULL;
    char  why[160] = "";
    CHECK(!ggprof_patch_entry(p, sizeof(code), (void *) hook_calls, &orig, why, sizeof(why)));
    CHECK(strstr(why, "branches into") != NULL);
    CHECK(memcmp(p, code, sizeof(code)) == 0); /* nothing written */
    munmap(p, (size_t) pg);
}

/* ggml_backend_graph_compute_async's shape: `return backend->iface.graph_compute(backend, cgraph)`. */
struct fake_backend {
    void *guid;
    void *slots[12];
};
/* Not instrumented under make test SAN=...: a sanitizer's checks would come before the load. */
__attribute__((noinline, noclone, used, no_sanitize("address", "undefined"))) int fake_compute_async(struct fake_backend *b,
                                                                                                    int x) {
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

int main(void) {
    int failures = 0;
    RUN(test_elf_finds_functions);
    RUN(test_patch_runs_hook_and_original);
    RUN(test_patch_refuses_branch_into_entry);
    RUN(test_first_arg_slot);
    return failures ? 1 : 0;
}
