/* The device roofs (memory bandwidth, compute) given on the command line or in a file, and their options. */
#include "roofline.h"

#include "cli.h"
#include "output.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


/* ---------------------------------------------------------------- roofs */

static int parse_positive(const char *s, char **end, double *v) {
    errno = 0;
    *v    = strtod(s, end);
    return *end != s && errno == 0 && isfinite(*v) && *v > 0 ? 0 : -1;
}

int ggprof_roof_parse(ggprof_roofs *r, const char *spec, char *why, size_t why_len) {
    const char *eq = strchr(spec, '=');
    ggprof_roof roof;
    memset(&roof, 0, sizeof(roof));
    if (!eq || eq == spec || (size_t) (eq - spec) >= sizeof(roof.backend)) {
        snprintf(why, why_len, "bad roof '%s'; expected BACKEND=GBPS,GFLOPS[,GFLOPS_F16] (e.g. CPU=20,150)", spec);
        return -1;
    }
    memcpy(roof.backend, spec, (size_t) (eq - spec));
    char *end;
    double *fields[3] = { &roof.gbps, &roof.gflops, &roof.gflops_f16 };
    const char *p = eq + 1;
    for (int i = 0; i < 3; i++) {
        if (parse_positive(p, &end, fields[i]) != 0 || (*end != ',' && *end != '\0') || (i == 2 && *end)) {
            snprintf(why, why_len, "bad roof '%s'; expected BACKEND=GBPS,GFLOPS[,GFLOPS_F16] with positive numbers", spec);
            return -1;
        }
        if (*end == '\0') {
            if (i == 0) {
                snprintf(why, why_len, "bad roof '%s': no GFLOPS; expected BACKEND=GBPS,GFLOPS[,GFLOPS_F16]", spec);
                return -1;
            }
            break;
        }
        p = end + 1;
    }
    for (size_t i = 0; i < r->n; i++) {
        if (strcasecmp(r->v[i].backend, roof.backend) == 0) {
            r->v[i] = roof;
            return 0;
        }
    }
    if (r->n == sizeof(r->v) / sizeof(r->v[0])) {
        snprintf(why, why_len, "too many roofs (at most %zu backends)", sizeof(r->v) / sizeof(r->v[0]));
        return -1;
    }
    r->v[r->n++] = roof;
    return 0;
}

int ggprof_roofs_read(ggprof_roofs *r, const char *path, char *why, size_t why_len) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, why_len, "cannot open roof file '%s': %s", path, strerror(errno));
        return -1;
    }
    char line[512], sub[400];
    int  lineno = 0, rc = 0, n = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *s = line, *e = line + strlen(line);
        while (*s && isspace((unsigned char) *s)) s++;
        while (e > s && isspace((unsigned char) e[-1])) *--e = '\0';
        if (!*s) continue;
        if (ggprof_roof_parse(r, s, sub, sizeof(sub)) != 0) {
            snprintf(why, why_len, "%s:%d: %s", path, lineno, sub);
            rc = -1;
        }
        n++;
    }
    if (rc == 0 && ferror(f)) {
        snprintf(why, why_len, "cannot read roof file '%s': %s", path, strerror(errno));
        rc = -1;
    }
    fclose(f);
    if (rc == 0 && n == 0) {
        snprintf(why, why_len, "roof file '%s' has no roof; expected lines BACKEND=GBPS,GFLOPS[,GFLOPS_F16]", path);
        rc = -1;
    }
    return rc;
}

int ggprof_roofs_opt(void *roofs, const char *option, const char *value) {
    char why[512];
    int  rc = strcmp(option, "--roof-file") == 0 ? ggprof_roofs_read(roofs, value, why, sizeof(why))
                                                 : ggprof_roof_parse(roofs, value, why, sizeof(why));
    return rc == 0 ? 0 : ggprof_fail(GGPROF_EXIT_USAGE, "%s", why);
}

int ggprof_format_opt(void *format, const char *option, const char *value) {
    ggprof_format f;
    if (ggprof_format_parse(value, &f) != 0) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "%s '%s': unknown format; expected table, csv or json", option, value);
    }
    *(int *) format = (int) f;
    return 0;
}

const ggprof_roof *ggprof_roofs_find(const ggprof_roofs *r, const char *backend) {
    for (size_t i = 0; r && i < r->n; i++) {
        if (strcasecmp(r->v[i].backend, backend) == 0) return &r->v[i];
    }
    return NULL;
}

void ggprof_roofs_describe(FILE *f, const ggprof_roofs *r) {
    if (!r->n) fprintf(f, "roof%%: give --roof BACKEND=GBPS,GFLOPS or --roof-file FILE ('ggprof calibrate').\n");
    for (size_t i = 0; i < r->n; i++) {
        fprintf(f, "roof %s: %.2f GB/s, %.2f GFLOP/s", r->v[i].backend, r->v[i].gbps, r->v[i].gflops);
        if (r->v[i].gflops_f16 > 0) fprintf(f, ", F16 %.2f GFLOP/s", r->v[i].gflops_f16);
        fprintf(f, "\n");
    }
}

double ggprof_rl_roof_ns(const ggprof_roof *r, const ggprof_rl_cost *c) {
    if (!r || !c->bytes_known) return 0;
    double peak   = c->f16 && r->gflops_f16 > 0 ? r->gflops_f16 : r->gflops;
    double mem_ns = (c->bytes_read + c->bytes_written) / r->gbps; /* GB/s is bytes per ns */
    double cmp_ns = c->flops / peak;
    return mem_ns > cmp_ns ? mem_ns : cmp_ns;
}
