/* `hookd tenant portal-link T`: a single-use login link to a tenant's
 * portal (engine/portal/portal.h), printed alone on the last line. */
#ifndef HOOKD_CLI_PORTAL_H
#define HOOKD_CLI_PORTAL_H

#include "cli_args.h"

extern const struct cli_args_cmd cli_portal_link_cmd;

#endif
