/* An ELF object's symbols and relocations, read from its file (elf_image.h). The file is any bytes: the engine
 * reads every executable started under `record`, and the loader, which ignores section headers, runs one whose
 * section table lies. Every offset, size, count and index taken from it is checked here, without overflow, before
 * anything is read through it; a malformed image is skipped whole. */
#include "elf_image.h"

#include <elf.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_ELFDATA ELFDATA2LSB
#else
#define HOST_ELFDATA ELFDATA2MSB
#endif

/* The engine's notes (engine.c). Weak: the unit test and the fuzz target link this file without the engine. */
extern void ggprof_note(const char *fmt, ...) __attribute__((weak, visibility("hidden"), format(printf, 1, 2)));

/* [off, off + len) lies inside [0, limit): computed so that no sum wraps. */
static bool range_ok(uint64_t off, uint64_t len, uint64_t limit) { return off <= limit && len <= limit - off; }

/* The table of size bytes at file offset off, aligned for its entries (align), when it lies inside the image. */
static const void *table_at(const ggprof_elf *e, uint64_t off, uint64_t size, size_t align) {
    if (!range_ok(off, size, e->map_len) || ((uintptr_t) e->map + off) % align != 0) return NULL;
    return e->map + off;
}

/* The string table that section header `link` names: inside the image, not empty, ending with a NUL, so that any
 * name that starts inside it ends inside it. */
static const char *strtab_at(const ggprof_elf *e, uint64_t link, size_t *len) {
    const Elf64_Shdr *sh = e->shdr;
    if (link == 0 || link >= e->n_shdr || sh[link].sh_type != SHT_STRTAB || sh[link].sh_size == 0) return NULL;
    const char *s = table_at(e, sh[link].sh_offset, sh[link].sh_size, 1);
    if (!s || s[sh[link].sh_size - 1] != '\0') return NULL;
    *len = sh[link].sh_size;
    return s;
}

/* A malformed image: e keeps nothing of it. */
static bool fail(ggprof_elf *e, const char **why, const char *what) {
    memset(e, 0, sizeof(*e));
    *why = what;
    return false;
}

bool ggprof_elf_parse(ggprof_elf *e, const void *buf, size_t len, uintptr_t bias, const char **why) {
    memset(e, 0, sizeof(*e));
    *why = NULL;
    Elf64_Ehdr eh;
    if (len < sizeof(eh)) return false;
    memcpy(&eh, buf, sizeof(eh));
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != HOST_ELFDATA || eh.e_shoff == 0) {
        return false; /* not ours to read (or no section table): not malformed, and e is still empty */
    }
    e->map     = buf;
    e->map_len = len;
    e->bias    = bias;
    uint64_t tbl;
    if (eh.e_shentsize != sizeof(Elf64_Shdr)) return fail(e, why, "section header size is not Elf64_Shdr's");
    if (__builtin_mul_overflow((uint64_t) eh.e_shnum, (uint64_t) eh.e_shentsize, &tbl) ||
        !(e->shdr = table_at(e, eh.e_shoff, tbl, _Alignof(Elf64_Shdr)))) {
        return fail(e, why, "section table outside the file");
    }
    e->n_shdr            = eh.e_shnum;
    const Elf64_Shdr *sh = e->shdr;
    for (size_t i = 0; i < e->n_shdr; i++) {
        const Elf64_Shdr *s = &sh[i];
        if (s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM) continue;
        if (s->sh_entsize != sizeof(Elf64_Sym)) return fail(e, why, "symbol size is not Elf64_Sym's");
        const void *syms = table_at(e, s->sh_offset, s->sh_size, _Alignof(Elf64_Sym));
        if (!syms) return fail(e, why, "symbol table outside the file");
        size_t      n_str = 0;
        const char *strs  = strtab_at(e, s->sh_link, &n_str);
        if (!strs) return fail(e, why, "symbol names not in a string table inside the file");
        if (s->sh_type == SHT_SYMTAB) {
            e->symtab = syms, e->n_symtab = s->sh_size / sizeof(Elf64_Sym), e->symstr = strs, e->symstr_len = n_str;
        } else {
            e->dynsym = syms, e->n_dynsym = s->sh_size / sizeof(Elf64_Sym), e->dynstr = strs, e->dynstr_len = n_str;
        }
    }
    /* Relocations against .dynsym (the PLT's and the GOT's), once .dynsym is known; their symbol indexes are
     * checked against it where they are read. */
    for (size_t i = 0; i < e->n_shdr && e->n_relas < 4; i++) {
        const Elf64_Shdr *s = &sh[i];
        if (s->sh_type != SHT_RELA || s->sh_link >= e->n_shdr || sh[s->sh_link].sh_type != SHT_DYNSYM) continue;
        if (s->sh_entsize != sizeof(Elf64_Rela)) return fail(e, why, "relocation size is not Elf64_Rela's");
        const void *rela = table_at(e, s->sh_offset, s->sh_size, _Alignof(Elf64_Rela));
        if (!rela) return fail(e, why, "relocation table outside the file");
        e->rela[e->n_relas]     = rela;
        e->n_rela[e->n_relas++] = s->sh_size / sizeof(Elf64_Rela);
    }
    return true;
}

/* Says once in the process that an object was skipped, and why (the first one: each would say much the same). */
static void note_malformed(const char *path, const char *why) {
    static atomic_flag noted = ATOMIC_FLAG_INIT;
    if (!ggprof_note || atomic_flag_test_and_set(&noted)) return;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    ggprof_note("%s: malformed ELF image (%s): skipped, ggml is not looked for in it", base, why);
}

bool ggprof_elf_open(ggprof_elf *e, const char *path, uintptr_t bias) {
    memset(e, 0, sizeof(*e));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t) sizeof(Elf64_Ehdr) ||
        (uint64_t) st.st_size > SIZE_MAX) {
        close(fd);
        return false;
    }
    size_t len = (size_t) st.st_size;
    void  *m   = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return false;
    const char *why;
    if (!ggprof_elf_parse(e, m, len, bias, &why)) {
        munmap(m, len);
        if (why) note_malformed(path, why);
        return false;
    }
    e->mapped = true;
    return true;
}

void ggprof_elf_close(ggprof_elf *e) {
    if (e->mapped) munmap((void *) e->map, e->map_len);
    memset(e, 0, sizeof(*e));
}

/* The name of symbol s in the string table strs (n bytes, NUL-terminated): NULL when its index lies past the end. */
static const char *sym_name(const Elf64_Sym *s, const char *strs, size_t n) {
    return s->st_name < n ? strs + s->st_name : NULL;
}

/* Whether function symbol s lies whole inside an executable section of the image: an address the engine may
 * patch. */
static bool in_code(const ggprof_elf *e, const Elf64_Sym *s) {
    if (s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE || s->st_shndx >= e->n_shdr) return false;
    const Elf64_Shdr *sec = &((const Elf64_Shdr *) e->shdr)[s->st_shndx];
    return sec->sh_type == SHT_PROGBITS && (sec->sh_flags & SHF_EXECINSTR) && s->st_value >= sec->sh_addr &&
           range_ok(s->st_value - sec->sh_addr, s->st_size, sec->sh_size);
}

static uintptr_t find_in(const ggprof_elf *e, const Elf64_Sym *syms, size_t n, const char *strs, size_t n_strs,
                         const char *name, size_t *size) {
    if (!syms) return 0;
    for (size_t i = 0; i < n; i++) {
        const Elf64_Sym *s = &syms[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF || s->st_value == 0) continue;
        const char *nm = sym_name(s, strs, n_strs);
        if (!nm || strcmp(nm, name) != 0 || !in_code(e, s)) continue;
        if (size) *size = s->st_size;
        return e->bias + s->st_value;
    }
    return 0;
}

uintptr_t ggprof_elf_func(const ggprof_elf *e, const char *name, size_t *size) {
    uintptr_t a = find_in(e, e->dynsym, e->n_dynsym, e->dynstr, e->dynstr_len, name, size);
    return a ? a : find_in(e, e->symtab, e->n_symtab, e->symstr, e->symstr_len, name, size);
}

bool ggprof_elf_relocates(const ggprof_elf *e, const char *name) {
    if (!e->dynsym) return false;
    const Elf64_Sym *syms = e->dynsym;
    for (int r = 0; r < e->n_relas; r++) {
        const Elf64_Rela *rel = e->rela[r];
        for (size_t i = 0; i < e->n_rela[r]; i++) {
            uint32_t type = ELF64_R_TYPE(rel[i].r_info), sym = ELF64_R_SYM(rel[i].r_info);
            if (sym == 0 || sym >= e->n_dynsym) continue; /* an index past .dynsym names nothing */
            if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
            const char *nm = sym_name(&syms[sym], e->dynstr, e->dynstr_len);
            if (nm && strcmp(nm, name) == 0) return true;
        }
    }
    return false;
}

bool ggprof_elf_contains(const ggprof_elf *e, const char *needle) {
    return memmem(e->map, e->map_len, needle, strlen(needle)) != NULL;
}
