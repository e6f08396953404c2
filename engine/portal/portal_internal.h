/* Internal to the portal role (portal*.c): one request as the pages see
 * it, the HTML writer (portal_html.c) and the pages (portal_pages.c).
 *
 * A request is read on the loop (path, query, form, the session cookie);
 * then one job on the shared pool finds the session's tenant, checks the
 * CSRF token of a POST, runs the page — which reads and changes data
 * through the API role's operations, scoped to that tenant exactly as a
 * tenant-scoped API token is — and writes the answer (an HTML body, or a
 * redirect) into the request. Back on the loop the answer is sent with the
 * security headers. A page that shows circuits needs Redis, which only the
 * loop has: its first job stops once the session is found valid, the loop
 * reads the circuits, and a second job runs the page (so a made-up cookie
 * costs Redis nothing). */
#ifndef HOOKD_PORTAL_INTERNAL_H
#define HOOKD_PORTAL_INTERNAL_H

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "api.h"
#include "token.h"

#define PORTAL_MAX_SEGS 4

struct portal;
struct portal_req;

typedef void portal_page_fn(PGconn *conn, struct portal_req *q);

struct portal_req {
    struct portal *portal;
    struct evhttp_request *req; /* NULL once the client left */
    const struct hookd_config *cfg;
    bool post;
    char *segs[PORTAL_MAX_SEGS]; /* the path's segments below /portal/, decoded */
    int nsegs;
    portal_page_fn *page;
    struct evkeyvalq query, form;
    char session[TOKEN_LEN];     /* the cookie's token, "" when none */
    char login_nonce[TOKEN_LEN]; /* /portal/login: the login page's cookie, "" when none */
    char csrf[65];
    bool https;
    json_t *circuits;     /* owned: the circuits (portal_circuit.h) for the pages that show them; NULL: unknown */
    bool circuits_wanted; /* the session is valid: read the circuits, then run the page */
    bool circuits_read;
    /* set on the DB thread */
    char tenant[64], tenant_name[256];
    int status;
    struct evbuffer *body; /* HTML (or text when content_type says so) */
    const char *content_type;
    char disposition[128];  /* a Content-Disposition value when set (a download) */
    char location[512];     /* a redirect (303) when set */
    char cookie[256];       /* a Set-Cookie value when set */
    char login_cookie[256]; /* the login page's nonce cookie, set or cleared */
    char *due[API_DELIVERIES_MAX];
    size_t ndue;
};

/* ---- HTML (portal_html.c, on html_ui.h) ---- */
/* printf into the body; every %s argument is escaped first (the format
 * itself is trusted, the arguments never are); see html_ui_printf. */
void portal_html(struct portal_req *q, const char *fmt, ...);
/* Appends trusted markup (a literal) as is. */
void portal_raw(struct portal_req *q, const char *markup);
void portal_page_begin(struct portal_req *q, const char *title, const char *nav);
void portal_page_end(struct portal_req *q);
/* A whole page with one message (status, heading, text); for errors. */
void portal_message_page(struct portal_req *q, int status, const char *heading, const char *text);
/* The hidden CSRF field of a form. */
void portal_csrf_field(struct portal_req *q);

/* ---- the request (portal_html.c) ---- */
const char *portal_form(const struct portal_req *q, const char *name);
const char *portal_query(const struct portal_req *q, const char *name);

/* ---- the pages (portal_pages.c) ---- */
portal_page_fn portal_endpoints, portal_endpoint_create, portal_endpoint_page, portal_endpoint_update,
    portal_endpoint_secret, portal_endpoint_enable, portal_endpoint_disable, portal_endpoint_delete,
    portal_endpoint_rotate, portal_endpoint_headers, portal_endpoint_send_example, portal_endpoint_recover,
    portal_messages, portal_message_view, portal_message_payload, portal_message_resend;

#endif
