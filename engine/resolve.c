/* Finding the function a wrapper stands in for: in its caller's library, which sees ggml even when ggml was
 * loaded RTLD_LOCAL. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"

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
