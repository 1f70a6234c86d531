/* record --metrics: GET /metrics in the Prometheus text format, or OpenMetrics when the scraper's Accept asks. */
#include "metrics_http.h"

#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

/* libmicrohttpd, opened when --metrics asks for it (as the engine opens capstone): ggprof records without it, and
 * runs where it is not installed (the compatibility matrix's Debian sid chroot). */
#define MHD_FUNCS(X)                                                                                           \
    X(MHD_start_daemon) X(MHD_get_daemon_info) X(MHD_stop_daemon) X(MHD_create_response_from_buffer)         \
    X(MHD_add_response_header) X(MHD_queue_response) X(MHD_destroy_response) X(MHD_lookup_connection_value)  \
    X(MHD_get_connection_info)
static struct {
#define X(fn) __typeof__(&fn) fn;
    MHD_FUNCS(X)
#undef X
} mhd;

static int mhd_load(char *why, size_t why_len) {
    if (mhd.MHD_start_daemon) return 0;
    void *h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, why_len, "--metrics needs libmicrohttpd (Debian's libmicrohttpd12): %s", dlerror());
        return -1;
    }
#define X(fn)                                                                                                  \
    if (!(*(void **) &mhd.fn = dlsym(h, #fn))) {                                                               \
        snprintf(why, why_len, "--metrics: libmicrohttpd.so.12 has no %s", #fn);                               \
        return -1;                                                                                             \
    }
    MHD_FUNCS(X)
#undef X
    return 0;
}

/* The endpoint has no authentication and may be reached by others (--metrics HOST:PORT): slow clients must not hold
 * it off. libmicrohttpd's timeout is an idle one (each byte restarts it), so a client that sends a byte a second
 * would keep its connection for ever: a connection gets DEADLINE_S for the whole of its request and reply, then is
 * shut down (the watch thread below); and one client address holds at most PER_IP of the MAX_CONN connections,
 * so that a scraper from another address always finds one free. */
#define MAX_CONN   64
#define PER_IP     8
#define DEADLINE_S 10
#define IDLE_S     5

typedef struct conn {
    int          fd;
    time_t       deadline; /* CLOCK_MONOTONIC seconds */
    struct conn *prev, *next;
} conn;

struct ggprof_metrics_server {
    struct MHD_Daemon *d;
    ggprof_live       *live;
    pthread_mutex_t    mu; /* conns: added and removed by libmicrohttpd's thread, shut down by the watch */
    pthread_cond_t     cv;
    pthread_t          watch;
    int                watching, stop;
    conn              *conns;
};

static time_t mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

/* libmicrohttpd's thread, as a connection opens and closes (CLOSED comes before it closes the socket: a socket in
 * the list is still this connection's). */
static void on_connection(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_ConnectionNotificationCode what) {
    struct ggprof_metrics_server *s = cls;
    if (what == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = mhd.MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn *k = ci ? calloc(1, sizeof(*k)) : NULL;
        if (!k) return; /* not watched: the idle timeout still ends it */
        k->fd       = ci->connect_fd;
        k->deadline = mono_s() + DEADLINE_S;
        pthread_mutex_lock(&s->mu);
        k->next = s->conns;
        if (s->conns) s->conns->prev = k;
        s->conns = k;
        pthread_mutex_unlock(&s->mu);
        *ctx = k;
    } else if (what == MHD_CONNECTION_NOTIFY_CLOSED && *ctx) {
        conn *k = *ctx;
        pthread_mutex_lock(&s->mu);
        if (k->prev) k->prev->next = k->next;
        else s->conns = k->next;
        if (k->next) k->next->prev = k->prev;
        pthread_mutex_unlock(&s->mu);
        free(k);
        *ctx = NULL;
    }
}

/* Twice a second: a connection past its deadline is shut down; libmicrohttpd then sees it end and closes it. */
static void *watch(void *arg) {
    struct ggprof_metrics_server *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        time_t now = mono_s();
        for (conn *k = s->conns; k; k = k->next) {
            if (k->fd >= 0 && now >= k->deadline) {
                shutdown(k->fd, SHUT_RDWR);
                k->fd = -1; /* once */
            }
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 500000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&s->cv, &s->mu, &until);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t len,
                             int must_free) {
    struct MHD_Response *r = mhd.MHD_create_response_from_buffer(len, body, must_free ? MHD_RESPMEM_MUST_FREE
                                                                                 : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (must_free) free(body);
        return MHD_NO;
    }
    mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = mhd.MHD_queue_response(c, status, r);
    mhd.MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **state) {
    (void) version, (void) upload, (void) upload_size, (void) state;
    struct ggprof_metrics_server *s = cls;
    static char not_allowed[] = "read-only: GET /metrics\n", not_found[] = "not found; the metrics are at /metrics\n";
    static const char text[] = "text/plain; charset=utf-8";
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, text, not_allowed, strlen(not_allowed), 0);
    }
    if (strcmp(url, "/metrics") != 0) return reply(c, MHD_HTTP_NOT_FOUND, text, not_found, strlen(not_found), 0);
    const char *accept = mhd.MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    ggprof_metrics_out o = { 0 };
    o.openmetrics = accept && strstr(accept, "application/openmetrics-text") != NULL;
    ggprof_live_write(s->live, &o);
    if (o.oom) {
        free(o.buf);
        static char oom[] = "out of memory\n";
        return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, text, oom, strlen(oom), 0);
    }
    return reply(c, MHD_HTTP_OK,
                 o.openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                               : "text/plain; version=0.0.4; charset=utf-8",
                 o.buf ? o.buf : calloc(1, 1), o.len, 1);
}

/* [HOST:]PORT into host (empty: not given) and port; -1 when it is not that. */
static int split_addr(const char *addr, char *host, size_t host_len, unsigned *port) {
    const char *colon = strrchr(addr, ':'), *p = colon ? colon + 1 : addr;
    host[0] = 0;
    if (colon) {
        const char *h = addr;
        size_t      n = (size_t) (colon - addr);
        if (n >= 2 && h[0] == '[' && h[n - 1] == ']') h++, n -= 2; /* [IPv6]:PORT */
        if (n == 0 || n >= host_len) return -1;
        memcpy(host, h, n);
        host[n] = 0;
    }
    char *end;
    errno = 0;
    unsigned long v = strtoul(p, &end, 10);
    if (!*p || *end || errno || v > 65535 || *p == '-' || *p == '+' || *p == ' ') return -1;
    *port = (unsigned) v;
    return 0;
}

int ggprof_metrics_listen(ggprof_metrics_server **out, const char *addr, ggprof_live *live, char *bound, size_t bound_len,
                          char *why, size_t why_len) {
    char host[256];
    unsigned port;
    *out = NULL;
    if (split_addr(addr, host, sizeof(host), &port) != 0) {
        snprintf(why, why_len, "--metrics '%s' is not [HOST:]PORT (a port from 0 to 65535; 0 picks a free one)", addr);
        return -2;
    }
    struct addrinfo hints = { 0 }, *ai = NULL;
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host[0] ? host : "127.0.0.1", NULL, &hints, &ai);
    if (gai != 0 || !ai) {
        snprintf(why, why_len, "--metrics '%s': cannot resolve '%s': %s", addr, host, gai_strerror(gai));
        return -2;
    }
    struct sockaddr_storage sa;
    memset(&sa, 0, sizeof(sa));
    memcpy(&sa, ai->ai_addr, ai->ai_addrlen);
    int v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    if (v6) {
        ((struct sockaddr_in6 *) &sa)->sin6_port = htons((uint16_t) port);
    } else {
        ((struct sockaddr_in *) &sa)->sin_port = htons((uint16_t) port);
    }
    if (mhd_load(why, why_len) != 0) return -2;
    struct ggprof_metrics_server *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    s->live = live;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    /* One thread of its own, polling: a scrape a second costs nothing measurable; a few connections at once, a few
     * per client address, each for DEADLINE_S at most (above). */
    s->d = mhd.MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0), (uint16_t) port,
                            NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &sa,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned) MAX_CONN, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                            (unsigned) PER_IP, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) IDLE_S,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
    if (!s->d) {
        snprintf(why, why_len, "--metrics '%s': cannot listen there (in use, or not an address of this machine)", addr);
        free(s);
        return -1;
    }
    int e = pthread_create(&s->watch, NULL, watch, s);
    s->watching = e == 0;
    if (!s->watching) {
        snprintf(why, why_len, "--metrics: cannot start a thread: %s", strerror(e));
        mhd.MHD_stop_daemon(s->d);
        free(s);
        return -1;
    }
    const union MHD_DaemonInfo *info = mhd.MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage got = sa;
    socklen_t got_len = sizeof(got);
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned got_port = port;
    if (info && getsockname(info->listen_fd, (struct sockaddr *) &got, &got_len) == 0) {
        if (got.ss_family == AF_INET6) {
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *) &got)->sin6_addr, ip, sizeof(ip));
            got_port = ntohs(((struct sockaddr_in6 *) &got)->sin6_port);
        } else {
            inet_ntop(AF_INET, &((struct sockaddr_in *) &got)->sin_addr, ip, sizeof(ip));
            got_port = ntohs(((struct sockaddr_in *) &got)->sin_port);
        }
    }
    snprintf(bound, bound_len, got.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip, got_port);
    *out = s;
    return 0;
}

void ggprof_metrics_stop(ggprof_metrics_server *s) {
    if (!s) return;
    if (s->watching) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->watch, NULL);
    }
    mhd.MHD_stop_daemon(s->d); /* the connections it closes leave the list */
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}
