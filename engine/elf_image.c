/* An ELF object's symbols and relocations, read from its file (elf_image.h). */
#include "elf_image.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

bool ggprof_elf_open(ggprof_elf *e, const char *path, uintptr_t bias) {
    memset(e, 0, sizeof(*e));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t) st.st_size < sizeof(Elf64_Ehdr)) {
        close(fd);
        return false;
    }
    void *m = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return false;
    e->map     = m;
    e->map_len = (size_t) st.st_size;
    e->bias    = bias;
    const Elf64_Ehdr *eh = m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff == 0 ||
        eh->e_shoff + (uint64_t) eh->e_shnum * sizeof(Elf64_Shdr) > e->map_len) {
        ggprof_elf_close(e);
        return false;
    }
    const Elf64_Shdr *sh = (const Elf64_Shdr *) (e->map + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *s = &sh[i];
        if (s->sh_offset + s->sh_size > e->map_len) continue;
        if ((s->sh_type == SHT_SYMTAB || s->sh_type == SHT_DYNSYM) && s->sh_link < eh->e_shnum &&
            s->sh_entsize == sizeof(Elf64_Sym)) {
            const Elf64_Shdr *str = &sh[s->sh_link];
            if (str->sh_offset + str->sh_size > e->map_len || str->sh_size == 0) continue;
            const char *strs = (const char *) e->map + str->sh_offset;
            if (strs[str->sh_size - 1] != '\0') continue; /* every name must end inside the table */
            if (s->sh_type == SHT_SYMTAB) {
                e->symtab = e->map + s->sh_offset, e->n_symtab = s->sh_size / sizeof(Elf64_Sym), e->symstr = strs;
            } else {
                e->dynsym = e->map + s->sh_offset, e->n_dynsym = s->sh_size / sizeof(Elf64_Sym), e->dynstr = strs;
            }
        }
    }
    /* Relocations against .dynsym (the PLT's and the GOT's), once .dynsym is known. */
    for (int i = 0; i < eh->e_shnum && e->n_relas < 4; i++) {
        const Elf64_Shdr *s = &sh[i];
        if (s->sh_type != SHT_RELA || s->sh_entsize != sizeof(Elf64_Rela) || s->sh_offset + s->sh_size > e->map_len) {
            continue;
        }
        if (s->sh_link >= eh->e_shnum || sh[s->sh_link].sh_type != SHT_DYNSYM) continue;
        e->rela[e->n_relas]     = e->map + s->sh_offset;
        e->n_rela[e->n_relas++] = s->sh_size / sizeof(Elf64_Rela);
    }
    return true;
}

void ggprof_elf_close(ggprof_elf *e) {
    if (e->map) munmap((void *) e->map, e->map_len);
    memset(e, 0, sizeof(*e));
}

static uintptr_t find_in(const ggprof_elf *e, const Elf64_Sym *syms, size_t n, const char *strs, const char *name,
                         size_t *size) {
    if (!syms) return 0;
    const char *end = strs ? (const char *) e->map + e->map_len : NULL;
    for (size_t i = 0; i < n; i++) {
        const Elf64_Sym *s = &syms[i];
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF || s->st_value == 0) continue;
        const char *nm = strs + s->st_name;
        if (nm >= end || strcmp(nm, name) != 0) continue;
        if (size) *size = s->st_size;
        return e->bias + s->st_value;
    }
    return 0;
}

uintptr_t ggprof_elf_func(const ggprof_elf *e, const char *name, size_t *size) {
    uintptr_t a = find_in(e, e->dynsym, e->n_dynsym, e->dynstr, name, size);
    return a ? a : find_in(e, e->symtab, e->n_symtab, e->symstr, name, size);
}

bool ggprof_elf_relocates(const ggprof_elf *e, const char *name) {
    if (!e->dynsym) return false;
    const Elf64_Sym *syms = e->dynsym;
    for (int r = 0; r < e->n_relas; r++) {
        const Elf64_Rela *rel = e->rela[r];
        for (size_t i = 0; i < e->n_rela[r]; i++) {
            uint32_t type = ELF64_R_TYPE(rel[i].r_info), sym = ELF64_R_SYM(rel[i].r_info);
            if (sym == 0 || sym >= e->n_dynsym) continue;
            if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
            const char *nm = e->dynstr + syms[sym].st_name;
            if ((const unsigned char *) nm < e->map + e->map_len && strcmp(nm, name) == 0) return true;
        }
    }
    return false;
}

bool ggprof_elf_contains(const ggprof_elf *e, const char *needle) {
    return memmem(e->map, e->map_len, needle, strlen(needle)) != NULL;
}
