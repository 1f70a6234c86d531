/* How ggml's calls reach the engine (reach.h): finding ggml inside a program, and patching the entries its code
 * calls directly. */
#include "reach.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "patch.h"
#include "wire.h"

static char            g_summary[1024];
static char            g_patched[512]; /* the entries patched, comma-separated */
static char            g_off[768];  /* the entries left unreached, and why, for the trace's notes */
static bool            g_embedded;
static bool            g_barrier_gomp; /* set before any barrier can run: at start, or before ggml first computes */
static uintptr_t       g_cpu_graph_compute; /* the CPU backend's graph_compute, where a symbol table names it */
static _Atomic long    g_iface_off = -2;    /* where a backend keeps iface.graph_compute: -2 unknown yet, -1 none */
static char            g_late_lib[128];     /* ggml found inside a library loaded after start: its file name */
static const ggprof_entry *g_entries;       /* the wrappers' patchable entries (interpose.c hands them, at load) */
static int             g_n_entries;

void ggprof_reach_set_entries(const ggprof_entry *entries, int n) {
    g_entries   = entries;
    g_n_entries = n;
}

const char *ggprof_reach_late_lib(void) { return g_late_lib; }

bool ggprof_reach_embeds(const ggprof_elf *e) {
    if (!ggprof_elf_func(e, "ggml_graph_compute", NULL)) return false;
    if (ggprof_elf_func(e, "ggml_barrier", NULL)) return !ggprof_elf_relocates(e, "ggml_barrier");
    /* An OpenMP build whose LTO inlined ggml_barrier into every caller (the fixture's static llama-completion built
     * with -march=native on an Intel Xeon: no call left): its barrier is libgomp's, which the engine times. Not a
     * shared libggml whose own calls to ggml_graph_compute go through its PLT (the wrappers reach those). */
    return ggprof_elf_relocates(e, "GOMP_barrier") && !ggprof_elf_relocates(e, "ggml_graph_compute");
}

bool ggprof_reach_embedded(void) { return g_embedded; }

bool ggprof_reach_barrier_via_gomp(void) { return g_barrier_gomp; }


void ggprof_reach_patch(const ggprof_elf *e, const char *path, const ggprof_entry *entries, int n) {
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    g_embedded = true;
    ggprof_engine_set_ggml((const void *) ggprof_elf_func(e, "ggml_graph_compute", NULL));
    bool llama = ggprof_elf_func(e, "llama_backend_init", NULL) != 0; /* llama.cpp inside too */
    g_barrier_gomp = ggprof_elf_relocates(e, "GOMP_barrier");
    char patched[512] = "", off[768] = "";
    for (int i = 0; i < n; i++) {
        const ggprof_entry *en = &entries[i];
        if (!llama && strncmp(en->name, "llama_", 6) == 0) continue;
        size_t    size = 0;
        uintptr_t fn   = ggprof_elf_func(e, en->name, &size);
        char      why[160];
        if (!fn) {
            snprintf(why, sizeof(why), "not in %s (inlined, or left out by the linker)", base);
        } else if (ggprof_patch_entry((void *) fn, size, en->wrapper, en->real, why, sizeof(why))) {
            /* The wrapper forwards to the trampoline from now on, whichever way a call reaches it: the patch
             * stored it in the wrapper's slot before its jump was written. */
            size_t k = strlen(patched);
            snprintf(patched + k, sizeof(patched) - k, "%s%s", k ? ", " : "", en->name);
            continue;
        }
        size_t k = strlen(off);
        snprintf(off + k, sizeof(off) - k, "%s%s (%s): %s", k ? "; " : "", en->name, en->serves, why);
    }
    snprintf(g_summary, sizeof(g_summary), "ggml inside %s (found through its %s)", base,
             ggprof_elf_has_symtab(e) ? "symbol table" : "dynamic symbols");
    snprintf(g_patched, sizeof(g_patched), "%s", patched[0] ? patched : "none");
    snprintf(g_off, sizeof(g_off), "%s", off);
    /* ggml-cpu.cpp is C++: its static function keeps a mangled name. */
    g_cpu_graph_compute = ggprof_elf_func(e, "ggml_backend_cpu_graph_compute", NULL);
    if (!g_cpu_graph_compute) {
        g_cpu_graph_compute = ggprof_elf_func(e, "_ZL30ggml_backend_cpu_graph_computeP12ggml_backendP11ggml_cgraph", NULL);
    }
    size_t    size  = 0;
    uintptr_t async = ggprof_elf_func(e, "ggml_backend_graph_compute_async", &size);
    if (async) {
        long slot = ggprof_patch_first_arg_slot((const void *) async, size);
        if (slot > 0) atomic_store(&g_iface_off, slot);
    }
}

/* The first words of struct ggml_backend: its guid pointer, then the interface table, whose layout changes between
 * releases; graph_compute is found where the CPU backend keeps ggml_backend_cpu_graph_compute. */
#define IFACE_MAX_WORDS 40

long ggprof_reach_iface_slot(const void *cpu_backend) {
    long off = atomic_load(&g_iface_off);
    if (off != -2 || !cpu_backend) return off;
    off = -1;
    if (g_cpu_graph_compute) {
        const uintptr_t *w = cpu_backend;
        for (int i = 1; i < IFACE_MAX_WORDS && off < 0; i++) {
            if (w[i] == g_cpu_graph_compute) off = (long) (i * sizeof(uintptr_t));
        }
    }
    atomic_store(&g_iface_off, off);
    return off;
}

/* "WHAT BASE: item, item, ..." as notes of at most a note's length each, cut between items. */
static void note_list(const char *what, const char *base, const char *items, const char *sep) {
    char   line[GGPROF_MAX_STR];
    size_t room = sizeof(line) - strlen(what) - strlen(base) - 4;
    while (*items) {
        size_t n = strlen(items);
        if (n > room) { /* the last separator that fits */
            n = room;
            while (n > 0 && strncmp(items + n, sep, strlen(sep)) != 0) n--;
            if (n == 0) n = room;
        }
        snprintf(line, sizeof(line), "%s %s: %.*s", what, base, (int) n, items);
        ggprof_trace_note("%s", line);
        items += n;
        if (strncmp(items, sep, strlen(sep)) == 0) items += strlen(sep);
    }
}

void ggprof_reach_after_find(const ggprof_ggml *g) {
    const char *base = strrchr(g->lib, '/') ? strrchr(g->lib, '/') + 1 : g->lib;
    if (!g_embedded) { /* a library with ggml inside, loaded after start (a Node addon) */
        ggprof_elf e;
        if (ggprof_elf_open(&e, g->lib, g->bias)) {
            if (ggprof_reach_embeds(&e)) {
                ggprof_reach_patch(&e, g->lib, g_entries, g_n_entries);
                /* Its calls reach the engine from now on: buffers it allocated with direct calls before may be
                 * missed (memory.c says so at the first graph if none was seen). */
                snprintf(g_late_lib, sizeof(g_late_lib), "%s", strrchr(g->lib, '/') ? strrchr(g->lib, '/') + 1 : g->lib);
            }
            ggprof_elf_close(&e);
        }
    }
    if (!g_embedded) {
        ggprof_trace_note("ggml reached through the PLT of %s", base);
        return;
    }
    ggprof_trace_note("%s", g_summary);
    note_list("patched in", base, g_patched, ", ");
    if (g_off[0]) note_list("off in", base, g_off, "; ");
    /* Graph-building calls (ggml_set_name, ggml_init, ...) are direct or inlined here: the generation counter
     * does not move with them, so kernels/cpu keeps a split plan only while its nodes' print holds
     * (ggprof_reach_embedded). */
    ggprof_trace_note("split plans checked by their nodes' print: graph-building calls are direct inside %s", base);
}

static int main_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void) size;
    if (info->dlpi_name && info->dlpi_name[0]) return 0;
    *(uintptr_t *) data = info->dlpi_addr;
    return 1;
}

/* At start: an executable with ggml inside is patched before its code runs (before any of its threads exists). One
 * stripped of its symbols that still carries ggml's op names, with no ggml library loaded, gets one line saying
 * that nothing can be attached. Programs that load ggml later (a Node addon) are looked at when the engine first
 * finds ggml (setup.c). */
static void __attribute__((constructor)) reach_at_start(void) {
    if (!getenv("GGPROF_RING") && !getenv("GGML_PROFILE")) return;
    char      path[512];
    uintptr_t bias = 0;
    ssize_t   n    = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0) return;
    path[n] = '\0';
    dl_iterate_phdr(main_cb, &bias);
    ggprof_elf e;
    if (!ggprof_elf_open(&e, path, bias)) return;
    if (ggprof_reach_embeds(&e)) {
        ggprof_reach_patch(&e, path, g_entries, g_n_entries);
    } else if (!ggprof_elf_func(&e, "ggml_init", NULL) && !ggprof_elf_has_symtab(&e) &&
               ggprof_elf_contains(&e, "RMS_NORM_BACK") && !dlsym(RTLD_NEXT, "ggml_init")) {
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        fprintf(stderr, "ggprof: %s carries ggml inside it but is stripped (no symbol table names ggml's functions): "
                        "nothing can be attached, and it runs unprofiled\n", base);
    }
    ggprof_elf_close(&e);
}
