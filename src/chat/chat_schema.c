/* chat_schema.c -- the chat's schema steps (versions 40-49). See store.h
 * for the rules of a step.
 *
 * conversations: kind direct|group; a direct one has pair_key "LO:HI"
 *   (the two user ids in hex, ordered), unique, so a pair has one.
 *   last_seq is the number of its newest message.
 * conv_members: joined_seq (sees messages after it), left_seq (NULL while
 *   a member; else sees up to it), read_up_to (the read mark).
 * messages: keyed by (conversation, seq); a sender's client_msg_id is
 *   unique within the conversation (a retried send finds the original).
 * chat_seqs: each user's sequence, how far it has been pruned, and
 *   (version 41) their unread total: the sum over their memberships of
 *   COALESCE(left_seq, last_seq) - read_up_to, kept by the writes that
 *   move a term of it (chat_ops.c).
 * chat_changes: one row per (user, seq); ref is the message's seq, the
 *   read mark, or the member concerned. On SQLite clustered by its key
 *   (WITHOUT ROWID), so a sync is one range of one b-tree.
 * chat_recent (version 45): rows of the same form, on SQLite, for the
 *   changes of large fan-outs, from their commit until chat_settle moves
 *   them into chat_changes. A user's changes are in either table.
 * ws_tickets: single-use WebSocket tickets (their SHA-256), for browsers.
 * presence: which node has a user online (the node's heartbeat in nodes
 *   says whether it still lives); ws_nodes: each node's connection count;
 *   last_seen: when a user's last connection anywhere closed. */
#include "chat/chat.h"

#define CHAT_TABLES(CLUSTERED)                                                                             \
    "CREATE TABLE conversations ("                                                                        \
    " id BIGINT PRIMARY KEY,"                                                                             \
    " kind TEXT NOT NULL,"                                                                                \
    " title TEXT NOT NULL DEFAULT '',"                                                                    \
    " pair_key TEXT UNIQUE,"                                                                              \
    " created_by BIGINT NOT NULL,"                                                                        \
    " created_ms BIGINT NOT NULL,"                                                                        \
    " last_seq BIGINT NOT NULL DEFAULT 0,"                                                                \
    " last_ms BIGINT NOT NULL);"                                                                          \
    "CREATE TABLE conv_members ("                                                                         \
    " conversation_id BIGINT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"                    \
    " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"                                    \
    " role TEXT NOT NULL,"                                                                                \
    " joined_seq BIGINT NOT NULL,"                                                                        \
    " left_seq BIGINT,"                                                                                   \
    " read_up_to BIGINT NOT NULL,"                                                                        \
    " PRIMARY KEY (conversation_id, user_id));"                                                           \
    "CREATE INDEX conv_members_user ON conv_members(user_id);"                                            \
    "CREATE TABLE messages ("                                                                             \
    " conversation_id BIGINT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"                    \
    " seq BIGINT NOT NULL,"                                                                               \
    " id BIGINT NOT NULL UNIQUE,"                                                                         \
    " sender_id BIGINT NOT NULL,"                                                                         \
    " client_msg_id TEXT NOT NULL,"                                                                       \
    " text TEXT NOT NULL,"                                                                                \
    " sent_ms BIGINT NOT NULL,"                                                                           \
    " PRIMARY KEY (conversation_id, seq));"                                                               \
    "CREATE UNIQUE INDEX messages_client ON messages(conversation_id, sender_id, client_msg_id);"         \
    "CREATE TABLE chat_seqs ("                                                                            \
    " user_id BIGINT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,"                                 \
    " seq BIGINT NOT NULL,"                                                                               \
    " pruned_to BIGINT NOT NULL DEFAULT 0);"                                                              \
    "CREATE TABLE chat_changes ("                                                                         \
    " user_id BIGINT NOT NULL,"                                                                           \
    " seq BIGINT NOT NULL,"                                                                               \
    " kind TEXT NOT NULL,"                                                                                \
    " conversation_id BIGINT NOT NULL,"                                                                   \
    " ref BIGINT NOT NULL,"                                                                               \
    " created_ms BIGINT NOT NULL,"                                                                        \
    " PRIMARY KEY (user_id, seq))" CLUSTERED ";"                                                          \
    "CREATE INDEX chat_changes_age ON chat_changes(created_ms);"                                          \
    "CREATE TABLE ws_tickets ("                                                                           \
    " hash TEXT PRIMARY KEY,"                                                                             \
    " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"                                    \
    " expires_ms BIGINT NOT NULL);"                                                                       \
    "CREATE TABLE presence ("                                                                             \
    " node_id TEXT NOT NULL,"                                                                             \
    " user_id BIGINT NOT NULL,"                                                                           \
    " since_ms BIGINT NOT NULL,"                                                                          \
    " PRIMARY KEY (node_id, user_id));"                                                                   \
    "CREATE INDEX presence_user ON presence(user_id);"                                                    \
    "CREATE TABLE ws_nodes ("                                                                             \
    " node_id TEXT PRIMARY KEY,"                                                                          \
    " connections BIGINT NOT NULL,"                                                                       \
    " updated_ms BIGINT NOT NULL);"                                                                       \
    "CREATE TABLE last_seen ("                                                                            \
    " user_id BIGINT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,"                                 \
    " seen_ms BIGINT NOT NULL)"

/* SQLite's rowid is the id only as INTEGER PRIMARY KEY. */
#define CHAT_RECENT(ID)                                                                                    \
    "CREATE TABLE chat_recent ("                                                                          \
    " id " ID " PRIMARY KEY,"                                                                             \
    " user_id BIGINT NOT NULL,"                                                                           \
    " seq BIGINT NOT NULL,"                                                                               \
    " kind TEXT NOT NULL,"                                                                                \
    " conversation_id BIGINT NOT NULL,"                                                                   \
    " ref BIGINT NOT NULL,"                                                                               \
    " created_ms BIGINT NOT NULL);"                                                                       \
    "CREATE INDEX chat_recent_user ON chat_recent(user_id, seq)"

/* The sum as GET /v1/unread computes it, for the rows already there. */
#define CHAT_UNREAD_KEPT                                                                                   \
    "ALTER TABLE chat_seqs ADD COLUMN unread BIGINT NOT NULL DEFAULT 0;"                                  \
    "UPDATE chat_seqs SET unread = (SELECT COALESCE(sum(COALESCE(m.left_seq, c.last_seq) - m.read_up_to), 0) " \
    "FROM conv_members m JOIN conversations c ON c.id = m.conversation_id WHERE m.user_id = chat_seqs.user_id)"

static const store_migration chat_steps[] = {
    {40, "chat", CHAT_TABLES(" WITHOUT ROWID"), CHAT_TABLES("")},
    {41, "chat_unread_kept", CHAT_UNREAD_KEPT, NULL},
    /* On SQLite, a BIGINT PRIMARY KEY is an index beside the table's own
     * rowid b-tree, so every look at a user's number went down two
     * b-trees: twice for each member a message fans out to, and once for
     * every pull. As INTEGER PRIMARY KEY the user id is the rowid: one
     * b-tree. The chat writer's instructions for a 1:1 message fell 6%
     * (callgrind, batches of 20). Nothing refers to chat_seqs, so the
     * table is rebuilt under its name. PostgreSQL's BIGINT key is one
     * index already. */
    {42, "chat_seqs_rowid",
     "CREATE TABLE chat_seqs_new ("
     " user_id INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,"
     " seq BIGINT NOT NULL,"
     " pruned_to BIGINT NOT NULL DEFAULT 0,"
     " unread BIGINT NOT NULL DEFAULT 0);"
     "INSERT INTO chat_seqs_new (user_id, seq, pruned_to, unread) SELECT user_id, seq, pruned_to, unread FROM chat_seqs;"
     "DROP TABLE chat_seqs;"
     "ALTER TABLE chat_seqs_new RENAME TO chat_seqs",
     "SELECT 1"},
    /* The same for a conversation's members on SQLite: the table clustered
     * by its key (conversation, user), so the sender's standing, its read
     * mark and the walk over the members a message fans out to go down one
     * b-tree, not an index and then the table. Writer 131k -> 124k
     * instructions a 1:1 message (callgrind, batches of 20). Nothing refers
     * to conv_members; conv_members_user is made again. */
    {43, "conv_members_clustered",
     "CREATE TABLE conv_members_new ("
     " conversation_id BIGINT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
     " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
     " role TEXT NOT NULL,"
     " joined_seq BIGINT NOT NULL,"
     " left_seq BIGINT,"
     " read_up_to BIGINT NOT NULL,"
     " PRIMARY KEY (conversation_id, user_id)) WITHOUT ROWID;"
     "INSERT INTO conv_members_new (conversation_id, user_id, role, joined_seq, left_seq, read_up_to) "
     "SELECT conversation_id, user_id, role, joined_seq, left_seq, read_up_to FROM conv_members;"
     "DROP TABLE conv_members;"
     "ALTER TABLE conv_members_new RENAME TO conv_members;"
     "CREATE INDEX conv_members_user ON conv_members(user_id)",
     "SELECT 1"},
    /* The retention's prune walks the users (chat_cleanup.c) rather than
     * read this index of every change by its age, which cost the writer a
     * b-tree insert for each member's change: 19% of its instructions for
     * a message to a group of 500, 7% for a 1:1 one (callgrind,
     * bench/chat/writer.sh). */
    {44, "chat_changes_no_age_index", "DROP INDEX IF EXISTS chat_changes_age", NULL},
    /* Where the chat writer puts the changes of a fan-out to many members
     * on SQLite, in the order they were committed (the rowid), until
     * chat_settle moves them to their users' places in chat_changes
     * (chat_settle.c says why). Its index serves the reads of a user's
     * changes here. On PostgreSQL it stays empty: the same queries read
     * both tables there. */
    {45, "chat_recent", CHAT_RECENT("INTEGER"), CHAT_RECENT("BIGINT")},
};

int chat_schema_add(store_schema *s)
{
    return store_schema_add(s, chat_steps, sizeof chat_steps / sizeof chat_steps[0]);
}
