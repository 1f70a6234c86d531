/* How ggml's calls reach the engine: through the PLT (ggml in shared libraries, LD_PRELOAD), through a backend's
 * interface table, or through patched function entries (ggml linked into the program, statically or with LTO). */
#ifndef GGPROF_REACH_H
#define GGPROF_REACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf_image.h"

/* The wrapper of fn by a name bound inside libggprof.so: where the program exports fn itself (-rdynamic), taking
 * fn's address in the library would give the program's fn (the executable comes first in the lookup), and the patch
 * would jump to the function it patches. Use after the wrapper's definition: GGPROF_SELF(fn) names it. */
#define GGPROF_SELF_ALIAS(fn) extern __typeof__(fn) ggprof_self_##fn __attribute__((alias(#fn), visibility("hidden")));
#define GGPROF_SELF(fn)       ((void *) ggprof_self_##fn)

/* An entry point the engine wraps that may need patching where the program calls it directly. */
typedef struct ggprof_entry_s {
    const char   *name;
    void         *wrapper;   /* libggprof's exported wrapper of the same name */
    void *_Atomic *real;     /* the wrapper's slot for the function it forwards to (set to the trampoline) */
    const char   *serves;    /* what goes without it, for the note */
} ggprof_entry;

/* The wrappers' entries that may need patching, handed once at load (interpose.c, a constructor(101)), before
 * reach.c looks at the program; kept, not copied. */
void ggprof_reach_set_entries(const ggprof_entry *entries, int n);

/* The file name of the library loaded after start that ggml was found inside (a Node addon), "" when none: its
 * buffers allocated before were missed (memory.c notes it). */
const char *ggprof_reach_late_lib(void);

/* Whether the object embeds ggml: its core and its CPU backend in one object whose CPU backend calls ggml_barrier
 * directly (no PLT entry for it), or, OpenMP builds, has it inlined everywhere: a static or LTO build. A shared
 * libggml (even b3889's single libggml.so) does not. */
bool ggprof_reach_embeds(const ggprof_elf *e);

/* Patches each entry in an object that embeds ggml (calls through its PLT, if any, reach the wrapper too, which
 * forwards to the trampoline); each result is kept for ggprof_reach_summary. Calls ggprof_engine_set_ggml with an address in the object first. */
void ggprof_reach_patch(const ggprof_elf *e, const char *path, const ggprof_entry *entries, int n);


/* Where a backend (any, once known from a CPU backend) keeps iface.graph_compute, in bytes from its start; -1
 * when it cannot be told (no ggml_backend_graph_compute_async body to read, no symbol for the CPU's). */
long ggprof_reach_iface_slot(const void *cpu_backend);

/* Whether CPU barrier waits are timed at libgomp's GOMP_barrier rather than at ggml_barrier: ggml is inside an
 * object that calls GOMP_barrier through its PLT (an OpenMP build, where LTO inlined ggml_barrier). */
bool ggprof_reach_barrier_via_gomp(void);

/* Whether ggml is inside an object (not reached through the PLT for everything): split plans cannot rely on the
 * wrapped graph-building calls, and device nodes on ggml_is_empty. */
bool ggprof_reach_embedded(void);

#endif
