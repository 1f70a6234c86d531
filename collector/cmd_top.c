/* ggprof top: a live table, refreshed every second, of what a running 'ggprof record --metrics' serves. */
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "clock_map.h"
#include "collector_commands.h"
#include "sort.h"
#include "v3_format.h"

const char ggprof_usage_top[] =
    "usage: ggprof top [HOST:]PORT " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "Shows, refreshed every second, what a running 'ggprof record --metrics [HOST:]PORT' serves (HOST defaults to\n"
    "127.0.0.1; http://HOST:PORT/metrics is accepted too): tokens/s (generation and prompt), requests in flight,\n"
    "ended and their mean latency, each backend's busy share, and a row per op and backend: calls/s, ms of op time\n"
    "per second and its share of the op time, all over the last SEC seconds. Works in an 80x24 terminal; the\n"
    "terminal is left as it was found (alternate screen, settings restored).\n"
    "\n"
    GGPROF_HELP_OPTIONS
    "\n"
    "Keys: s next sort (time, calls, op, backend); w longer window, - shorter; p or space pause; q quit.\n";

/* ---- one scrape, summed over processes */

typedef struct {
    char   op[64], backend[64];
    double secs, calls;
} top_op;

typedef struct {
    char   backend[64];
    double secs;
} top_busy;

typedef struct {
    double  t;                   /* seconds, CLOCK_MONOTONIC */
    top_op *ops;
    int     n_ops, cap_ops;
    top_busy busy[16];
    int     n_busy;
    double  tokens[2], in_flight, requests, req_sum, prompt_sum, messages;
} scrape;

static void scrape_free(scrape *s) {
    free(s->ops);
    memset(s, 0, sizeof(*s));
}

/* The value of label name in {a="x",b="y"} at p (escapes undone) into out; false when absent. */
static bool label(const char *p, const char *end, const char *name, char *out, size_t len) {
    size_t nl = strlen(name);
    while (p && p < end) {
        while (p < end && (*p == '{' || *p == ',')) p++;
        const char *eq = memchr(p, '=', (size_t) (end - p));
        if (!eq || eq + 1 >= end || eq[1] != '"') return false;
        bool want = (size_t) (eq - p) == nl && memcmp(p, name, nl) == 0;
        size_t o = 0;
        const char *q = eq + 2;
        for (; q < end && *q != '"'; q++) {
            char c = *q;
            if (c == '\\' && q + 1 < end) c = *++q == 'n' ? '\n' : *q;
            if (want && o + 1 < len) out[o++] = c;
        }
        if (want) {
            out[o] = 0;
            return true;
        }
        p = q + 1;
    }
    return false;
}

static void parse(const char *body, scrape *s) {
    for (const char *line = body; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (*line == '#' || *line == '\n') continue;
        const char *eol = strchr(line, '\n');
        if (!eol) eol = line + strlen(line);
        const char *sp = NULL, *lb = NULL, *rb = NULL;
        for (const char *q = line; q < eol && !sp; q++) {
            if (*q == '{' && !lb) lb = q;
            if (*q == '"' && lb) { /* skip quoted label values, which may hold '}' and ' ' */
                for (q++; q < eol && *q != '"'; q++)
                    if (*q == '\\') q++;
                continue;
            }
            if (*q == '}' && lb) rb = q;
            if (*q == ' ' && (!lb || rb)) sp = q;
        }
        if (!sp) continue;
        size_t nlen = (size_t) ((lb ? lb : sp) - line);
        char name[96];
        if (nlen >= sizeof(name)) continue;
        memcpy(name, line, nlen);
        name[nlen] = 0;
        double v = strtod(sp + 1, NULL);
        const char *ls = lb ? lb : sp, *le = rb ? rb : sp;
        char a[64] = "", b[64] = "";
        if (strcmp(name, "ggml_op_seconds_total") == 0 || strcmp(name, "ggml_op_calls_total") == 0) {
            label(ls, le, "op", a, sizeof(a));
            label(ls, le, "backend", b, sizeof(b));
            int i = 0;
            while (i < s->n_ops && (strcmp(s->ops[i].op, a) != 0 || strcmp(s->ops[i].backend, b) != 0)) i++;
            if (i == s->n_ops) {
                if (s->n_ops == s->cap_ops) {
                    int cap = s->cap_ops ? s->cap_ops * 2 : 32;
                    top_op *g = realloc(s->ops, (size_t) cap * sizeof(*g));
                    if (!g) continue;
                    s->ops = g, s->cap_ops = cap;
                }
                memset(&s->ops[i], 0, sizeof(s->ops[i]));
                snprintf(s->ops[i].op, sizeof(s->ops[i].op), "%s", a);
                snprintf(s->ops[i].backend, sizeof(s->ops[i].backend), "%s", b);
                s->n_ops++;
            }
            if (name[8] == 's') {
                s->ops[i].secs += v;
            } else {
                s->ops[i].calls += v;
            }
        } else if (strcmp(name, "ggml_backend_busy_seconds_total") == 0) {
            label(ls, le, "backend", b, sizeof(b));
            int i = 0;
            while (i < s->n_busy && strcmp(s->busy[i].backend, b) != 0) i++;
            if (i == s->n_busy && s->n_busy < 16) snprintf(s->busy[s->n_busy++].backend, sizeof(s->busy[0].backend), "%s", b);
            if (i < s->n_busy) s->busy[i].secs += v;
        } else if (strcmp(name, "llama_tokens_total") == 0) {
            label(ls, le, "phase", a, sizeof(a));
            s->tokens[strcmp(a, "generation") == 0] += v;
        } else if (strcmp(name, "llama_requests_in_flight") == 0) {
            s->in_flight += v;
        } else if (strcmp(name, "llama_request_seconds_count") == 0) {
            s->requests += v;
        } else if (strcmp(name, "llama_request_seconds_sum") == 0) {
            s->req_sum += v;
        } else if (strcmp(name, "llama_request_prompt_seconds_sum") == 0) {
            s->prompt_sum += v;
        } else if (strcmp(name, "ggprof_collector_messages_total") == 0) {
            s->messages += v;
        }
    }
}

/* GET /metrics from host:port into s; 0, or -1 with why. */
static int fetch(const char *host, const char *port, scrape *s, char *why, size_t why_len) {
    struct addrinfo hints = { 0 }, *ai = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, port, &hints, &ai);
    if (gai != 0) {
        snprintf(why, why_len, "cannot resolve '%s': %s", host, gai_strerror(gai));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        snprintf(why, why_len, "cannot connect to %s:%s: %s", host, port, strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct timeval tv = { 2, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char req[512];
    int n = snprintf(req, sizeof(req), "GET /metrics HTTP/1.0\r\nHost: %s:%s\r\nAccept: text/plain;version=0.0.4\r\n\r\n",
                     host, port);
    if (write(fd, req, (size_t) n) != n) {
        snprintf(why, why_len, "cannot send to %s:%s: %s", host, port, strerror(errno));
        close(fd);
        return -1;
    }
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    ssize_t got;
    while (buf && (got = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t) got;
        if (len + 1 == cap) {
            char *g = realloc(buf, cap *= 2);
            if (!g) free(buf);
            buf = g;
        }
    }
    close(fd);
    if (!buf) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    buf[len] = 0;
    char *body = strstr(buf, "\r\n\r\n");
    if (strncmp(buf, "HTTP/1.", 7) != 0 || !body || strncmp(buf + 8, " 200", 4) != 0) {
        snprintf(why, why_len, "%s:%s did not answer GET /metrics with 200 (is it 'ggprof record --metrics'?)", host, port);
        free(buf);
        return -1;
    }
    parse(body + 4, s);
    free(buf);
    return 0;
}

/* ---- the terminal */

static struct termios g_saved;
static bool g_raw;
static volatile sig_atomic_t g_quit, g_resized;

static void term_restore(void) {
    if (!g_raw) return;
    g_raw = false;
    fputs("\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &g_saved);
}

static void on_quit(int sig) { (void) sig, g_quit = 1; }
static void on_winch(int sig) { (void) sig, g_resized = 1; }

static int term_enter(void) {
    if (tcgetattr(STDIN_FILENO, &g_saved) != 0) return -1;
    struct termios raw = g_saved;
    raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
    raw.c_cc[VMIN]  = 0;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) != 0) return -1;
    g_raw = true;
    atexit(term_restore);
    struct sigaction sa = { 0 };
    sa.sa_handler = on_quit;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_winch;
    sigaction(SIGWINCH, &sa, NULL);
    fputs("\033[?1049h\033[?25l", stdout);
    return 0;
}

/* ---- the table */

enum { SORT_TIME, SORT_CALLS, SORT_OP, SORT_BACKEND, N_SORT };
static const char *const k_sort_names[N_SORT] = { "time", "calls", "op", "backend" };
static int g_sort;

typedef struct {
    const char *op, *backend;
    double      secs, calls;
} row;

static int row_cmp(const void *a, const void *b) {
    const row *x = a, *y = b;
    int c = 0;
    switch (g_sort) {
    case SORT_TIME: c = (y->secs > x->secs) - (y->secs < x->secs); break;
    case SORT_CALLS: c = (y->calls > x->calls) - (y->calls < x->calls); break;
    case SORT_OP: c = strcmp(x->op, y->op); break;
    case SORT_BACKEND: c = strcmp(x->backend, y->backend); break;
    }
    if (!c) c = strcmp(x->op, y->op);
    return c ? c : strcmp(x->backend, y->backend);
}

#define HIST 700
typedef struct {
    const char *host, *port;
    scrape      h[HIST]; /* h[(first + i) % HIST], oldest first */
    int         first, n;
    int         window;
    bool        paused;
    char        err[256];
} top_state;

static const scrape *newest(const top_state *t) { return t->n ? &t->h[(t->first + t->n - 1) % HIST] : NULL; }

/* The scrape closest to window seconds before the newest (the oldest one when there is less history). */
static const scrape *window_start(const top_state *t) {
    const scrape *now = newest(t);
    if (!now) return NULL;
    for (int i = 0; i < t->n; i++) {
        const scrape *s = &t->h[(t->first + i) % HIST];
        if (now->t - s->t <= t->window + 0.25) return s == now && t->n > 1 ? &t->h[(t->first + t->n - 2) % HIST] : s;
    }
    return now;
}

static void draw(top_state *t) {
    struct winsize ws = { 0 };
    int cols = 80, lines = 24;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) cols = ws.ws_col, lines = ws.ws_row;
    if (cols > 200) cols = 200;
    const scrape *b = newest(t), *a = window_start(t);
    double dt = a && b && b->t > a->t ? b->t - a->t : 0;
    char line[256];
    fputs("\033[H\033[2J", stdout);
    snprintf(line, sizeof(line), "ggprof top  %s:%s  window %ds  sort %s  %s", t->host, t->port, t->window,
             k_sort_names[g_sort], t->paused ? "PAUSED" : "");
    printf("\033[7m%-*.*s\033[0m\r\n", cols, cols, line);
    if (t->err[0]) {
        char safe[512];
        printf("%.*s\r\n", cols, ggprof_text_safe(t->err, safe, sizeof(safe)));
    }
    if (!b || !a || dt <= 0) {
        printf("waiting for two scrapes...\r\n");
        fflush(stdout);
        return;
    }
    double req = b->requests - a->requests;
    snprintf(line, sizeof(line), "tokens/s  generation %.1f  prompt %.1f    ring messages/s %.0f",
             (b->tokens[1] - a->tokens[1]) / dt, (b->tokens[0] - a->tokens[0]) / dt, (b->messages - a->messages) / dt);
    printf("%.*s\r\n", cols, line);
    snprintf(line, sizeof(line), "requests  in flight %.0f  ended %.0f (%.0f in %ds)  latency %.1f ms  prompt %.1f ms",
             b->in_flight, b->requests, req, t->window, req > 0 ? (b->req_sum - a->req_sum) / req * 1e3 : 0.0,
             req > 0 ? (b->prompt_sum - a->prompt_sum) / req * 1e3 : 0.0);
    printf("%.*s\r\n", cols, line);
    size_t o = (size_t) snprintf(line, sizeof(line), "busy     ");
    for (int i = 0; i < b->n_busy && o < sizeof(line); i++) {
        double before = 0;
        for (int k = 0; k < a->n_busy; k++)
            if (strcmp(a->busy[k].backend, b->busy[i].backend) == 0) before = a->busy[k].secs;
        char safe[160];
        o += (size_t) snprintf(line + o, sizeof(line) - o, " %s %.1f%%", ggprof_text_safe(b->busy[i].backend, safe, sizeof(safe)),
                               100 * (b->busy[i].secs - before) / dt);
    }
    printf("%.*s\r\n\r\n", cols, line);
    row *rows = calloc((size_t) b->n_ops + 1, sizeof(*rows));
    int n = 0;
    double total = 0;
    for (int i = 0; rows && i < b->n_ops; i++) {
        const top_op *x = &b->ops[i], *y = NULL;
        for (int k = 0; k < a->n_ops && !y; k++)
            if (strcmp(a->ops[k].op, x->op) == 0 && strcmp(a->ops[k].backend, x->backend) == 0) y = &a->ops[k];
        row r = { x->op, x->backend, x->secs - (y ? y->secs : 0), x->calls - (y ? y->calls : 0) };
        if (r.calls <= 0 && r.secs <= 0) continue;
        total += r.secs;
        rows[n++] = r;
    }
    ggprof_sort(rows, (size_t) n, sizeof(*rows), row_cmp);
    printf("\033[1m%-24s %-12s %10s %10s %7s\033[0m\r\n", "OP", "BACKEND", "CALLS/s", "MS/s", "SHARE");
    int room = lines - 8 - (t->err[0] ? 1 : 0);
    for (int i = 0; i < n && i < room; i++) {
        char s1[160], s2[160];
        printf("%-24.24s %-12.12s %10.1f %10.2f %6.1f%%\r\n", ggprof_text_safe(rows[i].op, s1, sizeof(s1)),
               ggprof_text_safe(rows[i].backend, s2, sizeof(s2)), rows[i].calls / dt, rows[i].secs / dt * 1e3,
               total > 0 ? 100 * rows[i].secs / total : 0.0);
    }
    if (!n) printf("(no op computed in the window)\r\n");
    free(rows);
    printf("\033[%d;1H\033[7m%-*.*s\033[0m", lines, cols, cols, "s sort  w/- window  p pause  q quit");
    fflush(stdout);
}

static void take(top_state *t) {
    scrape s = { 0 };
    if (fetch(t->host, t->port, &s, t->err, sizeof(t->err)) != 0) {
        scrape_free(&s);
        return;
    }
    t->err[0] = 0;
    s.t = (double) ggprof_now_ns() / 1e9;
    if (t->n == HIST) {
        scrape_free(&t->h[t->first]);
        t->first = (t->first + 1) % HIST;
        t->n--;
    }
    t->h[(t->first + t->n++) % HIST] = s;
}

/* [HOST:]PORT or http://HOST:PORT[/metrics] into host and port. */
static int endpoint(const char *arg, char *host, size_t hl, char *port, size_t pl) {
    const char *p = strncmp(arg, "http://", 7) == 0 ? arg + 7 : arg;
    char buf[300];
    snprintf(buf, sizeof(buf), "%s", p);
    char *slash = strchr(buf, '/');
    if (slash) *slash = 0;
    char *colon = strrchr(buf, ':');
    const char *ps = colon ? colon + 1 : buf;
    char *end;
    long v = strtol(ps, &end, 10);
    if (!*ps || *end || v < 1 || v > 65535) return -1;
    snprintf(port, pl, "%ld", v);
    if (colon) {
        *colon = 0;
        char *h = buf;
        size_t n = strlen(h);
        if (n >= 2 && h[0] == '[' && h[n - 1] == ']') h[n - 1] = 0, h++;
        if (!*h) return -1;
        snprintf(host, hl, "%s", h);
    } else {
        snprintf(host, hl, "127.0.0.1");
    }
    return 0;
}

int ggprof_cmd_top(int argc, char **argv) {
    const char *where = NULL;
    long window = 10;
    const ggprof_opt opts[] = {
        { "--window", NULL, GGPROF_OPT_COUNT, &window, NULL, "SEC",
          "the span the rates are taken over, in seconds (default 10; from 1 to 600)" },
    };
    ggprof_args a = { opts, 1, &where, 1, 0, "one endpoint at a time ('%s' is a second)", 0, 0, NULL };
    int bad = ggprof_parse_args(argc, argv, &a);
    if (bad) return bad;
    if (!where) return ggprof_fail(GGPROF_EXIT_USAGE, "no endpoint given; usage: ggprof top [HOST:]PORT (record --metrics's)");
    if (window < 1 || window > 600) return ggprof_fail(GGPROF_EXIT_USAGE, "--window '%ld' is not from 1 to 600 seconds", window);
    static top_state t; /* the history is large: not on the stack */
    char host[256], port[16];
    if (endpoint(where, host, sizeof(host), port, sizeof(port)) != 0) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "'%s' is not [HOST:]PORT or http://HOST:PORT/metrics", where);
    }
    t.host = host, t.port = port, t.window = (int) window;
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "needs a terminal (stdin and stdout); for a script, read http://%s:%s/metrics",
                           host, port);
    }
    take(&t);
    if (t.err[0] && t.n == 0) return ggprof_fail(GGPROF_EXIT_USAGE, "%s", t.err);
    if (term_enter() != 0) return ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot set the terminal: %s", strerror(errno));
    static const int windows[] = { 1, 5, 10, 30, 60, 120, 300, 600 };
    double next = (double) ggprof_now_ns() / 1e9 + 1;
    draw(&t);
    while (!g_quit) {
        double now = (double) ggprof_now_ns() / 1e9;
        struct pollfd pf = { STDIN_FILENO, POLLIN, 0 };
        int ms = now < next ? (int) ((next - now) * 1000) + 1 : 0;
        int r = poll(&pf, 1, ms);
        bool redraw = g_resized;
        g_resized = 0;
        if (r > 0 && (pf.revents & POLLIN)) {
            char c;
            if (read(STDIN_FILENO, &c, 1) != 1) break;
            if (c == 'q' || c == 'Q') break;
            if (c == 's') g_sort = (g_sort + 1) % N_SORT;
            if (c == 'p' || c == ' ') t.paused = !t.paused;
            if (c == 'w' || c == '+' || c == '-') {
                int i = 0;
                while (i < 7 && windows[i] < t.window) i++;
                i = c == '-' ? (i > 0 ? i - 1 : 0) : (i < 7 && windows[i] == t.window ? i + 1 : i);
                t.window = windows[i];
            }
            redraw = true;
        }
        if ((double) ggprof_now_ns() / 1e9 >= next) {
            next += 1;
            take(&t); /* the history goes on while paused: only the screen stands still */
            if (!t.paused) redraw = true;
        }
        if (redraw) draw(&t);
    }
    term_restore();
    for (int i = 0; i < HIST; i++) scrape_free(&t.h[i]);
    return 0;
}
