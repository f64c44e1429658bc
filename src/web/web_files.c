/* web_files.c -- the web root read into memory once, and the pure parsing
 * of what a request asks for (path, Accept-Encoding, If-None-Match). */
#define _GNU_SOURCE
#include "web/web.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/base.h"

/* ---- content types ---- */

const char *web_content_type(const char *name)
{
    static const struct { const char *ext, *type; } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".webmanifest", "application/manifest+json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".jpg", "image/jpeg"},
        {".jpeg", "image/jpeg"},
        {".gif", "image/gif"},
        {".webp", "image/webp"},
        {".ico", "image/x-icon"},
        {".woff2", "font/woff2"},
        {".txt", "text/plain; charset=utf-8"},
        {".map", "application/json"},
    };
    const char *dot = strrchr(name, '.');
    const char *slash = strrchr(name, '/');
    if (dot && (!slash || dot > slash))
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcasecmp(dot, types[i].ext) == 0) return types[i].type;
    return "application/octet-stream";
}

static bool compressible(const char *type)
{
    return strncmp(type, "text/", 5) == 0 || strstr(type, "json") || strstr(type, "svg");
}

/* ---- request parsing ---- */

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The page's own routes (web/js/app.js): their first segment. Anything
 * else without a dot stays a plain 404, as a mistyped URL should be. */
static bool web_is_app_route(const char *path)
{
    static const char *const first[] = {"calendar", "chat", "feed", "users", "hot", "notifications",
                                        "admin", "signin", "signup"};
    const char *seg = path + 1, *slash = strchr(seg, '/');
    size_t len = slash ? (size_t)(slash - seg) : strlen(seg);
    for (size_t i = 0; i < sizeof first / sizeof first[0]; i++)
        if (strlen(first[i]) == len && memcmp(first[i], seg, len) == 0) return true;
    return false;
}

web_kind web_path_parse(const char *path, size_t len, char *out, size_t size)
{
    size_t n = 0;
    if (size == 0) return WEB_NOT_FOUND;
    out[0] = '\0';
    if (len == 0 || path[0] != '/') return WEB_NOT_FOUND;
    for (size_t i = 0; i < len; i++) {
        char c = path[i];
        if (c == '%') {
            if (i + 2 >= len) return WEB_NOT_FOUND;
            int hi = hexval(path[i + 1]), lo = hexval(path[i + 2]);
            if (hi < 0 || lo < 0) return WEB_NOT_FOUND;
            c = (char)(hi << 4 | lo);
            /* An encoded slash would make one segment look like two. */
            if (c == '/') return WEB_NOT_FOUND;
            i += 2;
        }
        if (c == '\0' || c == '\\' || (unsigned char)c < 0x20 || c == 0x7f || n + 1 >= size) return WEB_NOT_FOUND;
        out[n++] = c;
    }
    out[n] = '\0';
    if (strncmp(out, "/v1/", 4) == 0 || strcmp(out, "/v1") == 0) return WEB_NOT_FOUND;
    if (n == 1) return WEB_APP_ROUTE; /* "/" */
    /* Segments: non-empty, not hidden ("." and ".." included); a trailing
     * slash is allowed only for app routes. */
    const char *last = out + 1;
    for (const char *p = out + 1;;) {
        const char *slash = strchr(p, '/');
        size_t seg = slash ? (size_t)(slash - p) : strlen(p);
        if (seg == 0 && slash) return WEB_NOT_FOUND;
        if (seg > 0 && p[0] == '.') return WEB_NOT_FOUND;
        if (seg > 0) last = p;
        if (!slash) break;
        p = slash + 1;
    }
    const char *end = strchr(last, '/');
    size_t lastlen = end ? (size_t)(end - last) : strlen(last);
    if (memchr(last, '.', lastlen)) return out[n - 1] == '/' ? WEB_NOT_FOUND : WEB_FILE;
    return web_is_app_route(out) ? WEB_APP_ROUTE : WEB_NOT_FOUND;
}

/* Steps over optional whitespace. */
static size_t ows(const char *v, size_t len, size_t i)
{
    while (i < len && (v[i] == ' ' || v[i] == '\t')) i++;
    return i;
}

/* True when the parameters after a coding ("; q=0", "; q=0.000") give it
 * weight zero. */
static bool q_is_zero(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] != ';') continue;
        size_t j = ows(p, len, i + 1);
        if (j + 1 < len && (p[j] == 'q' || p[j] == 'Q') && p[j + 1] == '=') {
            j += 2;
            if (j >= len || p[j] != '0') return false;
            for (j++; j < len && p[j] != ';'; j++)
                if (p[j] != '.' && p[j] != '0' && p[j] != ' ' && p[j] != '\t') return false;
            return true;
        }
    }
    return false;
}

bool web_accepts_gzip(const char *value, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t start = ows(value, len, i), end = start;
        while (end < len && value[end] != ',') end++;
        size_t tok = start;
        while (tok < end && value[tok] != ';' && value[tok] != ' ' && value[tok] != '\t') tok++;
        if (tok - start == 4 && strncasecmp(value + start, "gzip", 4) == 0)
            return !q_is_zero(value + tok, end - tok);
        i = end + 1;
    }
    return false;
}

bool web_etag_matches(const char *value, size_t len, const char *etag)
{
    size_t elen = strlen(etag);
    size_t i = 0;
    while (i < len) {
        i = ows(value, len, i);
        if (i < len && value[i] == ',') {
            i++;
            continue;
        }
        if (i < len && value[i] == '*') return true;
        if (i + 1 < len && value[i] == 'W' && value[i + 1] == '/') i += 2;
        if (i >= len || value[i] != '"') return false;
        size_t close = i + 1;
        while (close < len && value[close] != '"') close++;
        if (close >= len) return false;
        size_t tlen = close + 1 - i;
        if (tlen == elen && memcmp(value + i, etag, elen) == 0) return true;
        i = close + 1;
    }
    return false;
}

/* ---- loading ---- */

typedef struct loader {
    web_site *site;
    size_t cap, total;
    char *err;
    size_t errlen;
} loader;

static int read_all(const char *file, size_t size, unsigned char **out)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return -1;
    unsigned char *buf = malloc(size ? size : 1);
    size_t got = 0;
    while (buf && got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf || got != size) {
        free(buf);
        return -1;
    }
    *out = buf;
    return 0;
}

/* A gzip copy, kept only when it saves at least a tenth. */
static void make_gzip(web_file *f)
{
    if (f->len < 256 || !compressible(f->content_type)) return;
    z_stream z = {0};
    if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) return;
    uLong bound = deflateBound(&z, (uLong)f->len) + 32;
    unsigned char *out = malloc(bound);
    if (out) {
        z.next_in = f->data;
        z.avail_in = (uInt)f->len;
        z.next_out = out;
        z.avail_out = (uInt)bound;
        if (deflate(&z, Z_FINISH) == Z_STREAM_END && z.total_out < f->len - f->len / 10) {
            f->gz = out;
            f->gzlen = z.total_out;
            out = NULL;
        }
    }
    free(out);
    deflateEnd(&z);
}

static int add_file(loader *l, const char *file, const char *urlpath, size_t size)
{
    web_site *s = l->site;
    if (s->n == WEB_MAX_FILES) return base_errf(l->err, l->errlen, "more than %d files", WEB_MAX_FILES);
    if (size > WEB_MAX_FILE_BYTES) return base_errf(l->err, l->errlen, "%s: larger than 8 MiB", file);
    if ((l->total += size) > WEB_MAX_TOTAL_BYTES)
        return base_errf(l->err, l->errlen, "more than 64 MiB of files");
    if (strlen(urlpath) >= WEB_PATH_MAX) return base_errf(l->err, l->errlen, "%s: path too long", file);
    if (s->n == l->cap) {
        web_file *grown = base_grow(s->files, sizeof *s->files, &l->cap);
        if (!grown) return base_errf(l->err, l->errlen, "out of memory");
        s->files = grown;
    }
    web_file *f = &s->files[s->n];
    memset(f, 0, sizeof *f);
    memcpy(f->path, urlpath, strlen(urlpath) + 1); /* checked shorter above */
    if (read_all(file, size, &f->data) != 0)
        return base_errf(l->err, l->errlen, "%s: cannot read: %s", file, strerror(errno));
    f->len = size;
    f->content_type = web_content_type(urlpath);
    char hex[65];
    base_sha256_hex(f->data, f->len, hex);
    snprintf(f->etag, sizeof f->etag, "\"%.16s\"", hex);
    snprintf(f->etag_gz, sizeof f->etag_gz, "\"%.16s-gz\"", hex);
    make_gzip(f);
    s->n++;
    return 0;
}

/* Regular files only (symlinks and hidden names are skipped), depth <= 8. */
static int walk(loader *l, const char *dir, const char *urlprefix, int depth)
{
    if (depth > 8) return 0;
    DIR *d = opendir(dir);
    if (!d) return base_errf(l->err, l->errlen, "%s: %s", dir, strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char file[PATH_MAX], url[WEB_PATH_MAX * 2];
        struct stat st;
        if (snprintf(file, sizeof file, "%s/%s", dir, e->d_name) >= (int)sizeof file ||
            snprintf(url, sizeof url, "%s/%s", urlprefix, e->d_name) >= (int)sizeof url)
            continue;
        if (lstat(file, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) rc = walk(l, file, url, depth + 1);
        else if (S_ISREG(st.st_mode)) rc = add_file(l, file, url, (size_t)st.st_size);
    }
    closedir(d);
    return rc;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const web_file *)a)->path, ((const web_file *)b)->path);
}

const web_file *web_site_find(const web_site *s, const char *path)
{
    if (!s || !s->n) return NULL;
    web_file key;
    snprintf(key.path, sizeof key.path, "%s", path);
    return bsearch(&key, s->files, s->n, sizeof *s->files, by_path);
}

web_site *web_site_load(const char *root, char *err, size_t errlen)
{
    struct stat st;
    if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        base_errf(err, errlen, "%s is not a directory", root);
        return NULL;
    }
    web_site *s = calloc(1, sizeof *s);
    loader l = {.site = s, .err = err, .errlen = errlen};
    if (!s || walk(&l, root, "", 0) != 0) {
        if (!s) base_errf(err, errlen, "out of memory");
        web_site_free(s);
        return NULL;
    }
    if (s->n) qsort(s->files, s->n, sizeof *s->files, by_path);
    s->index = web_site_find(s, "/index.html");
    return s;
}

void web_site_free(web_site *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->files[i].data);
        free(s->files[i].gz);
    }
    free(s->files);
    free(s);
}

static bool has_index(const char *dir)
{
    char p[PATH_MAX];
    struct stat st;
    return snprintf(p, sizeof p, "%s/index.html", dir) < (int)sizeof p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

bool web_root_find(char *buf, size_t size)
{
    if (has_index("web")) {
        snprintf(buf, size, "web");
        return true;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = '\0';
    /* build/chime -> ../web; build/san/chime -> ../../web. */
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash) return false;
        *slash = '\0';
        char cand[PATH_MAX];
        if (snprintf(cand, sizeof cand, "%s/web", exe) < (int)sizeof cand && has_index(cand)) {
            snprintf(buf, size, "%s", cand);
            return true;
        }
    }
    return false;
}
