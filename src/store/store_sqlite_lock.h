/* store_sqlite_lock.h -- one writer at a time per SQLite file, handed over
 * in arrival order among the connections of this process.
 *
 * SQLite lets one connection write at a time. A connection that finds the
 * write lock taken sleeps in the busy handler, 1, 2, 5 ... 100 ms a nap,
 * and tries again; it gets the lock only if its try falls in a gap between
 * two transactions of the others. The chat writer commits back to back
 * under load, so the gaps are microseconds: measured with chat at
 * 5,000 messages/s and reminders at 1,250/s in one process, the reminders'
 * in-app deliveries fired at p50 371 ms and p99 2.7 s late (33 ms without
 * the chat), and the chat's own p99 rose from about 9 ms to 86 ms, its
 * writer in turn sleeping in the handler behind the reminders' commits.
 *
 * So every connection of the process to the same file (same device and
 * inode) first queues here for the length of its write transaction: the
 * lock goes to the longest waiter the moment the holder commits. Nobody
 * naps, and nobody is passed over. Other processes on the file (a second
 * chime, the CLI) still meet SQLite's own lock and the busy handler.
 *
 * The lock only orders writers; it never decides correctness. A wait is
 * bounded (the connection's busy timeout), after which the writer goes on
 * to SQLite's lock as before, and a thread that already holds the lock on
 * another connection does not queue behind itself.
 *
 * The registry of files is the one piece of process-wide state in the
 * store, for the reason SQLite's unix VFS keeps its own inode list: two
 * connections opened independently must find the same lock.
 */
#ifndef CHIME_STORE_SQLITE_LOCK_H
#define CHIME_STORE_SQLITE_LOCK_H

#include <stdbool.h>

typedef struct sqlite_wlock sqlite_wlock;

/* The lock of the file at path, shared with every other connection of
 * this process to it; NULL when there is no file (in memory) or no
 * memory. Each call must be matched by sqlite_wlock_release. */
sqlite_wlock *sqlite_wlock_for(const char *path);
void sqlite_wlock_release(sqlite_wlock *l);

/* Waits for the lock, at most timeout_ms. True: held, and the caller
 * must unlock. False: not taken (timed out, or this thread holds it
 * already); the caller goes on without it. */
bool sqlite_wlock_lock(sqlite_wlock *l, int timeout_ms);
void sqlite_wlock_unlock(sqlite_wlock *l);

/* The file's failed state: set once a sync of the file or its WAL failed
 * on any connection of this process, and kept while any connection of
 * the process has the file open (a server keeps its own open until it
 * exits; an entry that outlived its file could pass the state to a new
 * file on the same inode).
 * Linux reports a failed write-back once, and the pages it could not write
 * pass for clean: a later sync succeeds over a hole in the WAL that a
 * power cut would take every later commit with (store.h,
 * store_disk_failed). */
void sqlite_wlock_fail(sqlite_wlock *l);
bool sqlite_wlock_failed(sqlite_wlock *l);

/* Writers queued behind the holder (for tests). */
int sqlite_wlock_waiting(sqlite_wlock *l);

#endif
