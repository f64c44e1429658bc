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
 * This VFS keeps the writes to a WAL file that follow one another in the
 * file (SQLite writes a commit's frames in order) and hands them to the
 * file as one write. What it holds goes to the file:
 *   - as soon as the page of a commit frame (a frame whose header gives
 *     the database size) is written: a commit leaves nothing behind, so
 *     another connection, which reads only frames a commit published,
 *     never looks for one still held here;
 *   - before any other call on the file (a read, a sync, a size, a
 *     truncation, a lock, a close) and before a write elsewhere in it;
 *   - when the next write would take it past STORE_WALVFS_MAX bytes.
 * A failed write is reported to the call that made it go out: at a commit
 * frame that is the frame's own write, at a sync the sync. Other files
 * (the database, journals, temporary files) are SQLite's own, untouched.
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
