/*
 * test_html_ui.c — the pages' shared pieces (engine/shared/html_ui.h): every
 * string argument escaped, the conversions the pages use, the frame, tables,
 * notices and empty states, the embedded assets; and the portal's view of an
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
        cmocka_unit_test(test_circuit_view),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
