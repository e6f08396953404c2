/* Statements by name; see query.h. Thin: the text, the parameter count and
 * the cache slot all come from the query's number. */
#include "query.h"

#include "db.h"
#include "xmalloc.h"

_Static_assert(Q__COUNT <= DB_PREPARED_MAX, "raise DB_PREPARED_MAX in db.h: more statements than cache slots");

PGresult *query_exec(PGconn *conn, enum query_id q, const char *const *params, char *err, size_t errlen)
{
    return db_exec(conn, query_sql(q), query_defs[q].nparams, params, err, errlen);
}

int query_run(PGconn *conn, enum query_id q, const char *const *params, char *err, size_t errlen)
{
    return db_run(conn, query_sql(q), query_defs[q].nparams, params, err, errlen);
}

PGresult *query_exec_index_order(PGconn *conn, enum query_id q, const char *const *params, char *err, size_t errlen)
{
    return db_exec_index_order(conn, query_sql(q), query_defs[q].nparams, params, err, errlen);
}

PGresult *query_exec_fmt(PGconn *conn, enum query_id q, const char *const *params, const int *lengths,
                         const int *formats, char *err, size_t errlen)
{
    return db_exec_fmt(conn, query_sql(q), query_defs[q].nparams, params, lengths, formats, err, errlen);
}

PGresult *query_prepared(PGconn *conn, enum query_id q, const char *const *params, char *err, size_t errlen)
{
    return db_exec_prepared(conn, (unsigned)q, query_sql(q), query_defs[q].nparams, params, NULL, NULL, err, errlen);
}

PGresult *query_prepared_fmt(PGconn *conn, enum query_id q, const char *const *params, const int *lengths,
                             const int *formats, char *err, size_t errlen)
{
    return db_exec_prepared(conn, (unsigned)q, query_sql(q), query_defs[q].nparams, params, lengths, formats, err,
                            errlen);
}

PGresult *query_prepared_raw(PGconn *conn, enum query_id q, const char *const *params, const int *lengths,
                             const int *formats)
{
    return db_prepared_raw(conn, (unsigned)q, query_sql(q), query_defs[q].nparams, params, lengths, formats);
}

char *query_value_dup(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : xstrdup(PQgetvalue(r, row, col));
}
