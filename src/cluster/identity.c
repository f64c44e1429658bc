/* identity.c -- node ids claimed by locks that die with their process (see
 * identity.h for why). */
#define _GNU_SOURCE
#include "cluster/identity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "store/store.h"

struct node_identity {
    char id[NODE_IDENTITY_MAX + 1];
    char url[1024];
    int fd;      /* SQLite: the lock file; else -1 */
    bool pg;
    store *conn; /* PostgreSQL: the connection holding the advisory lock */
};

/* FNV-1a: which byte of the lock file an id locks. */
static uint64_t id_hash(const char *id)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++) h = (h ^ *p) * 1099511628211ULL;
    return h;
}

/* 1: ours now; 0: a live process has it; -1: error (in err). */
static int lock_file_byte(node_identity *n, const char *id, char *err, size_t errlen)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET,
                       .l_start = (off_t)(id_hash(id) & ((1ULL << 40) - 1)), .l_len = 1};
    if (fcntl(n->fd, F_OFD_SETLK, &fl) == 0) return 1;
    if (errno == EAGAIN || errno == EACCES) return 0;
    snprintf(err, errlen, "node id lock: %s", strerror(errno));
    return -1;
}

static int lock_advisory(node_identity *n, const char *id, char *err, size_t errlen)
{
    store_stmt *st = store_prepare(n->conn, "SELECT CASE WHEN pg_try_advisory_lock(hashtextextended("
                                            "'chime.node:' || CAST($1 AS TEXT), 0)) THEN 1 ELSE 0 END");
    store_bind_str(st, 1, id);
    int rc = store_step(st);
    int64_t got = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    if (rc != STORE_ROW) {
        snprintf(err, errlen, "node id lock: %s", store_errmsg(n->conn));
        return -1;
    }
    return got == 1;
}

static int try_id(node_identity *n, const char *id, char *err, size_t errlen)
{
    return n->fd >= 0 ? lock_file_byte(n, id, err, errlen) : lock_advisory(n, id, err, errlen);
}

static int open_lock(node_identity *n, const char *db_url, char *err, size_t errlen)
{
    if (strncmp(db_url, "sqlite:", 7) == 0) {
        char path[1100];
        snprintf(path, sizeof path, "%s.nodes", db_url + 7);
        n->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (n->fd < 0) snprintf(err, errlen, "node id lock %s: %s", path, strerror(errno));
        return n->fd < 0 ? -1 : 0;
    }
    n->pg = true;
    n->conn = store_open(db_url, err, errlen);
    return n->conn ? 0 : -1;
}

/* The first free "<host>-N". */
static int claim_slot(node_identity *n, char *err, size_t errlen)
{
    char host[40] = "node";
    gethostname(host, sizeof host);
    host[32] = '\0';
    for (int i = 1; i <= NODE_IDENTITY_SLOTS; i++) {
        char id[NODE_IDENTITY_MAX + 1];
        snprintf(id, sizeof id, "%s-%d", host, i);
        int rc = try_id(n, id, err, errlen);
        if (rc < 0) return -1;
        if (rc == 1) {
            snprintf(n->id, sizeof n->id, "%s", id);
            return 0;
        }
    }
    snprintf(err, errlen, "node id: %s-1 to %s-%d are all held by live nodes; give --node-id", host, host,
             NODE_IDENTITY_SLOTS);
    return -1;
}

node_identity *node_identity_claim(const char *db_url, const char *requested, char *err, size_t errlen)
{
    node_identity *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    n->fd = -1;
    snprintf(n->url, sizeof n->url, "%s", db_url);
    int rc = open_lock(n, db_url, err, errlen);
    if (rc == 0 && requested && *requested) {
        rc = try_id(n, requested, err, errlen);
        if (rc == 0) snprintf(err, errlen, "node id %s is held by a live node (ids must be unique)", requested);
        if (rc == 1) snprintf(n->id, sizeof n->id, "%s", requested);
        rc = rc == 1 ? 0 : -1;
    } else if (rc == 0) {
        rc = claim_slot(n, err, errlen);
    }
    if (rc != 0) {
        node_identity_release(n);
        return NULL;
    }
    return n;
}

const char *node_identity_id(const node_identity *n)
{
    return n->id;
}

int node_identity_keep(node_identity *n, char *err, size_t errlen)
{
    if (!n->pg) return 0;
    int64_t one;
    if (n->conn && store_query_int64(n->conn, "SELECT 1", &one) == STORE_ROW) return 0;
    /* The connection (and with it the lock) is gone: take it again. */
    if (n->conn) store_close(n->conn);
    n->conn = store_open(n->url, err, errlen);
    if (!n->conn) return -1;
    int rc = lock_advisory(n, n->id, err, errlen);
    if (rc == 0)
        snprintf(err, errlen, "node id %s was claimed by another process while this one's lock was lost", n->id);
    return rc == 1 ? 0 : -1;
}

void node_identity_release(node_identity *n)
{
    if (!n) return;
    if (n->fd >= 0) close(n->fd);
    /* Unlocked before the close: a closed connection's backend lets its
     * locks go only when it exits, a moment later, and a claim of the same
     * id meanwhile (a quick restart) would find it held. A failure here
     * leaves that moment, nothing worse. */
    if (n->conn) store_exec(n->conn, "SELECT pg_advisory_unlock_all()");
    if (n->conn) store_close(n->conn);
    free(n);
}
