/* The folder of ggprof's own library or program, to find its siblings (build/lib <-> build/bin, the CUPTI
 * library and the Vulkan layer beside libggprof.so). */
#ifndef GGPROF_SELF_PATH_H
#define GGPROF_SELF_PATH_H

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The folder of the object that holds addr (a function of the caller's own), resolved to an absolute path (links
 * followed: an installed ggprof is PREFIX/bin/ggprof -> ../lib/ggprof/bin/ggprof): a library's loader path, or
 * for the program itself /proc/self/exe (the loader has no path for it; dladdr would give argv[0], which a
 * wrapper or `exec -a` sets to anything). 0, or -1 when neither can be read. */
static inline int ggprof_self_dir(const void *addr, char *out, size_t len) {
    Dl_info          info;
    struct link_map *map = NULL;
    char             path[PATH_MAX];
    if (!dladdr1(addr, &info, (void **) &map, RTLD_DL_LINKMAP) || !map || !map->l_name || !strchr(map->l_name, '/') ||
        !realpath(map->l_name, path)) {
        ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
        if (n < 0) return -1;
        path[n] = '\0';
    }
    char *slash = strrchr(path, '/');
    if (!slash) return -1;
    *slash = '\0';
    snprintf(out, len, "%s", path);
    return 0;
}

/* A sibling of ggprof's own object: the path in environment variable env when set, else rel from the folder of
 * the object that holds addr. 0 when it can be accessed with mode (access(2)), -1 otherwise; out says which path
 * was tried. */
static inline int ggprof_sibling(const char *env, const void *addr, const char *rel, int mode, char *out, size_t len) {
    const char *e = getenv(env);
    if (e && *e) {
        snprintf(out, len, "%s", e);
    } else {
        char dir[PATH_MAX];
        if (ggprof_self_dir(addr, dir, sizeof(dir)) != 0) return -1;
        snprintf(out, len, "%s/%s", dir, rel);
    }
    return access(out, mode);
}

#endif
