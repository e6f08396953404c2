/* The checksum that the migration ledger (schema_migrations) records for a
 * migration: the SHA-256 of its SQL with the comments taken out, so that a
 * migration's comments can be corrected after it was applied while any
 * change to a statement is still refused (migrate.h).
 *
 * The text is normalised before hashing, in one pass that knows SQL's
 * quoting:
 *   - `--` to the end of the line and `slash-star ... star-slash` (nested, as
 *     Postgres reads them) are removed, each counting as whitespace;
 *   - every run of whitespace (space, tab, newline, carriage return, form
 *     feed, vertical tab) becomes one space; leading and trailing
 *     whitespace goes;
 *   - single-quoted strings (with '' inside; with backslash escapes after
 *     E), double-quoted identifiers and everything in them are kept byte
 *     for byte: a comment marker or a space inside them is data;
 *   - a dollar-quoted body ($$ ... $$, $tag$ ... $tag$) is kept between its
 *     delimiters and normalised by the same rules on its own, because the
 *     bodies in migrations are SQL and PL/pgSQL, whose comments are
 *     comments too. (A `--` in a dollar-quoted string that is not code
 *     would be taken for a comment: migrations quote data with '.)
 *
 * Installations migrated before this checksum existed hold the SHA-256 of
 * each file's raw bytes; migrate_checksum_legacy() knows those, per
 * migration, from a table of the files as they were then. */
#ifndef HOOKD_MIGRATE_CHECKSUM_H
#define HOOKD_MIGRATE_CHECKSUM_H

#include <stddef.h>

/* Hex digits of a checksum plus the NUL. */
#define MIGRATE_CHECKSUM_HEX 65

/* The checksum of the migration text sql[0..len). Pure; thread-safe. */
void migrate_checksum(const char *sql, size_t len, char out[MIGRATE_CHECKSUM_HEX]);

/* The raw-bytes checksum that earlier versions of hookd recorded for the
 * migration version ("0001_inbox"), or NULL for a migration added after the
 * table was written. Static storage. */
const char *migrate_checksum_legacy(const char *version);

/* The normalised text itself (what migrate_checksum() hashes), into out,
 * which must hold len + 1 bytes; returns its length. For tests. */
size_t migrate_checksum_normalise(const char *sql, size_t len, char *out);

#endif
