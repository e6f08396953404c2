/* Schema migrations: the sql/NNNN_name.sql files embedded in the binary,
 * applied in order, each in its own transaction, recorded with a SHA-256
 * checksum in schema_migrations. Re-running is a no-op; an applied migration
 * whose file changed is refused, because silently diverging schemas are how
 * a cluster ends up with workers that disagree about the data. */
#ifndef HOOKD_MIGRATE_H
#define HOOKD_MIGRATE_H

#include <libpq-fe.h>
#include <stdio.h>

/* Applies what is pending; prints one line per migration to out (may be
 * NULL). Returns the number applied, or -1 with err. */
__attribute__((warn_unused_result)) int migrate_apply(PGconn *conn, FILE *out, char *err, size_t errlen);
/* 0 when every embedded migration is applied with a matching checksum;
 * 1 when some are pending; -1 with err on a mismatch or query failure. */
__attribute__((warn_unused_result)) int migrate_check(PGconn *conn, char *err, size_t errlen);

#endif
