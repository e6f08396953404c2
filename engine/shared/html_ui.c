/* The pages' shared pieces; see html_ui.h. */
#include "html_ui.h"

#include <jansson.h>
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

const char *html_ui_str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
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

/* Where an indented payload goes: escaped into b up to cap bytes, cut once
 * the text would pass cap. */
struct payload_sink {
    struct evbuffer *b;
    size_t used, cap;
    bool cut;
};

/* The length of the first n bytes of s cut back to a character boundary
 * (UTF-8): s[n] must not continue the character before it. */
static size_t char_boundary(const char *s, size_t n)
{
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* json_dump_callback_t: takes what fits under the cap and stops the dump
 * (-1) at the cap. */
static int payload_write(const char *buf, size_t n, void *arg)
{
    struct payload_sink *s = arg;
    size_t take = n;
    if (n > s->cap - s->used) {
        take = char_boundary(buf, s->cap - s->used);
        s->cut = true;
    }
    esc_n(s->b, buf, take);
    s->used += take;
    return s->cut ? -1 : 0;
}

/* Whether the JSON text s[0..n) nests arrays and objects deeper than
 * limit, read as text (brackets outside strings): nothing is parsed. */
static bool nested_deeper(const char *s, size_t n, int limit)
{
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limit)
                return true;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return false;
}

/* The whole text indented, up to the cap; false when it does not parse. */
static bool write_indented(struct evbuffer *b, const char *text, size_t len, bool *cut)
{
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY, NULL);
    if (!v)
        return false;
    struct payload_sink shown = {b, 0, HTML_UI_PAYLOAD_SHOWN, false};
    (void)json_dump_callback(v, payload_write, &shown, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(v);
    *cut = shown.cut;
    return true;
}

void html_ui_payload(struct evbuffer *b, const char *id, const char *text, size_t len, size_t total,
                     const char *download_href)
{
    html_ui_printf(b, "<pre class=\"payload\" id=\"%s\">", id);
    if (!text) {
        evbuffer_add_printf(b, "</pre>");
        return;
    }
    bool pretty = len == total && total <= HTML_UI_PRETTY_BYTES && !nested_deeper(text, len, HTML_UI_PRETTY_DEPTH);
    bool cut = len < total;
    if (!pretty || !write_indented(b, text, len, &cut)) {
        pretty = false;
        size_t shown = len > HTML_UI_PAYLOAD_SHOWN ? char_boundary(text, HTML_UI_PAYLOAD_SHOWN) : len;
        cut = cut || shown < len;
        esc_n(b, text, shown);
    }
    evbuffer_add_printf(b, "</pre>");
    if (!cut && pretty && !download_href)
        return;
    html_ui_printf(b, "<p class=\"muted\" id=\"%s-note\">", id);
    if (cut)
        html_ui_printf(b, "This payload is larger than a page shows: only its first %zu KiB are here. ",
                       (size_t)HTML_UI_PAYLOAD_SHOWN / 1024);
    else if (!pretty)
        html_ui_printf(b,
                       "Shown without indentation: it is larger than %zu KiB or nested more than %d "
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
