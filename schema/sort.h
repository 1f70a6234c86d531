/* ggprof's one way to sort: qsort, except that an empty array (whose base may be NULL, which qsort must
 * never be given: fuzz_db found it in top-ops) is left alone. */
#ifndef GGPROF_SORT_H
#define GGPROF_SORT_H

#include <stdlib.h>

static inline void ggprof_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
    if (n > 1) qsort(base, n, size, cmp);
}

#endif
