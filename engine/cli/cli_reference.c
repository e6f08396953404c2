/* `hookd reference metrics` prints every metric /metrics can export (the
 * metrics table of engine/ops/metrics.c), `hookd reference api` every route
 * of the API with whether hookd implements it (engine/api/api_routes.c):
 * the sources of docs/reference/metrics.md and api-operations.md. */
#include "cli_reference.h"

#include <jansson.h>
#include <stdio.h>

#include "api.h"
#include "ops.h"
#include "version.h"

static int print_json(json_t *items)
{
    json_t *doc = json_pack("{s:s, s:o}", "version", HOOKD_VERSION, "items", items);
    int rc = json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    return rc != 0 || puts("") < 0;
}

static int run_metrics(const struct cli_args *a, const struct hookd_config *cfg)
{
    (void)a, (void)cfg;
    return print_json(metrics_reference());
}

static int run_api(const struct cli_args *a, const struct hookd_config *cfg)
{
    (void)a, (void)cfg;
    return print_json(api_routes_reference());
}

static const struct cli_args_cmd cmd_metrics = {
    .name = "metrics",
    .summary = "every metric /metrics can export, as JSON",
    .help = "Name, type, labels, which workers export it, and its help text (docs/reference/metrics.md is\n"
            "generated from it).",
    .run = run_metrics,
};

static const struct cli_args_cmd cmd_api = {
    .name = "api",
    .summary = "every route of the API, implemented or answered 501, as JSON",
    .help = "Method, path, Svix operation id, and whether hookd implements it (docs/reference/api-operations.md\n"
            "is generated from it).",
    .run = run_api,
};

static const struct cli_args_cmd *const reference_subs[] = {&cmd_metrics, &cmd_api, NULL};

const struct cli_args_cmd cli_reference_cmd = {
    .name = "reference",
    .summary = "the tables behind the generated references, as JSON",
    .subs = reference_subs,
};
