/* record --metrics: the live aggregates served over HTTP (libmicrohttpd), read-only, for Prometheus and ggprof top. */
#ifndef GGPROF_METRICS_HTTP_H
#define GGPROF_METRICS_HTTP_H

#include <stddef.h>

#include "live.h"

typedef struct ggprof_metrics_server ggprof_metrics_server;

/* Listens on [HOST:]PORT (HOST: 127.0.0.1 when not given; a name, an IPv4 address or [IPv6]; PORT 0: one the
 * system picks) and serves GET /metrics from live. bound: where it listens, as HOST:PORT. Returns 0; -2 when addr
 * is not [HOST:]PORT; -1 when it cannot listen; why says which. */
int  ggprof_metrics_listen(ggprof_metrics_server **out, const char *addr, ggprof_live *live, char *bound, size_t bound_len,
                           char *why, size_t why_len);
void ggprof_metrics_stop(ggprof_metrics_server *s);

#endif
