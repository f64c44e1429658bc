/* bare.c -- the floor for bench/http: h2o 2.2.5 with nothing on top. One
 * event loop per thread with its own SO_REUSEPORT listener (as chime has),
 * answering every request with {"status":"ok"}: no router, no database, no
 * access log, no metrics. Usage: bare PORT [THREADS] */
#define _GNU_SOURCE
#include <h2o.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static h2o_globalconf_t config;
static int port;

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    static const char body[] = "{\"status\":\"ok\"}";
    req->res.status = 200;
    req->res.reason = "OK";
    req->res.content_length = sizeof body - 1;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/json"));
    h2o_send_inline(req, body, sizeof body - 1);
    return 0;
}

typedef struct loop {
    h2o_context_t ctx;
    h2o_accept_ctx_t accept;
} loop;

static void on_accept(h2o_socket_t *listener, const char *err)
{
    loop *l = listener->data;
    h2o_socket_t *sock;
    if (err) return;
    while ((sock = h2o_evloop_socket_accept(listener))) h2o_accept(&l->accept, sock);
}

static void *run(void *arg)
{
    loop *l = calloc(1, sizeof *l);
    h2o_context_init(&l->ctx, h2o_evloop_create(), &config);
    l->accept.ctx = &l->ctx;
    l->accept.hosts = config.hosts;
    int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(0x7f000001)};
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4096) != 0) {
        perror("bind");
        exit(1);
    }
    h2o_socket_t *sock = h2o_evloop_socket_create(l->ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    sock->data = l;
    h2o_socket_read_start(sock, on_accept);
    for (;;) h2o_evloop_run(l->ctx.loop, INT32_MAX);
    return arg;
}

int main(int argc, char **argv)
{
    port = argc > 1 ? atoi(argv[1]) : 19098;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    h2o_config_init(&config);
    h2o_hostconf_t *host = h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    h2o_create_handler(path, sizeof(h2o_handler_t))->on_req = on_req;
    pthread_t t;
    for (int i = 1; i < threads; i++) pthread_create(&t, NULL, run, NULL);
    run(NULL);
}
