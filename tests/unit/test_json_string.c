/* Unit tests of the one JSON string escaper (schema/v3_format.h): escapes, UTF-8 passed through, each byte that is
 * not part of a valid UTF-8 sequence as U+FFFD, DEL and the C1 controls as \u00XX, cuts at a character's boundary,
 * the FILE writer's chunks; against the rule written out the long way (by code point), on every string of up to
 * three bytes and on random ones. And the text escaper beside it (ggprof_text_safe, ggprof_text_write). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "v3_format.h"

/* The rule the long way: decode a code point, check its range. */
static size_t ref_escape(char *out, const char *str, size_t n_in, unsigned flags) {
    static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    const unsigned char *s = (const unsigned char *) str, *end = s + n_in;
    size_t o = 0;
    while (s < end && *s) {
        unsigned c = *s;
        if (c >= 0x80) {
            int n       = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
            uint32_t cp = n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
            int ok      = n > 0;
            for (int i = 1; ok && i < n; i++) {
                ok = s + i < end && (s[i] & 0xc0) == 0x80;
                if (ok) cp = cp << 6 | (s[i] & 0x3f);
            }
            ok = ok && cp >= min_cp[n] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
            if (ok && cp <= 0x9f) { /* a C1 control: escaped as C0 and DEL are */
                o += (size_t) sprintf(out + o, "\\u%04x", (unsigned) cp);
                s += n;
            } else if (ok) {
                memcpy(out + o, s, (size_t) n);
                o += (size_t) n;
                s += n;
            } else {
                o += (size_t) sprintf(out + o, "\\ufffd");
                s++;
            }
            continue;
        }
        const char *two = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\t' ? "\\t"
                        : c == '\r' ? "\\r" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
        if (two) o += (size_t) sprintf(out + o, "%s", two);
        else if (c < 0x20 || c == 0x7f || ((flags & GGPROF_JSON_HTML) && (c == '<' || c == '>' || c == '&')))
            o += (size_t) sprintf(out + o, "\\u%04x", c);
        else out[o++] = (char) c;
        s++;
    }
    out[o] = '\0';
    return o;
}

/* s through ggprof_json_escape (room for all of it) equals the rule's; 1 when it does. */
static int same_as_rule(const char *s, unsigned flags) {
    char got[256], want[256];
    size_t used, n = ggprof_json_escape(got, sizeof(got), s, &used, flags);
    size_t m = ref_escape(want, s, strlen(s), flags);
    return n == m && memcmp(got, want, n) == 0 && used == strlen(s);
}

static int escapes_to(const char *s, unsigned flags, const char *want) {
    char got[512];
    size_t used, n = ggprof_json_escape(got, sizeof(got) - 1, s, &used, flags);
    got[n] = '\0';
    if (strcmp(got, want) != 0) fprintf(stderr, "  escaped to '%s', expected '%s'\n", got, want);
    return strcmp(got, want) == 0 && used == strlen(s);
}

static void test_examples(void) {
    CHECK(escapes_to("MUL_MAT blk.3 (view)", 0, "MUL_MAT blk.3 (view)"));
    CHECK(escapes_to("q\"uote\\back", 0, "q\\\"uote\\\\back"));
    CHECK(escapes_to("\n\t\r\b\f\x01\x1f\x7f", 0, "\\n\\t\\r\\b\\f\\u0001\\u001f\\u007f"));
    CHECK(escapes_to("\xc2\x80\xc2\x9b\xc2\x9f\xc2\xa0", 0, "\\u0080\\u009b\\u009f\xc2\xa0")); /* C1, then NBSP */
    CHECK(escapes_to("</script>&", 0, "</script>&"));
    CHECK(escapes_to("</script>&", GGPROF_JSON_HTML, "\\u003c/script\\u003e\\u0026"));
    /* valid UTF-8 as it is: 2, 3 and 4 bytes, the last code point, U+FFFF, the last before the surrogates */
    CHECK(escapes_to("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\xef\xbf\xbf\xed\x9f\xbf", 0,
                     "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\xef\xbf\xbf\xed\x9f\xbf"));
    /* each byte that is not part of a character: one U+FFFD */
    CHECK(escapes_to("bad\xff\xfe-3", 0, "bad\\ufffd\\ufffd-3"));
    CHECK(escapes_to("x\x80y", 0, "x\\ufffdy"));                                  /* a stray continuation */
    CHECK(escapes_to("\xc0\xaf", 0, "\\ufffd\\ufffd"));                           /* overlong '/' */
    CHECK(escapes_to("\xe0\x80\xaf", 0, "\\ufffd\\ufffd\\ufffd"));                /* overlong, 3 bytes */
    CHECK(escapes_to("\xf0\x80\x80\xaf", 0, "\\ufffd\\ufffd\\ufffd\\ufffd"));     /* overlong, 4 bytes */
    CHECK(escapes_to("\xed\xa0\x80", 0, "\\ufffd\\ufffd\\ufffd"));                /* a surrogate */
    CHECK(escapes_to("\xf4\x90\x80\x80", 0, "\\ufffd\\ufffd\\ufffd\\ufffd"));     /* above U+10FFFF */
    CHECK(escapes_to("\xf5\x80\x80\x80", 0, "\\ufffd\\ufffd\\ufffd\\ufffd"));     /* a lead byte of none */
    CHECK(escapes_to("sign_\xe2\x82", 0, "sign_\\ufffd\\ufffd"));                 /* cut at the end (ggml's 63) */
    CHECK(escapes_to("\xe2\x82x\xc3", 0, "\\ufffd\\ufffdx\\ufffd"));
}

/* Every string of one and two bytes (NUL ends a string, so 1-255 each), with and without the HTML flag; of three
 * and four bytes, every lead byte of three and four with every second byte, and the others continuation bytes at
 * their range's edges or bytes that end a sequence. */
static void test_every_short_string(void) {
    static const unsigned char tail[] = { 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff, 0x01, 'a', '"', 0x7f };
    const size_t nt = sizeof(tail);
    int bad = 0;
    char s[5] = { 0 };
    for (int a = 1; a < 256; a++) {
        s[0] = (char) a, s[1] = 0;
        bad += !same_as_rule(s, 0) + !same_as_rule(s, GGPROF_JSON_HTML);
        for (int b = 1; b < 256; b++) {
            s[1] = (char) b, s[2] = 0;
            bad += !same_as_rule(s, 0) + !same_as_rule(s, GGPROF_JSON_HTML);
            if (a < 0xe0) continue;
            for (size_t c = 0; c < nt; c++) {
                s[2] = (char) tail[c], s[3] = 0;
                bad += !same_as_rule(s, 0);
                for (size_t d = 0; a >= 0xf0 && d < nt; d++) {
                    s[3] = (char) tail[d];
                    bad += !same_as_rule(s, 0);
                }
            }
        }
    }
    CHECK_EQ_INT(bad, 0);
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned) (g_rng >> 33) % n;
}

/* A byte from an alphabet that makes the interesting cases common: lead bytes at the edges of their ranges,
 * continuation bytes, escapes, plain ASCII, anything. */
static char rnd_byte(void) {
    static const unsigned char pick[] = { 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xc0, 0xc1, 0x80,
                                          0x8f, 0x90, 0x9f, 0xa0, 0xbf, '"', '\\', '<', '&', '\n', 0x01, 'a' };
    unsigned k = rnd(4);
    if (k == 0) return (char) (1 + rnd(255));
    if (k == 1) return (char) (0x80 + rnd(64));
    return (char) pick[rnd(sizeof(pick))];
}

static void test_random_strings(void) {
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        char s[16];
        unsigned n = rnd(sizeof(s));
        for (unsigned j = 0; j < n; j++) s[j] = rnd_byte();
        s[n] = '\0';
        bad += !same_as_rule(s, i & 1 ? GGPROF_JSON_HTML : 0);
    }
    CHECK_EQ_INT(bad, 0);
}

/* Room for part of it: whole escapes and whole characters only, and it stops only where the next does not fit. */
static void test_cuts(void) {
    const char *s = "a\xc3\xa9\"\x01\xe2\x82\xac\xff<\xf0\x9f\x98\x80z\xe2\x82";
    int bad = 0;
    for (size_t cap = 0; cap < 48; cap++) {
        char got[64], want[256], rest[64];
        size_t used, n = ggprof_json_escape(got, cap, s, &used, GGPROF_JSON_HTML);
        size_t m = ref_escape(want, s, used, GGPROF_JSON_HTML);
        bad += n > cap || n != m || memcmp(got, want, n) != 0;
        size_t used2 = 0; /* what is left does not start with a unit that would have fit */
        if (s[used] && n <= cap)
            bad += ggprof_json_escape(rest, cap - n, s + used, &used2, GGPROF_JSON_HTML) != 0 || used2 != 0;
    }
    CHECK_EQ_INT(bad, 0);
    /* ggprof_json_string: quoted, closed and NUL-terminated in any room of 3 or more */
    for (size_t len = 0; len < 40; len++) {
        char buf[64];
        memset(buf, 'X', sizeof(buf));
        size_t n = ggprof_json_string(buf, len, s);
        if (len == 0) continue;
        CHECK(n < len && buf[n] == '\0');
        if (len < 3) continue;
        CHECK(buf[0] == '"' && buf[n - 1] == '"' && n >= 2);
        char want[256];
        size_t used;
        char inner[64];
        size_t k = ggprof_json_escape(inner, len - 3, s, &used, 0);
        CHECK(k == n - 2 && memcmp(buf + 1, inner, k) == 0);
        CHECK(ref_escape(want, s, used, 0) == k && memcmp(want, inner, k) == 0);
    }
    char buf[16];
    CHECK(ggprof_json_string(buf, sizeof(buf), NULL) == 4 && strcmp(buf, "null") == 0);
    CHECK(ggprof_json_string(buf, sizeof(buf), "a\xff") == 9 && strcmp(buf, "\"a\\ufffd\"") == 0);
}

/* The FILE writer escapes in chunks: long strings whose characters and escapes straddle the chunks' edges. */
static void test_put_long(void) {
    static const char *const pieces[] = { "\xe2\x82\xac", "\x01", "\xff", "\xf0\x9f\x98\x80", "\"", "<" };
    for (int shift = 0; shift < 8; shift++) {
        for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
            size_t pl = strlen(pieces[p]), n = (size_t) shift;
            char  *s  = malloc(5000 + 8);
            memset(s, 'a', (size_t) shift);
            while (n + pl < 5000) {
                memcpy(s + n, pieces[p], pl);
                n += pl;
            }
            s[n] = '\0';
            char *want = malloc(6 * n + 3);
            want[0] = '"';
            size_t m = 1 + ref_escape(want + 1, s, n, GGPROF_JSON_HTML);
            want[m++] = '"';
            char  *got = NULL;
            size_t len = 0;
            FILE  *f   = open_memstream(&got, &len);
            ggprof_json_put(f, s, GGPROF_JSON_HTML);
            fclose(f);
            CHECK(len == m && memcmp(got, want, m) == 0);
            free(got);
            free(want);
            free(s);
        }
    }
    char  *got = NULL;
    size_t len = 0;
    FILE  *f   = open_memstream(&got, &len);
    ggprof_json_put(f, NULL, 0);
    ggprof_json_put(f, "", 0);
    fclose(f);
    CHECK(len == 6 && memcmp(got, "null\"\"", 6) == 0);
    free(got);
}

/* A multi-MB string through the FILE writer: the same bytes as the rule, escapes and characters far apart. */
static void test_put_huge(void) {
    static const char *const pieces[] = { "\"", "\xe2\x82\xac", "\xff", "\n", "<" };
    size_t n = 6u << 20;
    char  *s = malloc(n + 1);
    memset(s, 'x', n);
    for (size_t i = 0, k = 0; i + 4 < n; i += 99991, k++) memcpy(s + i, pieces[k % 5], strlen(pieces[k % 5]));
    s[n] = '\0';
    char  *want = malloc(6 * n + 3);
    size_t m    = 0;
    want[m++]   = '"';
    m += ref_escape(want + m, s, n, GGPROF_JSON_HTML);
    want[m++]  = '"';
    char  *got = NULL;
    size_t len = 0;
    FILE  *f   = open_memstream(&got, &len);
    ggprof_json_put(f, s, GGPROF_JSON_HTML);
    fclose(f);
    CHECK(len == m && memcmp(got, want, m) == 0);
    free(got);
    free(want);
    free(s);
}

/* The escaper reads no further than what fits in its output: a long string is read once, whatever the chunks (it
 * used to scan each plain run to its end, once per chunk). The bytes past the room are an unreadable page here. */
static void test_reads_only_what_fits(void) {
    size_t pg = (size_t) sysconf(_SC_PAGESIZE);
    char  *m  = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    if (m == MAP_FAILED) return;
    memset(m, 'a', pg); /* no end in this page: the next one cannot be read */
    CHECK(mprotect(m + pg, pg, PROT_NONE) == 0);
    char   out[1024];
    size_t used = 0, o = ggprof_json_escape(out, sizeof(out), m + pg - sizeof(out), &used, 0);
    CHECK(o == sizeof(out) && used == sizeof(out));
    m[pg - 1] = '"'; /* an escape that does not fit: still nothing read past it */
    o = ggprof_json_escape(out, sizeof(out), m + pg - sizeof(out), &used, 0);
    CHECK(o == sizeof(out) - 1 && used == sizeof(out) - 1);
    munmap(m, 2 * pg);
}

/* ggprof_text_safe: printable UTF-8 kept, every other byte written out; cut at a character's boundary. */
static void test_text_safe(void) {
    char buf[64];
    const char *plain = "blk.0.attn_q \xc3\xa9\xe2\x82\xac";
    CHECK(ggprof_text_safe(plain, buf, sizeof(buf)) == plain);
    CHECK(strcmp(ggprof_text_safe("a\x1b]0;t\x07\n\t\r\x7f", buf, sizeof(buf)), "a\\x1b]0;t\\x07\\n\\t\\r\\x7f") == 0);
    CHECK(strcmp(ggprof_text_safe("\xc2\x9b" "1m\xc2\xa0", buf, sizeof(buf)), "\\xc2\\x9b1m\xc2\xa0") == 0); /* C1 CSI, NBSP */
    CHECK(strcmp(ggprof_text_safe("bad\xff\xfe-\xe2\x82", buf, sizeof(buf)), "bad\\xff\\xfe-\\xe2\\x82") == 0);
    CHECK(strcmp(ggprof_text_safe("\x01\xe2\x82\xac", buf, 8), "\\x01\xe2\x82\xac") == 0);
    CHECK(strcmp(ggprof_text_safe("\x01\xe2\x82\xac", buf, 7), "\\x01") == 0); /* the euro sign would not fit */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ggprof_text_write(f, "a\0b\nc\t\x1b\xc2\x9b", 9, 1);
    fclose(f);
    CHECK(text && strcmp(text, "a\\x00b\nc\t\\x1b\\xc2\\x9b") == 0);
    free(text);
}

int main(void) {
    int failures = 0;
    RUN(test_examples);
    RUN(test_every_short_string);
    RUN(test_random_strings);
    RUN(test_cuts);
    RUN(test_put_long);
    RUN(test_put_huge);
    RUN(test_reads_only_what_fits);
    RUN(test_text_safe);
    return failures ? 1 : 0;
}
