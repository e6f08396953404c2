/* The pages' shared pieces; see html_ui.h. */
#include "html_ui.h"

#include <stdio.h>
#include <string.h>

#include "embedded.h"
#include "xmalloc.h"

/* Appends the n bytes at s, escaped. */
static void esc_n(struct evbuffer *b, const char *s, size_t n)
{
    const char *run = s, *end = s + n;
    for (; s < end; s++) {
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

void html_ui_esc(struct evbuffer *b, const char *s)
{
    if (s)
        esc_n(b, s, strlen(s));
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

/* ---- payloads ------------------------------------------------------------- */

/* Where a payload's text goes: counted only (b NULL) or escaped into b, up
 * to cap bytes; cut once the text would pass cap. */
struct payload_sink {
    struct evbuffer *b;
    size_t used, cap;
    bool cut;
};

/* json_dump_callback_t: takes what fits under the cap, on a character
 * boundary (UTF-8), and stops the dump (-1) at the cap. */
static int payload_write(const char *buf, size_t n, void *arg)
{
    struct payload_sink *s = arg;
    size_t take = n;
    if (n > s->cap - s->used) {
        take = s->cap - s->used;
        while (take > 0 && ((unsigned char)buf[take] & 0xC0) == 0x80)
            take--;
        s->cut = true;
    }
    if (s->b)
        esc_n(s->b, buf, take);
    s->used += take;
    return s->cut ? -1 : 0;
}

/* Whether v is nested deeper than limit levels (an array or an object is
 * one). It descends at most limit levels, whatever v's depth. */
static bool nested_deeper(const json_t *v, int limit)
{
    if (!json_is_array(v) && !json_is_object(v))
        return false;
    if (limit == 0)
        return true;
    size_t i;
    const char *k;
    json_t *x;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x)
        {
            if (nested_deeper(x, limit - 1))
                return true;
        }
        return false;
    }
    json_object_foreach((json_t *)v, k, x)
    {
        if (nested_deeper(x, limit - 1))
            return true;
    }
    return false;
}

void html_ui_payload(struct evbuffer *b, const char *id, const json_t *v, const char *download_href)
{
    struct payload_sink size = {NULL, 0, HTML_UI_PRETTY_BYTES, false};
    (void)json_dump_callback(v, payload_write, &size, JSON_COMPACT | JSON_ENCODE_ANY);
    bool pretty = !size.cut && !nested_deeper(v, HTML_UI_PRETTY_DEPTH);
    struct payload_sink shown = {b, 0, HTML_UI_PAYLOAD_SHOWN, false};
    html_ui_printf(b, "<pre class=\"payload\" id=\"%s\">", id);
    if (v)
        (void)json_dump_callback(v, payload_write, &shown,
                                 (pretty ? JSON_INDENT(2) | JSON_SORT_KEYS : JSON_COMPACT) | JSON_ENCODE_ANY);
    evbuffer_add_printf(b, "</pre>");
    if (!shown.cut && pretty && !download_href)
        return;
    html_ui_printf(b, "<p class=\"muted\" id=\"%s-note\">", id);
    if (shown.cut)
        html_ui_printf(b, "This payload is larger than a page shows: only its first %zu KiB are here. ",
                       (size_t)HTML_UI_PAYLOAD_SHOWN / 1024);
    else if (!pretty)
        html_ui_printf(b,
                       "Shown without indentation: this payload is larger than %zu KiB or nested more than %d "
                       "levels deep. ",
                       (size_t)HTML_UI_PRETTY_BYTES / 1024, HTML_UI_PRETTY_DEPTH);
    if (download_href)
        html_ui_printf(b, "<a href=\"%s\" id=\"%s-download\" download>Download the raw payload</a>", download_href,
                       id);
    evbuffer_add_printf(b, "</p>");
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
