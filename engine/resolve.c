/* Finding the function a wrapper stands in for: in its caller's library, which sees ggml even when ggml was
 * loaded RTLD_LOCAL. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

struct find_ctx {
    const char *name;
    const void *self;
    void       *found;
};

static int find_in_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void) size;
    struct find_ctx *f = data;
    if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
    void *h = dlopen(info->dlpi_name, RTLD_NOLOAD | RTLD_LAZY);
    if (!h) return 0;
    void *p = dlsym(h, f->name);
    dlclose(h);
    if (p && p != f->self) {
        f->found = p;
        return 1;
    }
    return 0;
}

void *ggprof_resolve_real(const char *name, const void *caller, const void *self) {
    /* The caller's own library sees ggml even when ggml was loaded with RTLD_LOCAL (node-llama-cpp), where
     * RTLD_NEXT finds nothing; RTLD_NEXT covers callers in the main program. */
    Dl_info info;
    if (caller && dladdr(caller, &info) && info.dli_fname && info.dli_fname[0]) {
        void *h = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
        if (h) {
            void *p = dlsym(h, name);
            dlclose(h);
            if (p && p != self) return p;
        }
    }
    void *p = dlsym(RTLD_NEXT, name);
    if (p && p != self) return p;
    /* Last resort, for a caller that reached us through a function pointer (a backend's proc address points
     * at our wrapper, since its GOT entry is interposed too) while the definer was loaded RTLD_LOCAL: ask
     * every loaded object. */
    struct find_ctx f = { name, self, NULL };
    dl_iterate_phdr(find_in_object, &f);
    return f.found;
}

void ggprof_missing_real(const char *name) {
    fprintf(stderr, "ggprof: fatal: cannot find the real %s to forward to\n", name);
    abort();
}

/* ---- which loaded object holds an address ---- */

struct obj_find {
    uintptr_t addr;
    char     *path;
    size_t    path_len;
    uintptr_t bias;
    bool      found, is_main;
};

static int obj_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void) size;
    struct obj_find *f = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (f->addr < lo || f->addr >= lo + ph->p_memsz) continue;
        f->found   = true;
        f->bias    = info->dlpi_addr;
        f->is_main = !info->dlpi_name || !info->dlpi_name[0];
        if (f->is_main) {
            ssize_t n = readlink("/proc/self/exe", f->path, f->path_len - 1);
            f->path[n > 0 ? n : 0] = '\0';
        } else {
            snprintf(f->path, f->path_len, "%s", info->dlpi_name);
        }
        return 1;
    }
    return 0;
}

bool ggprof_object_of(const void *addr, char *path, size_t path_len, uintptr_t *bias, bool *is_main) {
    struct obj_find f = { (uintptr_t) addr, path, path_len, 0, false, false };
    dl_iterate_phdr(obj_cb, &f);
    if (!f.found || !path[0]) return false;
    if (bias) *bias = f.bias;
    if (is_main) *is_main = f.is_main;
    return true;
}
