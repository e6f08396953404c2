/* `hookd retention run [--dry-run]`: one retention pass by hand. */
#ifndef HOOKD_CLI_RETENTION_H
#define HOOKD_CLI_RETENTION_H

#include <jansson.h>

#include "cli_args.h"

struct retention_storage;

/* The `retention` group, for main.c's command table. */
extern const struct cli_args_cmd cli_retention_cmd;

/* Storage figures (engine/core/retention.h) as a JSON array (caller
 * decrefs), or as the STORAGE table on stdout: shared with `hookd status`. */
json_t *cli_retention_storage_json(const struct retention_storage *s);
void cli_retention_storage_text(const struct retention_storage *s);

#endif
