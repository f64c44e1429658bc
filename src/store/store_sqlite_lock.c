/* store_sqlite_lock.c -- the per-file writer queue of SQLite connections
 * (see store_sqlite_lock.h): a registry of files by device and inode, and
 * for each a lock handed to its waiters in arrival order. */
#include "store/store_sqlite_lock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "base/base.h"

/* A thread waiting for the lock: it sleeps on its own condition, so a
 * hand-over wakes exactly the thread it goes to. */
typedef struct wlock_waiter {
    pthread_cond_t cv;
    pthread_t thread;
    bool granted;
    struct wlock_waiter *next;
} wlock_waiter;

struct sqlite_wlock {
    dev_t dev;
    ino_t ino;
    int refs;                  /* connections using it; guarded by registry_mu */
    int failed;                /* sqlite_wlock_fail (__atomic) */
    struct sqlite_wlock *next; /* in the registry */
    pthread_mutex_t mu;        /* the rest */
    bool held;
    pthread_t owner;           /* valid while held */
    wlock_waiter *head, *tail; /* the queue, oldest first */
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static sqlite_wlock *registry;

sqlite_wlock *sqlite_wlock_for(const char *path)
{
    struct stat sb;
    if (!path || !*path || stat(path, &sb) != 0) return NULL;
    pthread_mutex_lock(&registry_mu);
    sqlite_wlock *l = registry;
    while (l && !(l->dev == sb.st_dev && l->ino == sb.st_ino)) l = l->next;
    if (!l && (l = calloc(1, sizeof *l))) {
        l->dev = sb.st_dev;
        l->ino = sb.st_ino;
        pthread_mutex_init(&l->mu, NULL);
        l->next = registry;
        registry = l;
    }
    if (l) l->refs++;
    pthread_mutex_unlock(&registry_mu);
    return l;
}

void sqlite_wlock_release(sqlite_wlock *l)
{
    if (!l) return;
    pthread_mutex_lock(&registry_mu);
    if (--l->refs == 0) {
        sqlite_wlock **p = &registry;
        while (*p != l) p = &(*p)->next;
        *p = l->next;
        pthread_mutex_destroy(&l->mu);
        free(l);
    }
    pthread_mutex_unlock(&registry_mu);
}

static void queue_remove(sqlite_wlock *l, wlock_waiter *w)
{
    wlock_waiter **p = &l->head, *prev = NULL;
    while (*p && *p != w) {
        prev = *p;
        p = &(*p)->next;
    }
    if (!*p) return;
    *p = w->next;
    if (l->tail == w) l->tail = prev;
}

/* Sleeps on w until it is granted or deadline passes; l->mu held. */
static bool wait_turn(sqlite_wlock *l, wlock_waiter *w, const struct timespec *deadline)
{
    while (!w->granted) {
        int rc = pthread_cond_timedwait(&w->cv, &l->mu, deadline);
        if (rc == ETIMEDOUT && !w->granted) {
            queue_remove(l, w);
            return false;
        }
    }
    return true;
}

bool sqlite_wlock_lock(sqlite_wlock *l, int timeout_ms)
{
    pthread_t self = pthread_self();
    pthread_mutex_lock(&l->mu);
    if (l->held && pthread_equal(l->owner, self)) {
        pthread_mutex_unlock(&l->mu);
        return false;
    }
    if (!l->held) {
        l->held = true;
        l->owner = self;
        pthread_mutex_unlock(&l->mu);
        return true;
    }
    wlock_waiter w = {.thread = self};
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w.cv, &ca);
    pthread_condattr_destroy(&ca);
    if (l->tail) l->tail->next = &w;
    else l->head = &w;
    l->tail = &w;
    int64_t until = base_mono_ns() + (int64_t)timeout_ms * 1000000; /* base_mono_ns: CLOCK_MONOTONIC */
    struct timespec deadline = {.tv_sec = until / 1000000000, .tv_nsec = until % 1000000000};
    bool got = wait_turn(l, &w, &deadline);
    pthread_mutex_unlock(&l->mu);
    pthread_cond_destroy(&w.cv);
    return got;
}

/* The holder hands the lock straight to the oldest waiter: it stays held,
 * so a writer that comes back at once queues behind the others. */
void sqlite_wlock_unlock(sqlite_wlock *l)
{
    pthread_mutex_lock(&l->mu);
    wlock_waiter *w = l->head;
    if (w) {
        l->head = w->next;
        if (!l->head) l->tail = NULL;
        w->granted = true;
        l->owner = w->thread;
        pthread_cond_signal(&w->cv);
    } else {
        l->held = false;
    }
    pthread_mutex_unlock(&l->mu);
}

void sqlite_wlock_fail(sqlite_wlock *l)
{
    if (l) __atomic_store_n(&l->failed, 1, __ATOMIC_RELEASE);
}

bool sqlite_wlock_failed(sqlite_wlock *l)
{
    return l && __atomic_load_n(&l->failed, __ATOMIC_ACQUIRE) != 0;
}

int sqlite_wlock_waiting(sqlite_wlock *l)
{
    pthread_mutex_lock(&l->mu);
    int n = 0;
    for (wlock_waiter *w = l->head; w; w = w->next) n++;
    pthread_mutex_unlock(&l->mu);
    return n;
}
