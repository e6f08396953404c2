/* Runs the statements of sql/queries/ by name (docs/queries.md): the text
 * and the parameter count come from the generated table (build/queries.h),
 * so a call site names the statement once. The prepared forms use db.c's
 * per-connection cache, indexed by enum query_id. Blocking libpq calls: run
 * them on a DB thread or from the CLI, never on the loop. */
#ifndef HOOKD_QUERY_H
#define HOOKD_QUERY_H

#include <libpq-fe.h>
#include <stddef.h>

#include "queries.h"

/* Unprepared (parsed and planned on every call), text parameters: for
 * statements run rarely, or whose plan must see each call's parameters.
 * The result (caller PQclear()s), or NULL with err. */
PGresult *query_exec(PGconn *conn, enum query_id q, const char *const *params, char *err, size_t errlen);
/* query_exec for a statement whose result is not needed: 0, or -1 with err. */
__attribute__((warn_unused_result)) int query_run(PGconn *conn, enum query_id q, const char *const *params, char *err,
                                                  size_t errlen);
/* query_exec in a transaction of its own in which Postgres may neither
 * bitmap-scan nor sort (db_exec_index_order): for a keyset page that must
 * walk its index in order. */
PGresult *query_exec_index_order(PGconn *conn, enum query_id q, const char *const *params, char *err, size_t errlen);
/* The same with per-parameter lengths and formats (binary db_array
 * parameters: format 1); NULL lengths/formats: all text. */
PGresult *query_exec_fmt(PGconn *conn, enum query_id q, const char *const *params, const int *lengths,
                         const int *formats, char *err, size_t errlen);
/* Prepared on first use per connection (db_exec_prepared), text parameters. */
PGresult *query_prepared(PGconn *conn, enum query_id q, const char *const *params, char *err, size_t errlen);
/* The same with per-parameter lengths and formats (binary db_array
 * parameters: format 1); NULL lengths/formats: all text. */
PGresult *query_prepared_fmt(PGconn *conn, enum query_id q, const char *const *params, const int *lengths,
                             const int *formats, char *err, size_t errlen);
/* Prepared, returning the raw result whatever its status (the caller checks
 * PQresultStatus and reads SQLSTATE; may be NULL). conn must not be NULL. */
PGresult *query_prepared_raw(PGconn *conn, enum query_id q, const char *const *params, const int *lengths,
                             const int *formats);

/* A result value as a new string (free()), NULL for SQL NULL. */
char *query_value_dup(const PGresult *r, int row, int col);

#endif
