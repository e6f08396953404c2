/*
 * test_migrate_checksum.c — the migration checksum's normalisation: comments
 * and whitespace do not count, anything inside a string, a quoted identifier
 * or a statement does; dollar-quoted bodies are normalised on their own; the
 * raw-bytes checksums of earlier ledgers are known per migration only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "embedded.h"
#include "migrate_checksum.h"

static char *norm(const char *sql)
{
    size_t len = strlen(sql);
    char *out = malloc(len + 1);
    assert_non_null(out);
    size_t n = migrate_checksum_normalise(sql, len, out);
    assert_true(n <= len);
    assert_int_equal(strlen(out), n);
    return out;
}

static void assert_norm(const char *sql, const char *want)
{
    char *got = norm(sql);
    assert_string_equal(got, want);
    free(got);
}

static void sum_of(const char *sql, char out[MIGRATE_CHECKSUM_HEX])
{
    migrate_checksum(sql, strlen(sql), out);
    assert_int_equal(strlen(out), 64);
}

static void test_comments_and_whitespace_go(void **state)
{
    (void)state;
    assert_norm("-- header\n-- more\nCREATE TABLE t (\n    a int, -- why a\n    b text\n);\n",
                "CREATE TABLE t ( a int, b text );");
    assert_norm("SELECT 1/* x */+2", "SELECT 1 +2");
    assert_norm("SELECT /* outer /* nested */ still */ 1", "SELECT 1");
    assert_norm("\t\r\n  SELECT\f1\v ;  \n", "SELECT 1 ;");
    assert_norm("-- only a comment", "");
    assert_norm("SELECT 1 -- no newline at the end", "SELECT 1");
    assert_norm("SELECT a-b, c - -d", "SELECT a-b, c - -d");
}

static void test_quoted_spans_are_data(void **state)
{
    (void)state;
    assert_norm("SELECT '-- not a comment',  'a  b'", "SELECT '-- not a comment', 'a  b'");
    assert_norm("SELECT 'it''s -- data'  -- gone\n", "SELECT 'it''s -- data'");
    assert_norm("SELECT \"odd -- name\"  FROM \"a\"\"b\"", "SELECT \"odd -- name\" FROM \"a\"\"b\"");
    assert_norm("SELECT '/* kept */'", "SELECT '/* kept */'");
    /* after E a backslash escapes the quote; elsewhere it is an ordinary byte */
    assert_norm("SELECT E'a\\' -- b'  -- c\n", "SELECT E'a\\' -- b'");
    assert_norm("SELECT 'a\\'  -- c\n", "SELECT 'a\\'");
    assert_norm("SELECT type'  x'", "SELECT type'  x'");
}

static void test_dollar_bodies_are_normalised_alone(void **state)
{
    (void)state;
    assert_norm("CREATE FUNCTION f() RETURNS int AS $$\n    -- why\n    SELECT   1\n$$ LANGUAGE sql;",
                "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1 $$ LANGUAGE sql;");
    assert_norm("DO $body$ BEGIN PERFORM '$$'; -- x\n END $body$", "DO $body$ BEGIN PERFORM '$$'; END $body$");
    /* an apostrophe in a comment inside a body does not open a string */
    assert_norm("AS $$ -- the tenant's row\n SELECT 1 $$ -- done", "AS $$ SELECT 1 $$");
    /* $1 is a parameter, a$b an identifier: neither opens a body */
    assert_norm("SELECT $1 -- x\n, a$b$ -- y\n", "SELECT $1 , a$b$");
    /* a body that never ends is code */
    assert_norm("SELECT $x$ 1 -- y\n", "SELECT $x$ 1");
}

static void test_comment_edits_keep_the_checksum(void **state)
{
    (void)state;
    char a[MIGRATE_CHECKSUM_HEX], b[MIGRATE_CHECKSUM_HEX];
    sum_of("-- Tenants (old words).\nCREATE TABLE t (a int); -- x\n", a);
    sum_of("-- Tenants: what they are and why.\n-- A second line.\n\nCREATE TABLE t (a\n    int); /* y */\n", b);
    assert_string_equal(a, b);
    /* the SHA-256 of the normalised text */
    sum_of("SELECT 1", a);
    assert_string_equal(a, "e004ebd5b5532a4b85984a62f8ad48a81aa3460c1ca07701f386135d72cdecf5");
}

static void test_statement_edits_change_the_checksum(void **state)
{
    (void)state;
    char a[MIGRATE_CHECKSUM_HEX], b[MIGRATE_CHECKSUM_HEX];
    const char *base = "CREATE TABLE t (a int DEFAULT 1); CREATE FUNCTION f() RETURNS text AS $$ SELECT 'x  y' $$ "
                       "LANGUAGE sql;";
    const char *changed[] = {
        "CREATE TABLE t (a bigint DEFAULT 1); CREATE FUNCTION f() RETURNS text AS $$ SELECT 'x  y' $$ LANGUAGE sql;",
        "CREATE TABLE t (a int DEFAULT 2); CREATE FUNCTION f() RETURNS text AS $$ SELECT 'x  y' $$ LANGUAGE sql;",
        "CREATE TABLE t (a int DEFAULT 1); CREATE FUNCTION f() RETURNS text AS $$ SELECT 'x y' $$ LANGUAGE sql;",
        "CREATE TABLE t (a int DEFAULT 1); CREATE FUNCTION f() RETURNS text AS $$ SELECT 'x  y' $$ LANGUAGE sq;",
        "CREATE TABLE t (aint DEFAULT 1); CREATE FUNCTION f() RETURNS text AS $$ SELECT 'x  y' $$ LANGUAGE sql;",
    };
    sum_of(base, a);
    for (size_t i = 0; i < sizeof changed / sizeof changed[0]; i++) {
        sum_of(changed[i], b);
        assert_string_not_equal(a, b);
    }
}

/* Each embedded migration: comments added around it and its lines
 * re-indented keep its checksum; one more statement changes it. */
static void test_embedded_migrations(void **state)
{
    (void)state;
    int n = 0;
    for (size_t i = 0; i < embedded_nfiles; i++) {
        const struct embedded_file *f = &embedded_files[i];
        if (strncmp(f->path, "sql/00", 6) != 0 || strchr(f->path + 4, '/'))
            continue;
        char a[MIGRATE_CHECKSUM_HEX], b[MIGRATE_CHECKSUM_HEX];
        migrate_checksum(f->data, f->len, a);
        size_t cap = 2 * f->len + 128, m = 0;
        char *edited = malloc(cap);
        assert_non_null(edited);
        m += (size_t)snprintf(edited, cap, "-- a new header line\n/* and a block */\n");
        for (size_t k = 0; k < f->len; k++) {
            edited[m++] = f->data[k];
            if (f->data[k] == '\n')
                edited[m++] = ' ';
        }
        m += (size_t)snprintf(edited + m, cap - m, "\n-- the end\n");
        migrate_checksum(edited, m, b);
        assert_string_equal(a, b);
        m += (size_t)snprintf(edited + m, cap - m, "SELECT 1;\n");
        migrate_checksum(edited, m, b);
        assert_string_not_equal(a, b);
        free(edited);
        n++;
    }
    assert_true(n >= 20);
}

static void test_legacy_table(void **state)
{
    (void)state;
    assert_string_equal(migrate_checksum_legacy("0001_inbox"),
                        "d57b1874b3cf15a416d0548efc1e7b7656b5bef5337f8d9ffdbb0e07202d8b77");
    assert_null(migrate_checksum_legacy("0015_missing"));
    assert_null(migrate_checksum_legacy("0001"));
    /* every entry names an embedded migration */
    const char *versions[] = {"0001_inbox", "0012_retention", "0026_emit_payload_retention"};
    for (size_t v = 0; v < sizeof versions / sizeof versions[0]; v++) {
        char path[64];
        snprintf(path, sizeof path, "sql/%s.sql", versions[v]);
        int found = 0;
        for (size_t i = 0; i < embedded_nfiles; i++)
            found |= strcmp(embedded_files[i].path, path) == 0;
        assert_true(found);
        assert_non_null(migrate_checksum_legacy(versions[v]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comments_and_whitespace_go),
        cmocka_unit_test(test_quoted_spans_are_data),
        cmocka_unit_test(test_dollar_bodies_are_normalised_alone),
        cmocka_unit_test(test_comment_edits_keep_the_checksum),
        cmocka_unit_test(test_statement_edits_change_the_checksum),
        cmocka_unit_test(test_embedded_migrations),
        cmocka_unit_test(test_legacy_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
