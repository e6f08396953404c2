/*
 * test_html_ui.c — the pages' shared pieces (engine/shared/html_ui.h): every
 * string argument escaped, the conversions the pages use, the frame, tables,
 * notices and empty states, the embedded assets, payloads bounded whatever
 * their size and depth; and the portal's view of an
 * endpoint's circuit (engine/portal/portal_circuit.h) from the Redis states
 * and the config's policy: off, unknown, closed, open, half-open.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "html_ui.h"
#include "portal_circuit.h"

/* The buffer's text (caller frees), and the buffer emptied. */
static char *take(struct evbuffer *b)
{
    size_t n = evbuffer_get_length(b);
    char *s = malloc(n + 1);
    assert_non_null(s);
    evbuffer_remove(b, s, n);
    s[n] = '\0';
    return s;
}

static void assert_text(struct evbuffer *b, const char *want)
{
    char *got = take(b);
    assert_string_equal(got, want);
    free(got);
}

static void test_escaping_printf(void **state)
{
    (void)state;
    struct evbuffer *b = evbuffer_new();
    html_ui_esc(b, "<a href=\"x\" title='y'>&</a>");
    assert_text(b, "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
    html_ui_esc(b, NULL);
    assert_text(b, "");
    html_ui_printf(b, "<p class=\"%s\">%d %lld %zu 100%%</p>", "a\"><script>", -3, 1234567890123LL, (size_t)7);
    assert_text(b, "<p class=\"a&quot;&gt;&lt;script&gt;\">-3 1234567890123 7 100%</p>");
    evbuffer_free(b);
}

static void test_pieces(void **state)
{
    (void)state;
    struct evbuffer *b = evbuffer_new();
    static const char *const cols[] = {"A", "<B>"};
    html_ui_table_begin(b, "t", "c", cols, 2);
    html_ui_table_end(b);
    assert_text(b, "<div class=\"scroll\"><table id=\"t\" class=\"c\"><thead><tr><th>A</th><th>&lt;B&gt;</th></tr>"
                   "</thead><tbody></tbody></table></div>");
    html_ui_badge(b, "ok", "<i>");
    assert_text(b, "<span class=\"badge ok\">&lt;i&gt;</span>");
    html_ui_notice(b, false, "e", "no <b>");
    assert_text(b, "<p class=\"notice error\" role=\"alert\" id=\"e\">no &lt;b&gt;</p>");
    html_ui_empty(b, NULL, "none");
    assert_text(b, "<p class=\"empty\">none</p>");
    evbuffer_free(b);
}

static void test_frame_and_assets(void **state)
{
    (void)state;
    struct evbuffer *b = evbuffer_new();
    static const struct html_ui_link nav[] = {{"/x", "X", "x"}, {"/y", "Y", "y"}};
    struct html_ui_frame f = {"T<", "Brand", NULL, "/a.css", NULL, "/a.js", nav, 2, "y"};
    html_ui_page_begin(b, &f);
    html_ui_main(b);
    html_ui_page_end(b, "foot");
    char *page = take(b);
    assert_non_null(strstr(page, "<title>T&lt; · Brand</title><link rel=\"stylesheet\" href=\"/a.css\">"
                                 "<script src=\"/a.js\" defer></script>"));
    assert_non_null(strstr(page, "<a href=\"/x\">X</a><a href=\"/y\" class=\"active\" aria-current=\"page\">Y</a>"));
    assert_null(strstr(page, "<img"));
    assert_null(strstr(page, "style="));
    assert_non_null(strstr(page, "</header><main></main><footer>foot</footer></body></html>"));
    free(page);
    evbuffer_free(b);
    const char *data, *type;
    size_t len;
    assert_true(html_ui_asset("portal.css", &data, &len, &type));
    assert_true(len > 100 && strncmp(type, "text/css", 8) == 0);
    assert_true(html_ui_asset("portal.js", &data, &len, &type));
    assert_non_null(strstr(data, "data-confirm"));
    assert_false(html_ui_asset("../hookd.conf", &data, &len, &type));
}

/* html_ui_payload of text as a whole payload, into a string (caller frees). */
static char *payload(const char *text, const char *href)
{
    struct evbuffer *b = evbuffer_new();
    html_ui_payload(b, "p", text, strlen(text), strlen(text), href);
    char *s = take(b);
    evbuffer_free(b);
    return s;
}

static void test_payload_small_is_indented(void **state)
{
    (void)state;
    char *s = payload("{\"b\": [1, \"<x>\"], \"a\": \"[[[[\"}", NULL);
    assert_string_equal(s, "<pre class=\"payload\" id=\"p\">{\n  &quot;a&quot;: &quot;[[[[&quot;,\n  &quot;b&quot;: "
                           "[\n    1,\n    &quot;&lt;x&gt;&quot;\n  ]\n}</pre>");
    free(s);
    s = payload("\"text\"", "/dl?a&b");
    assert_string_equal(s, "<pre class=\"payload\" id=\"p\">&quot;text&quot;</pre><p class=\"muted\" id=\"p-note\">"
                           "<a href=\"/dl?a&amp;b\" id=\"p-download\" download>Download the raw payload</a></p>");
    free(s);
}

/* [[[…]]] nested depth deep, n times in an array. */
static char *nested(size_t n, size_t depth)
{
    size_t one = 2 * depth + 1, len = 2 + n * one;
    char *t = malloc(len + 1);
    assert_non_null(t);
    char *w = t;
    *w++ = '[';
    for (size_t i = 0; i < n; i++) {
        memset(w, '[', depth);
        memset(w + depth, ']', depth);
        w[2 * depth] = i + 1 < n ? ',' : ']';
        w += one;
    }
    *w = '\0';
    t[len - 1] = '\0';
    return t;
}

static void test_payload_deep_or_large_is_bounded(void **state)
{
    (void)state;
    /* deeper than the limit: shown as it is, not indented */
    char *t = nested(1, HTML_UI_PRETTY_DEPTH);
    char *s = payload(t, NULL);
    assert_non_null(strstr(s, t));
    assert_non_null(strstr(s, "Shown without indentation"));
    free(s);
    free(t);
    /* at the limit: indented */
    t = nested(1, HTML_UI_PRETTY_DEPTH - 1);
    s = payload(t, NULL);
    assert_non_null(strstr(s, "[\n  [\n    ["));
    assert_null(strstr(s, "p-note"));
    free(s);
    free(t);
    /* 122 KB nested 2,040 deep: 64 KiB shown, cut, with the download */
    t = nested(30, 2040);
    s = payload(t, "/dl");
    assert_true(strlen(s) < HTML_UI_PAYLOAD_SHOWN + 512);
    assert_non_null(strstr(s, "only its first 64 KiB are here"));
    assert_non_null(strstr(s, "href=\"/dl\""));
    free(s);
    free(t);
    /* a first part only (total larger): cut, even when small */
    struct evbuffer *b = evbuffer_new();
    html_ui_payload(b, "p", "{\"a\": 1", 7, 1000, NULL);
    s = take(b);
    assert_non_null(strstr(s, ">{&quot;a&quot;: 1</pre>"));
    assert_non_null(strstr(s, "only its first 64 KiB are here"));
    free(s);
    /* no payload: an empty block */
    html_ui_payload(b, "p", NULL, 0, 0, NULL);
    s = take(b);
    assert_string_equal(s, "<pre class=\"payload\" id=\"p\"></pre>");
    free(s);
    evbuffer_free(b);
}

static void test_payload_cut_keeps_whole_characters(void **state)
{
    (void)state;
    /* a string of "é" (2 bytes each) whose cut falls inside one */
    size_t n = HTML_UI_PAYLOAD_SHOWN + 3;
    char *t = malloc(n + 1);
    assert_non_null(t);
    t[0] = '"';
    for (size_t i = 1; i + 1 < n; i += 2)
        memcpy(t + i, "\xc3\xa9", 2);
    t[n - 1] = '"';
    t[n] = '\0';
    char *s = payload(t, NULL);
    char *pre = strstr(s, "\">") + 2, *end = strstr(s, "</pre>");
    /* the quote (escaped: 6 bytes) and as many whole "é" as fit in the rest */
    assert_int_equal(end - pre, 6 + HTML_UI_PAYLOAD_SHOWN - 2);
    assert_int_equal((unsigned char)end[-2], 0xc3);
    assert_int_equal((unsigned char)end[-1], 0xa9);
    assert_non_null(strstr(end, "only its first 64 KiB are here"));
    free(s);
    free(t);
}

static struct hookd_config *config_with(const char *retry)
{
    char dir[] = "/tmp/hookd-test-html-ui-XXXXXX", path[64], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/hookd.conf", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "[hookd]\ndatabase = postgresql://hookd@127.0.0.1/hookd\nredis = redis://127.0.0.1:6379/0\n%s", retry);
    fclose(f);
    struct hookd_config *c = config_load(path, err, sizeof err);
    unlink(path);
    rmdir(dir);
    if (!c)
        fail_msg("refused: %s", err);
    return c;
}

static void test_circuit_view(void **state)
{
    (void)state;
    struct hookd_config *c = config_with("[retry]\ncircuit = on\ncircuit_failures = 3\n"
                                         "[retry endpoint:ep_off]\ncircuit = off\n");
    json_t *states = json_pack("{s:{s:I, s:I}, s:{s:I, s:b}, s:{s:I}, s:{s:I}}", "ep_open", "open_until",
                               (json_int_t)5000, "failures", (json_int_t)4, "ep_probe", "open_until", (json_int_t)5000,
                               "probe", 1, "ep_due", "open_until", (json_int_t)900, "ep_failing", "failures",
                               (json_int_t)2);
    struct portal_circuit_view v = portal_circuit_view(states, c, "ep_open", 1000);
    assert_int_equal(v.state, PORTAL_CIRCUIT_OPEN);
    assert_int_equal(v.next_probe_ms, 5000);
    assert_int_equal(v.failures, 4);
    assert_int_equal(v.threshold, 3);
    assert_int_equal(portal_circuit_view(states, c, "ep_probe", 1000).state, PORTAL_CIRCUIT_HALF_OPEN);
    assert_int_equal(portal_circuit_view(states, c, "ep_due", 1000).state, PORTAL_CIRCUIT_HALF_OPEN);
    v = portal_circuit_view(states, c, "ep_failing", 1000);
    assert_int_equal(v.state, PORTAL_CIRCUIT_CLOSED);
    assert_int_equal(v.failures, 2);
    assert_int_equal(v.next_probe_ms, 0);
    assert_int_equal(portal_circuit_view(states, c, "ep_never", 1000).state, PORTAL_CIRCUIT_CLOSED);
    assert_int_equal(portal_circuit_view(states, c, "ep_off", 1000).state, PORTAL_CIRCUIT_OFF);
    assert_int_equal(portal_circuit_view(NULL, c, "ep_open", 1000).state, PORTAL_CIRCUIT_UNKNOWN);
    assert_string_equal(portal_circuit_state_name(PORTAL_CIRCUIT_HALF_OPEN), "half-open");
    json_decref(states);
    config_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escaping_printf),
        cmocka_unit_test(test_pieces),
        cmocka_unit_test(test_frame_and_assets),
        cmocka_unit_test(test_payload_small_is_indented),
        cmocka_unit_test(test_payload_deep_or_large_is_bounded),
        cmocka_unit_test(test_payload_cut_keeps_whole_characters),
        cmocka_unit_test(test_circuit_view),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
