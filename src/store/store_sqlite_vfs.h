/* store_sqlite_vfs.h -- a VFS over SQLite's own that writes a commit's WAL
 * frames to the file in one write.
 *
 * SQLite writes each WAL frame as two writes, its 24-byte header and then
 * its page, so a commit of n pages is 2n system calls, and since a frame
 * is 24 bytes longer than a page, none of them covers a whole page of the
 * file. The kernel then pays for every write at a page it only partly
 * covers: it reads the page back from the disk first when the page has
 * left its cache (this VM kind drops pages idle for a minute: a burst over
 * a cold WAL read every page it wrote, 80-130 ms p99 in bench/chat), and
 * zeroes it first when the write grows the file (a third of the chat
 * writer's time while the WAL grew). At 5,000 chat messages a second,
 * about 12 pages a message, that was 120,000 writes a second.
 *
 * This VFS keeps the writes to a WAL file that extend the current write
 * transaction's frames (SQLite writes a commit's frames in order) and
 * hands them to the file as one write. What it holds goes to the file:
 *   - as soon as the page of a commit frame (a frame whose header gives
 *     the database size) is written;
 *   - before any other call on the WAL (a read, a sync, a size, a
 *     truncation, a file control, a close) and before a write elsewhere
 *     in it; a write below the transaction's frames (a page written again
 *     in place, walRewriteChecksums' headers, a savepoint's undo) is not
 *     held at all;
 *   - at the latest in the database file's xShmBarrier, which SQLite calls
 *     before it publishes any commit, whatever the synchronous setting
 *     (the commit frame's rule above comes first in any case);
 *   - when the next write would take it past STORE_WALVFS_MAX bytes.
 * When the WAL's write lock is let go (the database file's xShmLock on
 * slot 0) the transaction is over: what is still held then belongs to one
 * rolled back (spilled frames past the WAL's end, read by nobody) and is
 * dropped, so that nothing can land later on frames another writer wrote.
 * A failed write makes every later call of the transaction fail with
 * SQLITE_IOERR_WRITE (never SQLITE_FULL, on which SQLite rolls back only
 * the statement): SQLite then rolls the whole transaction back.
 * Writes are held only while the connection holds the WAL's write lock
 * (from the xShmLock that takes slot 0 to the one that lets it go). In
 * exclusive locking mode SQLite takes no such lock, and a WAL without
 * power-safe overwrites (psow=0: SQLite pads and syncs part way through a
 * commit) or whose database file was not opened here is written as SQLite
 * writes it. Other files are SQLite's own but the
 * database file, whose calls pass straight through but for those two.
 */
#ifndef CHIME_STORE_SQLITE_VFS_H
#define CHIME_STORE_SQLITE_VFS_H

#include <sqlite3.h>

/* Bytes held at most, and so the largest write: SQLite's unix VFS passes
 * a write's length to the system through a 17-bit mask (SQLite itself
 * never writes more than a page at a time), so a longer write would be
 * cut short and fail as a full disk. */
#define STORE_WALVFS_MAX ((1 << 17) - 1)

/* Registers the VFS called name over under (never the default), once per
 * name; SQLITE_OK or SQLite's error. Thread-safe. */
int sqlite_walvfs_register(const char *name, sqlite3_vfs *under);

/* The name of the VFS store connections use: "chime-wal" over SQLite's
 * default, registered on first use; NULL when that failed (the caller then
 * opens with the default). */
const char *sqlite_walvfs_default(void);

#endif
