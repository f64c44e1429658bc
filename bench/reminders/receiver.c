/* receiver.c -- the webhook receiver for bench/reminders, in C on h2o.
 *
 * The same contract as receiver.js (which it replaces by default): takes
 * chime's signed POSTs and records, per delivery id, when it first arrived
 * and how late that was (arrival minus the payload's "due"); counts
 * repeats of an id.
 *   receiver PORT OUT
 * Prints "listening" once bound. GET /count answers {"unique":N,"repeats":M};
 * on SIGTERM it writes OUT: {"repeats":M,"got":[[lateness ms, arrival ms], ...]}
 * and exits.
 *
 * Why C: the receiver shares the benchmark machine's two cores with the
 * server it measures. Node's http module took ~40 % of a core at 15,000
 * requests a second, taken from chime; in production a receiver runs
 * elsewhere. This one checks the same things and costs a fraction. */
#define _GNU_SOURCE
#include <h2o.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct seen {
    char id[48];
    int64_t lateness, arrival;
    bool used;
} seen;

typedef struct receiver {
    h2o_handler_t super;
    seen *slots;
    size_t cap, unique;
    int64_t repeats;
} receiver;

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t hash_of(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static void grow(receiver *r);

/* The slot of id: its own, or the empty one where it goes. */
static seen *slot_of(receiver *r, const char *id, size_t n)
{
    size_t i = hash_of(id, n) & (r->cap - 1);
    while (r->slots[i].used && (strlen(r->slots[i].id) != n || memcmp(r->slots[i].id, id, n) != 0))
        i = (i + 1) & (r->cap - 1);
    return &r->slots[i];
}

static void grow(receiver *r)
{
    seen *old = r->slots;
    size_t oldcap = r->cap;
    r->cap = oldcap ? oldcap * 2 : 1 << 21;
    r->slots = calloc(r->cap, sizeof *r->slots);
    if (!r->slots) abort();
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].used) *slot_of(r, old[i].id, strlen(old[i].id)) = old[i];
    free(old);
}

/* "due":"2026-11-23T10:00:00.123Z" in the body, as Unix ms; -1 if absent. */
static int64_t due_of(const char *body, size_t len)
{
    const char *p = memmem(body, len, "\"due\":\"", 7);
    if (!p || (size_t)(p - body) + 7 + 24 > len) return -1;
    struct tm tm = {0};
    int ms = 0;
    if (sscanf(p + 7, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
               &tm.tm_sec, &ms) != 7)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000 + ms;
}

static int respond(h2o_req_t *req, int status, const char *body)
{
    req->res.status = status;
    req->res.reason = status == 200 ? "OK" : status == 204 ? "No Content" : "Bad Request";
    size_t n = strlen(body);
    req->res.content_length = n;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/json"));
    h2o_send_inline(req, body, n);
    return 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    receiver *r = (receiver *)self;
    int64_t now = now_ms();
    if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"))) {
        char out[96];
        snprintf(out, sizeof out, "{\"unique\":%zu,\"repeats\":%lld}", r->unique, (long long)r->repeats);
        return respond(req, 200, out);
    }
    ssize_t h = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-chime-delivery"), -1);
    if (h < 0 || req->headers.entries[h].value.len >= sizeof r->slots->id) return respond(req, 400, "{}");
    h2o_iovec_t id = req->headers.entries[h].value;
    if ((r->unique + 1) * 2 > r->cap) grow(r);
    seen *s = slot_of(r, id.base, id.len);
    if (s->used) {
        r->repeats++;
    } else {
        int64_t due = due_of(req->entity.base, req->entity.len);
        if (due < 0) return respond(req, 400, "{}");
        memcpy(s->id, id.base, id.len);
        s->id[id.len] = '\0';
        s->lateness = now - due;
        s->arrival = now;
        s->used = true;
        r->unique++;
    }
    req->res.status = 204;
    req->res.reason = "No Content";
    req->res.content_length = 0;
    h2o_send_inline(req, "", 0);
    return 0;
}

static int write_out(receiver *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "{\"repeats\":%lld,\"got\":[", (long long)r->repeats);
    bool first = true;
    for (size_t i = 0; i < r->cap; i++) {
        if (!r->slots[i].used) continue;
        fprintf(f, "%s[%lld,%lld]", first ? "" : ",", (long long)r->slots[i].lateness, (long long)r->slots[i].arrival);
        first = false;
    }
    fputs("]}", f);
    return fclose(f);
}

static h2o_accept_ctx_t accept_ctx;

static void on_accept(h2o_socket_t *listener, const char *err)
{
    if (err) return;
    h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
    if (sock) h2o_accept(&accept_ctx, sock);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: receiver PORT OUT\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_term);
    static h2o_globalconf_t config;
    static h2o_context_t ctx;
    h2o_config_init(&config);
    h2o_hostconf_t *host = h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    receiver *r = (receiver *)h2o_create_handler(path, sizeof *r);
    r->super.on_req = on_req;
    grow(r);

    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1])),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
        bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 1024) != 0) {
        perror("receiver: listen");
        return 1;
    }
    h2o_evloop_t *loop = h2o_evloop_create();
    h2o_context_init(&ctx, loop, &config);
    accept_ctx.ctx = &ctx;
    accept_ctx.hosts = config.hosts;
    h2o_socket_t *listener = h2o_evloop_socket_create(loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    h2o_socket_read_start(listener, on_accept);
    printf("listening\n");
    fflush(stdout);
    while (!stop) h2o_evloop_run(loop, 100);
    return write_out(r, argv[2]) == 0 ? 0 : 1;
}
