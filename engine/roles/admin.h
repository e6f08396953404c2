/* The admin view at /admin: server-rendered HTML (no build step) for the
 * people who handle the DLQ — open dead letters with filters, one entry with
 * its payload, headers and attempt history, a replay button (POST with a
 * CSRF token, confirmed in the browser), queue depths and live workers.
 * Disabled (404) unless [hookd] admin_token is set; then every request needs
 * the token as a bearer token, as the basic-auth password, or the session
 * cookie that /admin/login sets after the token was typed in. */
#ifndef HOOKD_ADMIN_H
#define HOOKD_ADMIN_H

struct hookd_ctx;
struct http_server;
struct heartbeat;
struct retainer;
struct admin;

/* Registers the /admin routes on http. All arguments are borrowed and must
 * outlive the admin view (requests in flight hold it). */
struct admin *admin_new(struct hookd_ctx *ctx, struct http_server *http, const struct heartbeat *hb,
                        const struct retainer *ret); /* ret: storage figures (may be NULL) */
void admin_free(struct admin *a);                    /* accepts NULL */

#endif
