/* libFuzzer target: the engine's ELF reader (engine/elf_image.c) on any bytes, as the engine meets them in every
 * executable started under `record` (the loader runs a program whose section table lies): ggprof_elf_parse, the
 * parser ggprof_elf_open uses, then every lookup the engine makes. Nothing may crash, read outside the input or
 * hang. Seeds: real ELF files (fuzz.sh). */
#include <stdint.h>

#include "elf_image.h"

static const char *const names[] = {
    "main", "_start", "_init", "_fini", "free", "malloc", "__cxa_finalize", "__libc_start_main",
    "ggml_graph_compute", "ggml_barrier", "GOMP_barrier", "fuzz_seed_fn",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ggprof_elf  e;
    const char *why;
    if (!ggprof_elf_parse(&e, data, size, 0x10000, &why)) return 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t fn_size = 0;
        (void) ggprof_elf_func(&e, names[i], &fn_size);
        (void) ggprof_elf_relocates(&e, names[i]);
    }
    (void) ggprof_elf_has_symtab(&e);
    (void) ggprof_elf_contains(&e, "RMS_NORM_BACK");
    ggprof_elf_close(&e);
    return 0;
}
