/* query_check: prepares every statement of sql/queries/ (the table that
 * scripts/embed.py generated into the binary) against a migrated database,
 * and checks that each file's `-- columns:` header is exactly what Postgres
 * describes for the result (names, in order) and that the statement takes
 * the number of parameters the header documents. A column renamed by a
 * migration thus fails tests/integration/test_queries.py, not production.
 *
 *   query_check CONNINFO                  every embedded statement
 *   query_check CONNINFO --sql TEXT [--columns a,b] [--params N]
 *                                         one statement given here: the
 *                                         test of the checker itself
 *
 * Prints one line per statement ("ok NAME" or "FAIL NAME: why"); exits 1
 * when any failed, 2 on a usage or connection error. Nothing is executed:
 * PREPARE plans a statement without running it. */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queries.h"

#define MAX_COLUMNS 64

/* Compares the described result with the declared one; 0 or -1 with why. */
static int compare(const PGresult *desc, const struct query_def *q, char *why, size_t whylen)
{
    if (q->nparams >= 0 && PQnparams(desc) != q->nparams)
        return snprintf(why, whylen, "takes %d parameters, the header documents %d", PQnparams(desc), q->nparams), -1;
    int n = PQnfields(desc);
    for (int i = 0; i < n || i < q->ncolumns; i++) {
        const char *got = i < n ? PQfname(desc, i) : "(nothing)";
        const char *want = i < q->ncolumns ? q->columns[i] : "(nothing)";
        if (strcmp(got, want) != 0)
            return snprintf(why, whylen, "result column %d is %s, the header's '-- columns:' says %s", i + 1, got,
                            want),
                   -1;
    }
    return 0;
}

static int check(PGconn *conn, const struct query_def *q)
{
    char why[512] = "";
    int rc = -1;
    PGresult *prep = PQprepare(conn, "", q->sql, 0, NULL);
    PGresult *desc = NULL;
    if (PQresultStatus(prep) != PGRES_COMMAND_OK) {
        snprintf(why, sizeof why, "%s", PQresultErrorMessage(prep));
        goto done;
    }
    desc = PQdescribePrepared(conn, "");
    if (PQresultStatus(desc) != PGRES_COMMAND_OK) {
        snprintf(why, sizeof why, "%s", PQresultErrorMessage(desc));
        goto done;
    }
    rc = compare(desc, q, why, sizeof why);
done:
    why[strcspn(why, "\n")] = '\0';
    if (rc == 0)
        printf("ok %s\n", q->name);
    else
        printf("FAIL %s (%s): %s\n", q->name, q->path, why);
    PQclear(prep);
    PQclear(desc);
    return rc;
}

/* "a,b,c" -> columns (pointers into s, which is modified). */
static int split_columns(char *s, const char **out, int max)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(stderr, "usage: query_check CONNINFO [--sql TEXT [--columns a,b] [--params N]]\n");
        return 2;
    }
    const char *sql = NULL;
    char *columns = NULL;
    int nparams = -1;
    for (int i = 2; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--sql") == 0)
            sql = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--columns") == 0)
            columns = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--params") == 0)
            nparams = atoi(argv[++i]);
        else {
            fprintf(stderr, "query_check: unknown or incomplete option %s\n", argv[i]);
            return 2;
        }
    }
    PGconn *conn = PQconnectdb(argv[1]);
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "query_check: %s", PQerrorMessage(conn));
        PQfinish(conn);
        return 2;
    }
    int failed = 0;
    if (sql) {
        const char *cols[MAX_COLUMNS];
        struct query_def q = {"(--sql)", "(command line)", sql, nparams, 0, cols};
        q.ncolumns = columns ? split_columns(columns, cols, MAX_COLUMNS) : 0;
        failed = check(conn, &q) != 0;
    } else {
        for (int i = 0; i < Q__COUNT; i++)
            failed += check(conn, &query_defs[i]) != 0;
        printf("%d of %d statements failed\n", failed, (int)Q__COUNT);
    }
    PQfinish(conn);
    return failed ? 1 : 0;
}
