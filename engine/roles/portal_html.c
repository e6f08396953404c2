/* The portal's HTML writer: every value from the database, the request or
 * the config goes through portal_esc (portal_html escapes each string
 * argument), so a description or payload holding markup shows as text.
 * The page frame carries no inline script or style: the Content-Security-
 * Policy (portal.c) allows only the worker's own assets. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "portal_internal.h"
#include "xmalloc.h"

void portal_esc(struct evbuffer *b, const char *s)
{
    if (!s)
        return;
    const char *run = s;
    for (; *s; s++) {
        const char *rep = NULL;
        switch (*s) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        default: continue;
        }
        evbuffer_add(b, run, (size_t)(s - run));
        evbuffer_add(b, rep, strlen(rep));
        run = s + 1;
    }
    evbuffer_add(b, run, (size_t)(s - run));
}

/* A small printf: %s (escaped), %d, %lld, %%. Enough for the pages, and
 * no way to print an unescaped string by mistake. */
void portal_html(struct portal_req *q, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *run = fmt;
    for (const char *f = fmt; *f; f++) {
        if (*f != '%')
            continue;
        evbuffer_add(q->body, run, (size_t)(f - run));
        f++;
        if (*f == 's') {
            portal_esc(q->body, va_arg(ap, const char *));
        } else if (*f == 'd') {
            evbuffer_add_printf(q->body, "%d", va_arg(ap, int));
        } else if (f[0] == 'l' && f[1] == 'l' && f[2] == 'd') {
            evbuffer_add_printf(q->body, "%lld", va_arg(ap, long long));
            f += 2;
        } else if (*f == '%') {
            evbuffer_add(q->body, "%", 1);
        } else {
            HOOKD_ASSERT(!"portal_html: unsupported conversion");
        }
        run = f + 1;
    }
    evbuffer_add(q->body, run, strlen(run));
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

static void nav_link(struct portal_req *q, const char *href, const char *label, const char *key, const char *nav)
{
    bool here = nav && strcmp(key, nav) == 0;
    portal_html(q, "<a href=\"%s\"", href);
    portal_raw(q, here ? " class=\"active\" aria-current=\"page\">" : ">");
    portal_html(q, "%s</a>", label);
}

void portal_page_begin(struct portal_req *q, const char *title, const char *nav)
{
    const struct portal_config *pc = &q->cfg->portal;
    q->status = q->status ? q->status : 200;
    q->content_type = "text/html; charset=utf-8";
    portal_html(q,
                "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                "<title>%s · %s</title>"
                "<link rel=\"stylesheet\" href=\"/portal/assets/portal.css\">"
                "<link rel=\"stylesheet\" href=\"/portal/theme.css\">"
                "<script src=\"/portal/assets/portal.js\" defer></script></head><body>"
                "<header class=\"bar\"><div class=\"brand\">",
                title, pc->title);
    if (pc->logo_url)
        portal_html(q, "<img class=\"logo\" src=\"%s\" alt=\"\">", pc->logo_url);
    portal_html(q, "<span class=\"title\">%s</span></div>", pc->title);
    if (q->tenant[0]) {
        portal_raw(q, "<nav>");
        nav_link(q, "/portal/", "Endpoints", "endpoints", nav);
        nav_link(q, "/portal/messages", "Messages", "messages", nav);
        portal_raw(q, "</nav><form method=\"post\" action=\"/portal/logout\" class=\"signout\">");
        portal_csrf_field(q);
        portal_html(q, "<span class=\"tenant\">%s</span><button class=\"link\">Sign out</button></form>",
                    q->tenant_name);
    }
    portal_raw(q, "</header><main>");
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
        {"sent", "Example event sent."},
        {"recovered", "Failed messages are being sent again."},
        {"resent", "Message sent again."},
    };
    for (size_t i = 0; done && i < sizeof notices / sizeof notices[0]; i++)
        if (strcmp(done, notices[i].code) == 0)
            portal_html(q, "<p class=\"notice ok\" role=\"status\">%s</p>", notices[i].text);
}

void portal_page_end(struct portal_req *q)
{
    portal_raw(q, "</main><footer>Webhooks by hookd</footer></body></html>");
}

void portal_message_page(struct portal_req *q, int status, const char *heading, const char *text)
{
    evbuffer_drain(q->body, evbuffer_get_length(q->body));
    q->status = status;
    portal_page_begin(q, heading, "");
    portal_html(q, "<section class=\"card\"><h1>%s</h1><p class=\"notice error\" role=\"alert\">%s</p>", heading,
                text);
    if (q->tenant[0])
        portal_raw(q, "<p><a href=\"/portal/\">Back to your endpoints</a></p>");
    portal_raw(q, "</section>");
    portal_page_end(q);
}
