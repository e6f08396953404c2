/* Schema migrations: the sql/NNNN_name.sql files embedded in the binary,
 * applied in order, each in its own transaction, recorded with a SHA-256
 * checksum of their SQL without comments (migrate_checksum.h) in
 * schema_migrations. Re-running is a no-op; an applied migration whose SQL
 * changed is refused, because silently diverging schemas are how a cluster
 * ends up with workers that disagree about the data. A comment may change. */
#ifndef HOOKD_MIGRATE_H
#define HOOKD_MIGRATE_H

#include <libpq-fe.h>
#include <stdio.h>

/* Applies what is pending and replaces the raw-bytes checksums an earlier
 * hookd recorded; prints one line per migration applied or checksum replaced
 * to out (may be NULL). Returns the number applied, or -1 with err. */
__attribute__((warn_unused_result)) int migrate_apply(PGconn *conn, FILE *out, char *err, size_t errlen);
/* 0 when every embedded migration is applied with a matching checksum (or
 * the raw-bytes checksum an earlier hookd recorded for the same file); 1 when
 * some are pending; -1 with err on a mismatch or query failure. Reads only. */
__attribute__((warn_unused_result)) int migrate_check(PGconn *conn, char *err, size_t errlen);

#endif
