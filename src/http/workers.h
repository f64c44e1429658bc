/* workers.h -- a fixed pool of threads running queued jobs in FIFO order,
 * for work too slow for an event loop (password hashing, outbound calls). */
#ifndef CHIME_HTTP_WORKERS_H
#define CHIME_HTTP_WORKERS_H

typedef struct workers workers;
typedef void (*workers_fn)(void *arg);

workers *workers_new(int nthreads);
/* Queues fn(arg). Returns 0, or -1 when the pool is shutting down. */
int workers_submit(workers *w, workers_fn fn, void *arg);
/* Runs every job already queued, then joins the threads and frees. */
void workers_free(workers *w);

#endif
