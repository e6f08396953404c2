/* The server-rendered pages' shared pieces, for the tenants' portal
 * (portal_html.c) and the operators' /admin view (admin.c): HTML escaping
 * and an escaping printf, the page frame (head with the stylesheets and
 * the one script, the bar with the brand and the navigation, main, footer),
 * tables, badges, notices and empty states, payloads shown within a
 * bound whatever their size and depth, and the embedded assets
 * (assets/portal/: one stylesheet and one script for both, no inline
 * script or style, so both CSPs can forbid it). Every string argument is
 * escaped: the format strings are the only trusted markup. No I/O. */
#ifndef HOOKD_HTML_UI_H
#define HOOKD_HTML_UI_H

#include <event2/buffer.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* The string member k of a JSON object, "" when it is absent or not a
 * string: what a page prints for a missing field. Borrowed from o. */
const char *html_ui_str(const json_t *o, const char *k);

/* Appends s with &, <, >, " and ' escaped. NULL appends nothing. */
void html_ui_esc(struct evbuffer *b, const char *s);
/* A small printf: %s (escaped), %d, %lld, %zu, %%. Nothing else: there is
 * no way to print an unescaped string through it. */
void html_ui_printf(struct evbuffer *b, const char *fmt, ...);
void html_ui_vprintf(struct evbuffer *b, const char *fmt, va_list ap);

struct html_ui_link {
    const char *href, *label, *key; /* key: compared with html_ui_frame.active */
};

/* The frame of a page. Strings borrowed for the call. */
struct html_ui_frame {
    const char *title;              /* <title>: "title · brand" */
    const char *brand;              /* the bar's name */
    const char *logo_url;           /* NULL: none */
    const char *css, *theme_css;    /* stylesheet URLs (theme_css may be NULL) */
    const char *js;                 /* the page's one script */
    const struct html_ui_link *nav; /* NULL or nnav links */
    size_t nnav;
    const char *active; /* the nav key of this page, or NULL */
};

/* Up to the bar's end: the caller may add to the bar (a sign-out form),
 * then calls html_ui_main. */
void html_ui_page_begin(struct evbuffer *b, const struct html_ui_frame *f);
void html_ui_main(struct evbuffer *b); /* closes the bar, opens <main> */
void html_ui_page_end(struct evbuffer *b, const char *footer);

/* <div class="scroll"><table id=… class=…><thead>…</thead><tbody>; id and
 * cls may be NULL; headers: n column names. */
void html_ui_table_begin(struct evbuffer *b, const char *id, const char *cls, const char *const *headers, size_t n);
void html_ui_table_end(struct evbuffer *b);
/* <span class="badge cls">text</span> */
void html_ui_badge(struct evbuffer *b, const char *cls, const char *text);
/* <p class="notice ok|error" role=…>text</p>; id may be NULL. */
void html_ui_notice(struct evbuffer *b, bool ok, const char *id, const char *text);
/* <p class="empty">text</p>; id may be NULL. */
void html_ui_empty(struct evbuffer *b, const char *id, const char *text);

/* A payload in <pre class="payload" id=…>, bounded whatever its size and
 * shape. text[0..len) is its stored JSON text, or only the first part of
 * it (total: the whole text's length in bytes); NULL shows nothing. At
 * most HTML_UI_PAYLOAD_SHOWN bytes of text are written (escaped), so a
 * page never grows with the payload. The text is parsed and indented only
 * when it is whole, at most HTML_UI_PRETTY_BYTES long and nested at most
 * HTML_UI_PRETTY_DEPTH deep (the depth read from the text first:
 * indentation grows with the depth on every line, and 100 KB nested 2,000
 * deep indent to 250 MB); otherwise it is shown as it is. A payload cut
 * short says so, and download_href (NULL: none) links to the whole. */
#define HTML_UI_PAYLOAD_SHOWN (64 * 1024)
#define HTML_UI_PRETTY_BYTES (64 * 1024)
#define HTML_UI_PRETTY_DEPTH 16
void html_ui_payload(struct evbuffer *b, const char *id, const char *text, size_t len, size_t total,
                     const char *download_href);

/* An embedded asset of assets/portal/ by file name ("portal.css",
 * "portal.js"): its bytes (static) and content type; false when unknown. */
bool html_ui_asset(const char *name, const char **data, size_t *len, const char **type);

#endif
