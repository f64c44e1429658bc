/* workers.c -- mutex + condition variable job queue; jobs are few and slow,
 * so a lock-free queue would buy nothing here. */
#include "http/workers.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/base.h"

typedef struct workers_job {
    struct workers_job *next;
    workers_fn fn;
    void *arg;
} workers_job;

struct workers {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    workers_job *head, *tail;
    bool closing;
    int nthreads;
    pthread_t tids[];
};

static void *worker_main(void *p)
{
    workers *w = p;
    base_thread_name("http-worker");
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->closing) pthread_cond_wait(&w->cv, &w->mu);
        workers_job *j = w->head;
        if (!j) break; /* closing and drained */
        w->head = j->next;
        if (!w->head) w->tail = NULL;
        pthread_mutex_unlock(&w->mu);
        j->fn(j->arg);
        free(j);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

workers *workers_new(int n)
{
    workers *w = calloc(1, sizeof *w + (size_t)n * sizeof(pthread_t));
    if (!w) return NULL;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    for (int i = 0; i < n; i++) {
        if (pthread_create(&w->tids[i], NULL, worker_main, w) != 0) break;
        w->nthreads++;
    }
    if (w->nthreads == 0) {
        workers_free(w);
        return NULL;
    }
    return w;
}

int workers_submit(workers *w, workers_fn fn, void *arg)
{
    workers_job *j = malloc(sizeof *j);
    if (!j) return -1;
    j->next = NULL;
    j->fn = fn;
    j->arg = arg;
    pthread_mutex_lock(&w->mu);
    if (w->closing) {
        pthread_mutex_unlock(&w->mu);
        free(j);
        return -1;
    }
    if (w->tail) w->tail->next = j;
    else w->head = j;
    w->tail = j;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

void workers_free(workers *w)
{
    pthread_mutex_lock(&w->mu);
    w->closing = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->nthreads; i++) pthread_join(w->tids[i], NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}
