/* The portal's HTML writer, on the pieces it shares with /admin
 * (html_ui.h): every value from the database, the request or the config is
 * escaped (portal_html escapes each string argument), so a description or
 * payload holding markup shows as text. The page frame carries no inline
 * script or style: the Content-Security-Policy (portal.c) allows only the
 * worker's own assets. */
#include <event2/http.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "html_ui.h"
#include "portal_internal.h"

void portal_html(struct portal_req *q, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    html_ui_vprintf(q->body, fmt, ap);
    va_end(ap);
}

void portal_raw(struct portal_req *q, const char *markup)
{
    evbuffer_add(q->body, markup, strlen(markup));
}

void portal_csrf_field(struct portal_req *q)
{
    portal_html(q, "<input type=\"hidden\" name=\"csrf\" value=\"%s\">", q->csrf);
}

void portal_page_begin(struct portal_req *q, const char *title, const char *nav)
{
    static const struct html_ui_link links[] = {
        {"/portal/", "Endpoints", "endpoints"},
        {"/portal/messages", "Messages", "messages"},
    };
    const struct portal_config *pc = &q->cfg->portal;
    q->status = q->status ? q->status : 200;
    q->content_type = "text/html; charset=utf-8";
    struct html_ui_frame f = {title,
                              pc->title,
                              pc->logo_url,
                              "/portal/assets/portal.css",
                              "/portal/theme.css",
                              "/portal/assets/portal.js",
                              links,
                              q->tenant[0] ? 2 : 0,
                              nav};
    html_ui_page_begin(q->body, &f);
    if (q->tenant[0]) {
        portal_raw(q, "<form method=\"post\" action=\"/portal/logout\" class=\"signout\">");
        portal_csrf_field(q);
        portal_html(q, "<span class=\"tenant\">%s</span><button class=\"link\">Sign out</button></form>",
                    q->tenant_name);
    }
    html_ui_main(q->body);
    const char *done = portal_query(q, "done");
    static const struct {
        const char *code, *text;
    } notices[] = {
        {"created", "Endpoint created."},
        {"updated", "Endpoint updated."},
        {"deleted", "Endpoint deleted."},
        {"enabled", "Endpoint enabled."},
        {"disabled", "Endpoint disabled: it receives nothing until you enable it again."},
        {"rotated", "Signing secret rotated. The previous secret keeps signing for a grace period."},
        {"headers", "Custom headers saved."},
        {"sent", "Example sent to this endpoint."},
        {"recovered", "Failed messages are being sent again."},
        {"resent", "Message sent again."},
    };
    for (size_t i = 0; done && i < sizeof notices / sizeof notices[0]; i++)
        if (strcmp(done, notices[i].code) == 0)
            html_ui_notice(q->body, true, NULL, notices[i].text);
}

void portal_page_end(struct portal_req *q)
{
    html_ui_page_end(q->body, "Webhooks by hookd");
}

void portal_message_page(struct portal_req *q, int status, const char *heading, const char *text)
{
    evbuffer_drain(q->body, evbuffer_get_length(q->body));
    q->status = status;
    portal_page_begin(q, heading, "");
    portal_html(q, "<section class=\"card\"><h1>%s</h1>", heading);
    html_ui_notice(q->body, false, NULL, text);
    if (q->tenant[0])
        portal_raw(q, "<p><a href=\"/portal/\">Back to your endpoints</a></p>");
    portal_raw(q, "</section>");
    portal_page_end(q);
}

/* ---- the request's form and query ---------------------------------------- */

const char *portal_form(const struct portal_req *q, const char *name)
{
    return evhttp_find_header((struct evkeyvalq *)&q->form, name);
}

const char *portal_query(const struct portal_req *q, const char *name)
{
    return evhttp_find_header((struct evkeyvalq *)&q->query, name);
}
