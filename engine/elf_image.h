/* An ELF object's symbols and relocations read from its file: where ggml lives when it is inside a program (a static
 * or LTO build), whose ggml functions dlsym cannot find (an executable exports nothing) and whose calls between
 * them do not go through the PLT. */
#ifndef GGPROF_ELF_IMAGE_H
#define GGPROF_ELF_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const unsigned char *map; /* the file, mapped read-only (or the buffer ggprof_elf_parse was given) */
    size_t               map_len;
    bool                 mapped; /* map is ours to unmap */
    uintptr_t            bias;   /* where it is loaded: file addresses + bias = run-time addresses */
    const void *shdr;            /* the Elf64_Shdr table, n_shdr entries, all inside map */
    size_t      n_shdr;
    const void *symtab, *dynsym; /* Elf64_Sym arrays (NULL when absent), inside map */
    size_t      n_symtab, n_dynsym;
    const char *symstr, *dynstr; /* their string tables, inside map, each ending with a NUL */
    size_t      symstr_len, dynstr_len;
    const void *rela[4]; /* Elf64_Rela sections that name dynamic symbols (.rela.plt, .rela.dyn) */
    size_t      n_rela[4];
    int         n_relas;
} ggprof_elf;

/* Maps the file at path (an object loaded at bias) and reads it with ggprof_elf_parse. False when it is not a
 * 64-bit ELF file we can read; one that is malformed (a table outside the file, sizes that wrap) is noted once in
 * the process (the engine's ggprof_note: stderr and the trace) and skipped. */
bool ggprof_elf_open(ggprof_elf *e, const char *path, uintptr_t bias);
void ggprof_elf_close(ggprof_elf *e);

/* Reads the len bytes at buf (which must outlive e) as an ELF image: every offset, size, count and index it takes
 * from them is checked against buf, and every table it keeps lies inside buf. False with *why (a static string)
 * when it cannot; *why is NULL when buf is simply not a little-endian 64-bit ELF file. ggprof_elf_close on it
 * frees nothing. The one parser: ggprof_elf_open uses it, and so does tests/fuzz/fuzz_elf.c. */
bool ggprof_elf_parse(ggprof_elf *e, const void *buf, size_t len, uintptr_t bias, const char **why);

/* The run-time address and size of the function `name` defined in the object: from .dynsym, else from .symtab
 * (local symbols too: a static function whose address ggml hands out). 0 when absent. */
uintptr_t ggprof_elf_func(const ggprof_elf *e, const char *name, size_t *size);

/* Whether the object reaches `name` through its PLT or GOT (a relocation names it): calls from there land in
 * whatever the loader binds, an LD_PRELOAD wrapper included. */
bool ggprof_elf_relocates(const ggprof_elf *e, const char *name);

/* Whether the object has a .symtab (it was not stripped). */
static inline bool ggprof_elf_has_symtab(const ggprof_elf *e) { return e->symtab != NULL; }

/* Whether the file's bytes contain `needle` (e.g. a string only ggml puts in its read-only data). */
bool ggprof_elf_contains(const ggprof_elf *e, const char *needle);

#endif
