/* Patching a function's entry to jump to a wrapper, for the ggml functions a program calls directly (ggml linked
 * into it, statically or with LTO): no PLT entry exists there for LD_PRELOAD to take over. */
#ifndef GGPROF_PATCH_H
#define GGPROF_PATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most bytes the 5-byte jump can displace: each displaced instruction starts within its 5 bytes, and an
 * x86 instruction is at most 15 bytes long. */
#define PATCH_MAX_DISPLACED (4 + 15)

/* Makes the function at fn (size bytes long, 0 if unknown) jump to hook, and stores into *original (with release
 * ordering, before the jump is written, so that no thread can reach hook and find it empty) a trampoline that runs
 * the function as it was: the instructions the jump displaced, relocated, then a jump back. The displaced
 * instructions are decoded with capstone; the patch is refused (false, why says which instruction or rule) when
 * one cannot be moved (a relative branch into the displaced bytes from elsewhere in the function, a call or an
 * instruction capstone cannot decode among them, a RIP-relative operand out of reach), and nothing is written then.
 * Safe while other threads run fn: every other thread of the process is stopped for the write (a real-time signal
 * parks it), and one stopped inside the displaced bytes goes on at the trampoline's copy of its instruction; when
 * a thread will not stop (it blocks signals and runs), the patch is refused. With no other thread (an executable's
 * constructor) nothing is stopped. x86-64 only. */
bool ggprof_patch_entry(void *fn, size_t size, void *hook, void *_Atomic *original, char *why, size_t why_len);

/* Whether entry patching exists in this build (x86-64 with capstone). */
bool ggprof_patch_supported(void);

/* The memory operand [reg + disp] that a small function of the form `return obj->table.fn(obj, ...)` jumps or
 * calls through, reg being its first argument (rdi): e.g. ggml_backend_graph_compute_async's
 * `backend->iface.graph_compute`. Returns the displacement, or -1 when the first few instructions do not show
 * one. */
long ggprof_patch_first_arg_slot(const void *fn, size_t size);

#endif
