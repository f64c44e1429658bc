/* users_migrate.c -- migration 21: existing accounts get the forms of
 * their address (users_email.c). In C, because the forms need ICU.
 *
 * Two accounts can collide once normalized ("ÉCOLE@x.com" beside
 * "école@x.com": exactly the look-alikes the rule now refuses). Neither
 * may be locked out, and the unique key holds only one: the one already
 * in normal form, else the oldest, takes the key; the others keep their
 * old key (their address ASCII-lowered), which users_find_by_email still
 * matches exactly, and are logged so an admin can look at them. Likewise
 * only the oldest of accounts that look alike records the skeleton, whose
 * index is unique from here on. */
#include "users/users.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"

typedef struct mig_row {
    int64_t id;
    int order;          /* created_ms, id order */
    bool valid;         /* the address passes the rule */
    bool keep_key;      /* collided: keeps its old key */
    bool skeleton;      /* records its skeleton */
    char *old_key;
    char *email;        /* as stored */
    users_email em;
} mig_row;

static int by_key(const void *a, const void *b)
{
    const mig_row *x = *(mig_row *const *)a, *y = *(mig_row *const *)b;
    int c = strcmp(x->em.key, y->em.key);
    return c ? c : x->order - y->order;
}

static int by_skeleton(const void *a, const void *b)
{
    const mig_row *x = *(mig_row *const *)a, *y = *(mig_row *const *)b;
    int c = strcmp(x->em.skeleton, y->em.skeleton);
    return c ? c : x->order - y->order;
}

/* Marks, in each run of rows with one key, who keeps an old key. */
static void mig_pick_keys(mig_row **v, size_t n)
{
    qsort(v, n, sizeof *v, by_key);
    for (size_t i = 0; i < n;) {
        size_t j = i, winner = i;
        while (j < n && strcmp(v[j]->em.key, v[i]->em.key) == 0) {
            if (strcmp(v[j]->old_key, v[j]->em.key) == 0) winner = j;
            j++;
        }
        for (size_t k = i; k < j; k++) {
            v[k]->keep_key = k != winner;
            if (k != winner)
                log_warn("users: account %016llx (%s) keeps its old key: once normalized its address is that of "
                         "account %016llx", (unsigned long long)v[k]->id, v[k]->email,
                         (unsigned long long)v[winner]->id);
        }
        i = j;
    }
    qsort(v, n, sizeof *v, by_skeleton);
    for (size_t i = 0; i < n; i++) v[i]->skeleton = i == 0 || strcmp(v[i]->em.skeleton, v[i - 1]->em.skeleton) != 0;
}

static int mig_write(store *db, const mig_row *r)
{
    store_stmt *st = store_prepare(db, "UPDATE users SET email = $2, email_lower = $3, email_skeleton = $4 "
                                       "WHERE id = $1");
    store_bind_int64(st, 1, r->id);
    store_bind_str(st, 2, r->valid ? r->em.nfc : r->email);
    store_bind_str(st, 3, r->valid && !r->keep_key ? r->em.key : r->old_key);
    store_bind_str(st, 4, r->valid && r->skeleton ? r->em.skeleton : NULL);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

static void mig_free(mig_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].old_key);
        free(rows[i].email);
    }
    free(rows);
}

static int mig_read(store *db, mig_row **out, size_t *n)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    store_stmt *st = store_prepare(db, "SELECT id, email, email_lower FROM users ORDER BY created_ms, id");
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        if (*n == cap) {
            mig_row *grown = base_grow(*out, sizeof *grown, &cap);
            if (!grown) break;
            *out = grown;
        }
        mig_row *r = &(*out)[*n];
        memset(r, 0, sizeof *r);
        r->id = store_col_int64(st, 0);
        r->order = (int)(*n)++;
        r->email = strdup(store_col_text(st, 1));
        r->old_key = strdup(store_col_text(st, 2));
        if (!r->email || !r->old_key) break;
        int nrc = users_email_normalize(r->email, &r->em, NULL, 0);
        if (nrc == USERS_ERROR) break;
        r->valid = nrc == USERS_OK;
    }
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

int users_email_migrate(store *db)
{
    mig_row *rows;
    size_t n;
    int rc = mig_read(db, &rows, &n);
    mig_row **valid = rc == STORE_OK ? malloc((n ? n : 1) * sizeof *valid) : NULL;
    if (!valid) rc = STORE_ERROR;
    size_t nv = 0;
    for (size_t i = 0; rc == STORE_OK && i < n; i++)
        if (rows[i].valid) valid[nv++] = &rows[i];
    if (rc == STORE_OK) mig_pick_keys(valid, nv);
    for (size_t i = 0; rc == STORE_OK && i < n; i++) rc = mig_write(db, &rows[i]);
    if (rc == STORE_OK) rc = store_exec(db, "CREATE UNIQUE INDEX users_email_skeleton ON users(email_skeleton)");
    free(valid);
    mig_free(rows, n);
    return rc;
}
