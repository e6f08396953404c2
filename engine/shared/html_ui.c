/* The pages' shared pieces; see html_ui.h. */
#include "html_ui.h"

#include <stdio.h>
#include <string.h>

#include "embedded.h"
#include "xmalloc.h"

void html_ui_esc(struct evbuffer *b, const char *s)
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

void html_ui_vprintf(struct evbuffer *b, const char *fmt, va_list ap)
{
    const char *run = fmt;
    for (const char *f = fmt; *f; f++) {
        if (*f != '%')
            continue;
        evbuffer_add(b, run, (size_t)(f - run));
        f++;
        if (*f == 's') {
            html_ui_esc(b, va_arg(ap, const char *));
        } else if (*f == 'd') {
            evbuffer_add_printf(b, "%d", va_arg(ap, int));
        } else if (f[0] == 'l' && f[1] == 'l' && f[2] == 'd') {
            evbuffer_add_printf(b, "%lld", va_arg(ap, long long));
            f += 2;
        } else if (f[0] == 'z' && f[1] == 'u') {
            evbuffer_add_printf(b, "%zu", va_arg(ap, size_t));
            f++;
        } else if (*f == '%') {
            evbuffer_add(b, "%", 1);
        } else {
            HOOKD_ASSERT(!"html_ui_printf: unsupported conversion");
        }
        run = f + 1;
    }
    evbuffer_add(b, run, strlen(run));
}

void html_ui_printf(struct evbuffer *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    html_ui_vprintf(b, fmt, ap);
    va_end(ap);
}

void html_ui_page_begin(struct evbuffer *b, const struct html_ui_frame *f)
{
    html_ui_printf(b,
                   "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                   "<title>%s · %s</title><link rel=\"stylesheet\" href=\"%s\">",
                   f->title, f->brand, f->css);
    if (f->theme_css)
        html_ui_printf(b, "<link rel=\"stylesheet\" href=\"%s\">", f->theme_css);
    html_ui_printf(b, "<script src=\"%s\" defer></script></head><body><header class=\"bar\"><div class=\"brand\">",
                   f->js);
    if (f->logo_url)
        html_ui_printf(b, "<img class=\"logo\" src=\"%s\" alt=\"\">", f->logo_url);
    html_ui_printf(b, "<span class=\"title\">%s</span></div>", f->brand);
    if (f->nnav == 0)
        return;
    evbuffer_add_printf(b, "<nav>");
    for (size_t i = 0; i < f->nnav; i++) {
        bool here = f->active && strcmp(f->nav[i].key, f->active) == 0;
        html_ui_printf(b, "<a href=\"%s\"", f->nav[i].href);
        evbuffer_add_printf(b, "%s", here ? " class=\"active\" aria-current=\"page\">" : ">");
        html_ui_printf(b, "%s</a>", f->nav[i].label);
    }
    evbuffer_add_printf(b, "</nav>");
}

void html_ui_main(struct evbuffer *b)
{
    evbuffer_add_printf(b, "</header><main>");
}

void html_ui_page_end(struct evbuffer *b, const char *footer)
{
    html_ui_printf(b, "</main><footer>%s</footer></body></html>\n", footer);
}

void html_ui_table_begin(struct evbuffer *b, const char *id, const char *cls, const char *const *headers, size_t n)
{
    evbuffer_add_printf(b, "<div class=\"scroll\"><table");
    if (id)
        html_ui_printf(b, " id=\"%s\"", id);
    if (cls)
        html_ui_printf(b, " class=\"%s\"", cls);
    evbuffer_add_printf(b, "><thead><tr>");
    for (size_t i = 0; i < n; i++)
        html_ui_printf(b, "<th>%s</th>", headers[i]);
    evbuffer_add_printf(b, "</tr></thead><tbody>");
}

void html_ui_table_end(struct evbuffer *b)
{
    evbuffer_add_printf(b, "</tbody></table></div>");
}

void html_ui_badge(struct evbuffer *b, const char *cls, const char *text)
{
    html_ui_printf(b, "<span class=\"badge %s\">%s</span>", cls, text);
}

void html_ui_notice(struct evbuffer *b, bool ok, const char *id, const char *text)
{
    evbuffer_add_printf(b, "<p class=\"notice %s\" role=\"%s\"", ok ? "ok" : "error", ok ? "status" : "alert");
    if (id)
        html_ui_printf(b, " id=\"%s\"", id);
    html_ui_printf(b, ">%s</p>", text);
}

void html_ui_empty(struct evbuffer *b, const char *id, const char *text)
{
    evbuffer_add_printf(b, "<p class=\"empty\"");
    if (id)
        html_ui_printf(b, " id=\"%s\"", id);
    html_ui_printf(b, ">%s</p>", text);
}

bool html_ui_asset(const char *name, const char **data, size_t *len, const char **type)
{
    static const struct {
        const char *name, *path, *type;
    } assets[] = {
        {"portal.css", "assets/portal/portal.css", "text/css; charset=utf-8"},
        {"portal.js", "assets/portal/portal.js", "text/javascript; charset=utf-8"},
    };
    for (size_t i = 0; i < sizeof assets / sizeof assets[0]; i++) {
        if (strcmp(name, assets[i].name) != 0)
            continue;
        for (size_t k = 0; k < embedded_nfiles; k++) {
            if (strcmp(embedded_files[k].path, assets[i].path) == 0) {
                *data = embedded_files[k].data;
                *len = embedded_files[k].len;
                *type = assets[i].type;
                return true;
            }
        }
    }
    return false;
}
