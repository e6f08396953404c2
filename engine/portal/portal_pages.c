/* The portal's pages, for the session's tenant only. Reads and changes go
 * through the API role's operations (api.h: api_call) with the request's
 * tenant as the scope, exactly as a tenant-scoped token's requests: an id
 * of another tenant's endpoint or message is "not found", whatever the URL
 * or the form says. A change runs in one transaction and answers with a
 * redirect to the page that shows it (POST, redirect, GET); a refused change
 * shows the API's reason. See portal_internal.h. */
#include <ctype.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backoff.h"
#include "clock.h"
#include "config.h"
#include "db.h"
#include "html_ui.h"
#include "portal_circuit.h"
#include "portal_internal.h"
#include "query.h"
#include "settings.h"
#include "xmalloc.h"

#define LIST_ROWS 50

/* ---- calling the API's operations ---------------------------------------- */

/* Runs the API operation op for the session's tenant with path parameters
 * (tenant, a, b), an optional JSON body (borrowed) and query string;
 * returns the status and the answer (*reply, caller frees; may be NULL). */
static int call(PGconn *conn, struct portal_req *q, const char *op, const char *a, const char *b, json_t *body,
                const char *query, json_t **reply)
{
    const struct api_call c =
        {.cfg = q->cfg, .op = op, .tenant = q->tenant, .a = a, .b = b, .body = body, .query = query};
    struct api_call_result res;
    api_call(conn, &c, &res);
    for (size_t i = 0; i < res.ndue; i++) {
        if (q->ndue < API_DELIVERIES_MAX)
            q->due[q->ndue++] = res.due[i];
        else
            free(res.due[i]);
    }
    if (reply)
        *reply = res.reply;
    else
        json_decref(res.reply);
    return res.status;
}

/* The reason of a refused answer, for people. */
static void reason(const json_t *reply, char *out, size_t outlen)
{
    const json_t *d = json_object_get(reply, "detail");
    if (json_is_string(d)) {
        snprintf(out, outlen, "%s", json_string_value(d));
        return;
    }
    out[0] = '\0';
    size_t used = 0;
    size_t i;
    const json_t *item;
    json_array_foreach(d, i, item)
    {
        const json_t *loc = json_object_get(item, "loc");
        const char *field = json_string_value(json_array_get(loc, json_array_size(loc) - 1));
        int w = snprintf(out + used, outlen - used, "%s%s%s%s", used ? "; " : "", field ? field : "",
                         field ? ": " : "", json_string_value(json_object_get(item, "msg")));
        if (w < 0 || (size_t)w >= outlen - used)
            break;
        used += (size_t)w;
    }
    if (!out[0])
        snprintf(out, outlen, "the request was refused");
}

/* A change: BEGIN, the operation, COMMIT or ROLLBACK; then a redirect to
 * back?done=code, or the reason on an error page. */
static void change(PGconn *conn, struct portal_req *q, const char *op, const char *a, const char *b, json_t *body,
                   const char *back, const char *code)
{
    char err[256];
    if (db_command(conn, "BEGIN", err, sizeof err) != 0) {
        portal_message_page(q, 503, "The portal is unavailable", "Please try again in a moment.");
        return;
    }
    json_t *reply = NULL;
    int status = call(conn, q, op, a, b, body, NULL, &reply);
    if (status >= 300 || db_command(conn, "COMMIT", err, sizeof err) != 0) {
        db_rollback(conn);
        for (size_t i = 0; i < q->ndue; i++)
            free(q->due[i]);
        q->ndue = 0;
        char why[512];
        reason(reply, why, sizeof why);
        json_decref(reply);
        portal_message_page(q,
                            status == 404                   ? 404
                            : status >= 500 || status < 300 ? 503
                                                            : 422,
                            status == 404 ? "Not found" : "That did not work", why);
        return;
    }
    json_decref(reply);
    snprintf(q->location, sizeof q->location, "%s?done=%s", back, code);
}

/* A read; on failure the error page is set and NULL returned. */
static json_t *get(PGconn *conn, struct portal_req *q, const char *op, const char *a, const char *b, const char *query)
{
    json_t *reply = NULL;
    int status = call(conn, q, op, a, b, NULL, query, &reply);
    if (status >= 300) {
        char why[512];
        reason(reply, why, sizeof why);
        json_decref(reply);
        portal_message_page(q, status == 404 ? 404 : 503, status == 404 ? "Not found" : "Something went wrong",
                            status == 404 ? "There is no such item in your account." : why);
        return NULL;
    }
    return reply;
}

/* The form's values of a repeated field (checkboxes) as a JSON array. */
static json_t *form_all(const struct portal_req *q, const char *name)
{
    json_t *a = json_array();
    for (const struct evkeyval *kv = q->form.tqh_first; kv; kv = kv->next.tqe_next)
        if (strcmp(kv->key, name) == 0 && kv->value[0])
            json_array_append_new(a, json_string(kv->value));
    return a;
}

/* ---- pieces ---------------------------------------------------------------- */

static void event_type_boxes(PGconn *conn, struct portal_req *q, const json_t *chosen)
{
    json_t *types = get(conn, q, "v1.event-type.list", NULL, NULL, "limit=250");
    if (!types)
        return;
    const json_t *data = json_object_get(types, "data");
    portal_raw(q, "<fieldset class=\"types\"><legend>Event types</legend>");
    if (json_array_size(data) == 0)
        portal_raw(q, "<p class=\"muted\">No event types are defined yet: the endpoint receives every event.</p>");
    else
        portal_raw(q, "<p class=\"muted\">Choose none to receive every event.</p>");
    size_t i;
    const json_t *t;
    json_array_foreach(data, i, t)
    {
        const char *name = html_ui_str(t, "name");
        bool on = false;
        size_t k;
        const json_t *c;
        json_array_foreach(chosen, k, c)
            on = on || strcmp(json_string_value(c) ? json_string_value(c) : "", name) == 0;
        portal_html(q, "<label class=\"check\"><input type=\"checkbox\" name=\"event_type\" value=\"%s\"%s> %s", name,
                    on ? " checked" : "", name);
        if (*html_ui_str(t, "description"))
            portal_html(q, " <span class=\"muted\">%s</span>", html_ui_str(t, "description"));
        portal_raw(q, "</label>");
    }
    portal_raw(q, "</fieldset>");
    json_decref(types);
}

/* The endpoint's signature_headers setting (settings.h): its own word, or
 * "" to take its application's (or the server's). current: the endpoint's
 * settings object, NULL on the add form. */
static void signature_headers_select(struct portal_req *q, const json_t *current)
{
    const enum settings_id id = SETTINGS_SIGNATURE_HEADERS;
    const char *name = settings_name(id);
    const char *chosen = json_string_value(json_object_get(current, name));
    portal_html(q,
                "<label>Signature headers <select name=\"%s\"><option value=\"\">as the application or server "
                "sets it</option>",
                name);
    static const char *const shown[] = {"svix-* and webhook-*", "svix-* only", "webhook-* only"};
    for (int v = 0; settings_word(id, v); v++)
        portal_html(q, "<option value=\"%s\"%s>%s</option>", settings_word(id, v),
                    chosen && strcmp(chosen, settings_word(id, v)) == 0 ? " selected" : "",
                    v < (int)(sizeof shown / sizeof shown[0]) ? shown[v] : settings_word(id, v));
    portal_raw(q, "</select></label>");
}

/* The form's signature headers as a settings object: its word, or null
 * (take the application's or server's); NULL when the form has none. */
static json_t *settings_body(const struct portal_req *q)
{
    const char *name = settings_name(SETTINGS_SIGNATURE_HEADERS), *v = portal_form(q, name);
    if (!v)
        return NULL;
    return json_pack("{s:o}", name, *v ? json_string(v) : json_null());
}

static void badge(struct portal_req *q, const char *cls, const char *text)
{
    html_ui_badge(q->body, cls, text);
}

static void post_button(struct portal_req *q, const char *action, const char *label, const char *cls,
                        const char *confirm)
{
    portal_html(q, "<form method=\"post\" action=\"%s\" class=\"inline\"", action);
    if (confirm)
        portal_html(q, " data-confirm=\"%s\"", confirm);
    portal_raw(q, ">");
    portal_csrf_field(q);
    portal_html(q, "<button class=\"%s\">%s</button></form>", cls, label);
}

/* ms since the epoch as 2026-12-03 12:39:44 (UTC). */
static const char *ms_utc(int64_t ms, char out[24])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, 24, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(out, 24, "-");
    return out;
}

/* The badge of an endpoint's circuit (data-state: closed, open, half-open,
 * off or unknown). */
static struct portal_circuit_view circuit_badge(struct portal_req *q, const char *endpoint)
{
    static const char *const cls[] = {"off", "off", "ok", "fail", "warn"};
    static const char *const label[] = {"Unknown", "Off", "Closed", "Open", "Half-open"};
    struct portal_circuit_view v = portal_circuit_view(q->circuits, q->cfg, endpoint, clock_wall_ms());
    portal_html(q, "<span class=\"badge circuit %s\" data-state=\"%s\">%s</span>", cls[v.state],
                portal_circuit_state_name(v.state), label[v.state]);
    return v;
}

/* ---- endpoints -------------------------------------------------------------- */

void portal_endpoints(PGconn *conn, struct portal_req *q)
{
    json_t *list = get(conn, q, "v1.endpoint.list", NULL, NULL, "limit=250");
    if (!list)
        return;
    portal_page_begin(q, "Endpoints", "endpoints");
    portal_raw(q, "<section class=\"card\"><h1>Endpoints</h1>");
    const json_t *data = json_object_get(list, "data");
    if (json_array_size(data) == 0) {
        html_ui_empty(q->body, NULL, "No endpoints yet. Add the URL where you want to receive webhooks below.");
    } else {
        static const char *const cols[] = {"URL", "Description", "Event types", "State", "Circuit"};
        html_ui_table_begin(q->body, "endpoints", NULL, cols, 5);
        size_t i;
        const json_t *e;
        json_array_foreach(data, i, e)
        {
            portal_html(q,
                        "<tr><td data-label=\"URL\"><a class=\"url\" href=\"/portal/endpoint/%s\">%s</a></td>"
                        "<td data-label=\"Description\">%s</td><td data-label=\"Event types\">",
                        html_ui_str(e, "id"), html_ui_str(e, "url"), html_ui_str(e, "description"));
            const json_t *ft = json_object_get(e, "filterTypes");
            if (json_array_size(ft) == 0)
                portal_raw(q, "<span class=\"muted\">all</span>");
            size_t k;
            const json_t *t;
            json_array_foreach(ft, k, t) portal_html(q, "<code>%s</code> ", json_string_value(t));
            portal_raw(q, "</td><td data-label=\"State\">");
            if (json_is_true(json_object_get(e, "disabled")))
                badge(q, "off", "Disabled");
            else
                badge(q, "ok", "Enabled");
            portal_raw(q, "</td><td data-label=\"Circuit\">");
            circuit_badge(q, html_ui_str(e, "id"));
            portal_raw(q, "</td></tr>");
        }
        html_ui_table_end(q->body);
    }
    json_decref(list);
    portal_raw(q, "</section><section class=\"card\"><h2>Add an endpoint</h2>"
                  "<form method=\"post\" action=\"/portal/endpoint\" class=\"stack\" id=\"add-endpoint\">");
    portal_csrf_field(q);
    portal_raw(q, "<label>URL <input type=\"url\" name=\"url\" required placeholder=\"https://example.com/webhooks\">"
                  "</label><label>Description <input type=\"text\" name=\"description\" maxlength=\"500\"></label>");
    event_type_boxes(conn, q, NULL);
    signature_headers_select(q, NULL);
    portal_raw(q, "<button class=\"primary\">Add endpoint</button></form></section>");
    portal_page_end(q);
}

static json_t *endpoint_body(const struct portal_req *q)
{
    json_t *b = json_object();
    const char *url = portal_form(q, "url"), *desc = portal_form(q, "description");
    if (url)
        json_object_set_new(b, "url", json_string(url));
    if (desc)
        json_object_set_new(b, "description", json_string(desc));
    json_object_set_new(b, "filterTypes", form_all(q, "event_type"));
    json_t *settings = settings_body(q);
    if (settings)
        json_object_set_new(b, "settings", settings);
    return b;
}

void portal_endpoint_create(PGconn *conn, struct portal_req *q)
{
    json_t *b = endpoint_body(q);
    change(conn, q, "v1.endpoint.create", NULL, NULL, b, "/portal/", "created");
    json_decref(b);
}

void portal_endpoint_update(PGconn *conn, struct portal_req *q)
{
    char back[256];
    snprintf(back, sizeof back, "/portal/endpoint/%s", q->segs[1]);
    json_t *b = endpoint_body(q);
    change(conn, q, "v1.endpoint.patch", q->segs[1], NULL, b, back, "updated");
    json_decref(b);
}

static void set_disabled(PGconn *conn, struct portal_req *q, bool disabled)
{
    char back[256];
    snprintf(back, sizeof back, "/portal/endpoint/%s", q->segs[1]);
    json_t *b = json_pack("{s:b}", "disabled", disabled);
    change(conn, q, "v1.endpoint.patch", q->segs[1], NULL, b, back, disabled ? "disabled" : "enabled");
    json_decref(b);
}

void portal_endpoint_enable(PGconn *conn, struct portal_req *q)
{
    set_disabled(conn, q, false);
}

void portal_endpoint_disable(PGconn *conn, struct portal_req *q)
{
    set_disabled(conn, q, true);
}

void portal_endpoint_delete(PGconn *conn, struct portal_req *q)
{
    change(conn, q, "v1.endpoint.delete", q->segs[1], NULL, NULL, "/portal/", "deleted");
}

void portal_endpoint_rotate(PGconn *conn, struct portal_req *q)
{
    char back[256];
    snprintf(back, sizeof back, "/portal/endpoint/%s", q->segs[1]);
    change(conn, q, "v1.endpoint.rotate-secret", q->segs[1], NULL, NULL, back, "rotated");
}

void portal_endpoint_headers(PGconn *conn, struct portal_req *q)
{
    char back[256];
    snprintf(back, sizeof back, "/portal/endpoint/%s", q->segs[1]);
    const char *name = portal_form(q, "name"), *value = portal_form(q, "value"), *del = portal_form(q, "delete");
    json_t *b = del ? json_pack("{s:{}, s:[s]}", "headers", "deleteHeaders", del)
                    : json_pack("{s:{s:s}}", "headers", name ? name : "", value ? value : "");
    change(conn, q, "v1.endpoint.patch-headers", q->segs[1], NULL, b, back, "headers");
    json_decref(b);
}

void portal_endpoint_send_example(PGconn *conn, struct portal_req *q)
{
    char back[256];
    snprintf(back, sizeof back, "/portal/endpoint/%s", q->segs[1]);
    const char *type = portal_form(q, "event_type");
    json_t *b = json_pack("{s:s}", "eventType", type ? type : "");
    change(conn, q, "v1.endpoint.send-example", q->segs[1], NULL, b, back, "sent");
    json_decref(b);
}

void portal_endpoint_recover(PGconn *conn, struct portal_req *q)
{
    char back[256], since[64];
    snprintf(back, sizeof back, "/portal/endpoint/%s", q->segs[1]);
    const char *s = portal_form(q, "since");
    /* <input type=datetime-local> gives YYYY-MM-DDTHH:MM (UTC here) */
    snprintf(since, sizeof since, "%s%s", s ? s : "", s && strlen(s) == 16 ? ":00Z" : "");
    json_t *b = json_pack("{s:s}", "since", since);
    change(conn, q, "v1.endpoint.recover", q->segs[1], NULL, b, back, "recovered");
    json_decref(b);
}

void portal_endpoint_secret(PGconn *conn, struct portal_req *q)
{
    json_t *s = get(conn, q, "v1.endpoint.get-secret", q->segs[1], NULL, NULL);
    if (!s)
        return;
    q->status = 200;
    q->content_type = "text/plain; charset=utf-8";
    evbuffer_add(q->body, html_ui_str(s, "key"), strlen(html_ui_str(s, "key")));
    json_decref(s);
}

/* An API timestamp (2026-12-03T12:39:44.063210Z) as 2026-12-03 12:39:44. */
static const char *short_ts(const char *ts, char out[20])
{
    snprintf(out, 20, "%s", ts);
    if (strlen(out) == 19 && out[10] == 'T')
        out[10] = ' ';
    return out;
}

static void attempts_table(struct portal_req *q, const json_t *list, bool with_msg, const char *empty)
{
    const json_t *data = json_object_get(list, "data");
    if (json_array_size(data) == 0) {
        html_ui_empty(q->body, NULL, empty);
        return;
    }
    const char *cols[] = {"Time (UTC)", with_msg ? "Message" : "Endpoint", "Result", "Status code", "Duration",
                          "Response"};
    html_ui_table_begin(q->body, NULL, "attempts", cols, 6);
    size_t i;
    const json_t *a;
    json_array_foreach(data, i, a)
    {
        char ts[20];
        portal_html(q, "<tr><td data-label=\"Time\">%s</td>", short_ts(html_ui_str(a, "timestamp"), ts));
        if (with_msg)
            portal_html(q, "<td data-label=\"Message\"><a href=\"/portal/message/%s\"><code>%s</code></a></td>",
                        html_ui_str(a, "msgId"), html_ui_str(a, "msgId"));
        else
            portal_html(q, "<td class=\"url\" data-label=\"Endpoint\">%s</td>", html_ui_str(a, "url"));
        portal_raw(q, "<td data-label=\"Result\">");
        bool ok = json_integer_value(json_object_get(a, "status")) == 0;
        badge(q, ok ? "ok" : "fail", ok ? "Succeeded" : "Failed");
        char snippet[241];
        snprintf(snippet, sizeof snippet, "%s", html_ui_str(a, "response"));
        portal_html(q,
                    "</td><td data-label=\"Status code\">%lld</td><td data-label=\"Duration\">%lld ms</td>"
                    "<td data-label=\"Response\"><code class=\"snippet\">%s</code></td></tr>",
                    (long long)json_integer_value(json_object_get(a, "responseStatusCode")),
                    (long long)json_integer_value(json_object_get(a, "responseDurationMs")), snippet);
    }
    html_ui_table_end(q->body);
}

/* The endpoint's circuit: its state from Redis (read before the job ran),
 * its times from the attempt history. */
static void circuit(PGconn *conn, struct portal_req *q, const char *id)
{
    const struct backoff_policy *p = config_retry_for_endpoint(q->cfg, id);
    char probe[BACKOFF_DURATION_BUFLEN], at[24], err[256], threshold[16];
    portal_raw(q, "<h3>Circuit</h3><dl class=\"stats\" id=\"circuit\"><div><dt>State</dt><dd>");
    struct portal_circuit_view v = circuit_badge(q, id);
    portal_raw(q, "</dd></div>");
    if (v.state == PORTAL_CIRCUIT_OFF || v.state == PORTAL_CIRCUIT_UNKNOWN) {
        portal_raw(q, "</dl>");
        portal_raw(q, v.state == PORTAL_CIRCUIT_OFF
                          ? "<p class=\"muted\">The circuit breaker is off for this endpoint: every due delivery is "
                            "sent, whatever its recent answers.</p>"
                          : "<p class=\"muted\">The circuit's state cannot be read right now: reload the page in a "
                            "moment.</p>");
        return;
    }
    snprintf(threshold, sizeof threshold, "%d", v.threshold);
    const char *params[] = {q->tenant, id, threshold};
    PGresult *res = query_prepared(conn, Q_PORTAL_ENDPOINT_CIRCUIT, params, err, sizeof err);
    const char *failing = "", *opened = "", *closed = "";
    if (res && PQntuples(res) == 1) {
        failing = PQgetvalue(res, 0, PORTAL_ENDPOINT_CIRCUIT_FAILING_SINCE);
        opened = PQgetvalue(res, 0, PORTAL_ENDPOINT_CIRCUIT_OPENED_AT);
        closed = PQgetvalue(res, 0, PORTAL_ENDPOINT_CIRCUIT_CLOSED_AT);
    }
    if (v.state == PORTAL_CIRCUIT_CLOSED) {
        portal_html(q, "<div><dt>Closed since</dt><dd id=\"circuit-since\">%s</dd></div>",
                    *closed ? closed : "no outage recorded");
    } else {
        portal_html(q, "<div><dt>Open since</dt><dd id=\"circuit-since\">%s</dd></div>",
                    *opened    ? opened
                    : *failing ? failing
                               : "-");
        portal_html(q, "<div><dt>Next probe</dt><dd id=\"circuit-probe\">%s</dd></div>",
                    v.next_probe_ms > clock_wall_ms() ? ms_utc(v.next_probe_ms, at) : "now");
    }
    portal_html(q, "<div><dt>Consecutive failures</dt><dd id=\"circuit-failures\">%lld of %d</dd></div></dl>",
                v.failures, v.threshold);
    PQclear(res);
    backoff_format_duration(p->circuit_probe_ms, probe, sizeof probe);
    portal_html(q,
                "<p class=\"muted\">After %d failures in a row (no answer, 5xx, 408, 429) the circuit opens: "
                "deliveries wait, unsent and without spending attempts, while one of them probes the endpoint "
                "every %s. The probe's success closes the circuit and the waiting deliveries are sent at once. "
                "Times are UTC, from the attempt history.</p>",
                v.threshold, probe);
}

static void health(PGconn *conn, struct portal_req *q, const char *id)
{
    char err[256];
    const char *p[] = {q->tenant, id};
    PGresult *res = query_prepared(conn, Q_PORTAL_ENDPOINT_HEALTH, p, err, sizeof err);
    portal_raw(q, "<section class=\"card\"><h2>Health</h2>");
    if (res && PQntuples(res) == 1) {
        long long n = atoll(PQgetvalue(res, 0, PORTAL_ENDPOINT_HEALTH_ATTEMPTS)),
                  ok = atoll(PQgetvalue(res, 0, PORTAL_ENDPOINT_HEALTH_SUCCEEDED));
        portal_raw(q, "<dl class=\"stats\">");
        if (n > 0)
            portal_html(q, "<div><dt>Success rate (24 h)</dt><dd id=\"success-rate\">%lld%%</dd></div>", ok * 100 / n);
        else
            portal_raw(q, "<div><dt>Success rate (24 h)</dt><dd id=\"success-rate\">no attempts</dd></div>");
        portal_html(q,
                    "<div><dt>Attempts (24 h)</dt><dd>%lld</dd></div><div><dt>Retrying now</dt><dd>%s</dd></div>"
                    "<div><dt>Failed for good</dt><dd>%s</dd></div></dl>",
                    n, PQgetvalue(res, 0, PORTAL_ENDPOINT_HEALTH_RETRYING),
                    PQgetvalue(res, 0, PORTAL_ENDPOINT_HEALTH_DEAD));
    }
    PQclear(res);
    circuit(conn, q, id);
    json_t *fails = get(conn, q, "v1.message-attempt.list-by-endpoint", id, NULL, "status=2&limit=5");
    if (fails) {
        portal_raw(q, "<h3>Last failures</h3>");
        attempts_table(q, fails, true, "No failed attempts.");
        json_decref(fails);
    }
    portal_raw(q, "</section>");
}

/* "Send an example": the catalogue's types this endpoint takes, those
 * without an example payload shown but not offered, and svix.ping. */
static void example_form(PGconn *conn, struct portal_req *q, const json_t *e, const char *base)
{
    json_t *types = get(conn, q, "v1.event-type.list", NULL, NULL, "limit=250");
    const json_t *mine = json_object_get(e, "filterTypes");
    portal_html(q,
                "<section class=\"card\"><h2>Send an example</h2><p class=\"muted\">Sends the event type's example "
                "payload from the catalogue to this endpoint only.</p><form method=\"post\" "
                "action=\"%s/send-example\" class=\"row\" id=\"send-example\">",
                base);
    portal_csrf_field(q);
    portal_raw(q, "<select name=\"event_type\" aria-label=\"Event type\">");
    size_t i, offered = 0;
    const json_t *t;
    json_array_foreach(json_object_get(types, "data"), i, t)
    {
        const char *name = html_ui_str(t, "name");
        if (!api_filter_types_match(mine, name))
            continue;
        bool has = json_array_size(json_object_get(json_object_get(json_object_get(t, "schemas"), "1"), "examples"));
        if (has)
            portal_html(q, "<option value=\"%s\">%s</option>", name, name);
        else
            portal_html(q, "<option value=\"%s\" disabled>%s (no example in the catalogue)</option>", name, name);
        offered += has;
    }
    if (api_filter_types_match(mine, "svix.ping")) {
        portal_raw(q, "<option value=\"svix.ping\">svix.ping</option>");
        offered++;
    }
    json_decref(types);
    portal_raw(q, "</select>");
    portal_raw(q, offered ? "<button class=\"secondary\">Send example</button></form></section>"
                          : "</form><p class=\"empty\">None of this endpoint's event types has an example payload in "
                            "the catalogue.</p></section>");
}

void portal_endpoint_page(PGconn *conn, struct portal_req *q)
{
    const char *id = q->segs[1];
    json_t *e = get(conn, q, "v1.endpoint.get", id, NULL, NULL);
    if (!e)
        return;
    json_t *headers = get(conn, q, "v1.endpoint.get-headers", id, NULL, NULL);
    json_t *attempts = headers ? get(conn, q, "v1.message-attempt.list-by-endpoint", id, NULL, "limit=20") : NULL;
    if (!attempts) {
        json_decref(e);
        json_decref(headers);
        return;
    }
    char base[160];
    snprintf(base, sizeof base, "/portal/endpoint/%s", html_ui_str(e, "id"));
    bool disabled = json_is_true(json_object_get(e, "disabled"));
    portal_page_begin(q, "Endpoint", "endpoints");
    portal_html(q, "<p><a href=\"/portal/\">← Endpoints</a></p><section class=\"card\"><h1 class=\"url\">%s</h1>",
                html_ui_str(e, "url"));
    if (*html_ui_str(e, "description"))
        portal_html(q, "<p class=\"description\">%s</p>", html_ui_str(e, "description"));
    portal_raw(q, "<p>");
    badge(q, disabled ? "off" : "ok", disabled ? "Disabled" : "Enabled");
    portal_html(q, " <code>%s</code></p><div class=\"actions\">", html_ui_str(e, "id"));
    char action[200];
    snprintf(action, sizeof action, "%s/%s", base, disabled ? "enable" : "disable");
    post_button(q, action, disabled ? "Enable" : "Disable", "secondary", NULL);
    snprintf(action, sizeof action, "%s/delete", base);
    post_button(q, action, "Delete", "danger", "Delete this endpoint? This cannot be undone.");
    portal_raw(q, "</div></section>");
    health(conn, q, html_ui_str(e, "id"));

    portal_html(q,
                "<section class=\"card\"><h2>Signing secret</h2><p class=\"muted\">Verify each webhook's "
                "signature with this secret.</p><p><button type=\"button\" class=\"secondary\" "
                "data-reveal=\"%s/secret\" data-target=\"secret\">Reveal secret</button> "
                "<code id=\"secret\" class=\"secret\" hidden></code></p>",
                base);
    snprintf(action, sizeof action, "%s/rotate", base);
    post_button(q, action, "Rotate secret", "secondary", "Rotate the signing secret?");
    portal_raw(q, "</section>");

    portal_html(q, "<section class=\"card\"><h2>Edit</h2><form method=\"post\" action=\"%s\" class=\"stack\">", base);
    portal_csrf_field(q);
    portal_html(q,
                "<label>URL <input type=\"url\" name=\"url\" required value=\"%s\"></label>"
                "<label>Description <input type=\"text\" name=\"description\" maxlength=\"500\" value=\"%s\"></label>",
                html_ui_str(e, "url"), html_ui_str(e, "description"));
    event_type_boxes(conn, q, json_object_get(e, "filterTypes"));
    signature_headers_select(q, json_object_get(e, "settings"));
    portal_raw(q, "<button class=\"primary\">Save</button></form></section>");

    portal_raw(q, "<section class=\"card\"><h2>Custom headers</h2>");
    const json_t *h = json_object_get(headers, "headers");
    if (json_object_size(h) == 0 && json_array_size(json_object_get(headers, "sensitive")) == 0)
        html_ui_empty(q->body, NULL, "No custom headers.");
    snprintf(action, sizeof action, "%s/headers", base);
    const char *k;
    const json_t *v;
    portal_raw(q, "<ul class=\"headers\">");
    json_object_foreach((json_t *)h, k, v)
    {
        portal_html(q, "<li><code>%s: %s</code> <form method=\"post\" action=\"%s\" class=\"inline\">", k,
                    json_string_value(v), action);
        portal_csrf_field(q);
        portal_html(q,
                    "<input type=\"hidden\" name=\"delete\" value=\"%s\"><button class=\"link\">Remove</button>"
                    "</form></li>",
                    k);
    }
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(headers, "sensitive"), i, s)
        portal_html(q, "<li><code>%s: ••••••</code></li>", json_string_value(s));
    portal_html(q, "</ul><form method=\"post\" action=\"%s\" class=\"row\">", action);
    portal_csrf_field(q);
    portal_raw(q, "<input type=\"text\" name=\"name\" placeholder=\"X-Header-Name\" required "
                  "aria-label=\"Header name\"><input type=\"text\" name=\"value\" placeholder=\"value\" "
                  "aria-label=\"Header value\"><button class=\"secondary\">Set header</button></form></section>");

    example_form(conn, q, e, base);

    portal_html(q,
                "<section class=\"card\"><h2>Recover failed messages</h2><p class=\"muted\">Send again every "
                "message that failed for good since a time (UTC).</p><form method=\"post\" action=\"%s/recover\" "
                "class=\"row\">",
                base);
    portal_csrf_field(q);
    portal_raw(q, "<input type=\"datetime-local\" name=\"since\" required aria-label=\"Since\">"
                  "<button class=\"secondary\">Recover</button></form></section>");

    portal_raw(q, "<section class=\"card\"><h2>Recent attempts</h2>");
    attempts_table(q, attempts, true, "No attempts yet: send an example to see one.");
    portal_raw(q, "</section>");
    portal_page_end(q);
    json_decref(e);
    json_decref(headers);
    json_decref(attempts);
}

/* ---- messages ------------------------------------------------------------------ */

static const char *opt(const struct portal_req *q, const char *name)
{
    const char *v = portal_query(q, name);
    return v && *v ? v : NULL;
}

static void message_filters(PGconn *conn, struct portal_req *q)
{
    static const char *const states[] = {"delivered", "failed", "pending", "none"};
    portal_raw(q, "<form method=\"get\" action=\"/portal/messages\" class=\"filters\" id=\"filters\">"
                  "<label>Event type <select name=\"event_type\"><option value=\"\">all</option>");
    json_t *types = get(conn, q, "v1.event-type.list", NULL, NULL, "limit=250");
    size_t i;
    const json_t *t;
    const char *cur = opt(q, "event_type");
    json_array_foreach(json_object_get(types, "data"), i, t)
        portal_html(q, "<option%s>%s</option>", cur && strcmp(cur, html_ui_str(t, "name")) == 0 ? " selected" : "",
                    html_ui_str(t, "name"));
    json_decref(types);
    portal_raw(q, "</select></label><label>Status <select name=\"status\"><option value=\"\">all</option>");
    cur = opt(q, "status");
    for (size_t k = 0; k < sizeof states / sizeof states[0]; k++)
        portal_html(q, "<option%s>%s</option>", cur && strcmp(cur, states[k]) == 0 ? " selected" : "", states[k]);
    portal_html(q,
                "</select></label><label>Since (UTC) <input type=\"datetime-local\" name=\"since\" value=\"%s\">"
                "</label><label>Until (UTC) <input type=\"datetime-local\" name=\"until\" value=\"%s\"></label>"
                "<button class=\"secondary\">Filter</button></form>",
                opt(q, "since") ? opt(q, "since") : "", opt(q, "until") ? opt(q, "until") : "");
}

/* /portal/messages with the current filters (URL-encoded) and, when
 * cursor is set, before=cursor: a page of the log, into out. */
static void messages_url(const struct portal_req *q, const char *cursor, char *out, size_t outlen)
{
    static const char *const keys[] = {"event_type", "status", "since", "until"};
    size_t used = (size_t)snprintf(out, outlen, "/portal/messages");
    char sep = '?';
    for (size_t k = 0; k < 5 && used < outlen; k++) {
        const char *v = k < 4 ? opt(q, keys[k]) : cursor;
        if (!v)
            continue;
        char *enc = evhttp_uriencode(v, -1, 0);
        used += (size_t)snprintf(out + used, outlen - used, "%c%s=%s", sep, k < 4 ? keys[k] : "before",
                                 enc ? enc : "");
        free(enc);
        sep = '&';
    }
}

void portal_messages(PGconn *conn, struct portal_req *q)
{
    char rows[16], err[256], before_at[64] = "", url[1024], cursor[128];
    snprintf(rows, sizeof rows, "%d", LIST_ROWS + 1);
    const char *st = opt(q, "status"), *before = opt(q, "before"), *cut = before ? strchr(before, '_') : NULL;
    if (st && strcmp(st, "delivered") != 0 && strcmp(st, "failed") != 0 && strcmp(st, "pending") != 0 &&
        strcmp(st, "none") != 0) {
        portal_message_page(q, 400, "Unknown status", "Choose delivered, failed, pending or none.");
        return;
    }
    if (before && (!cut || (size_t)(cut - before) >= sizeof before_at)) {
        portal_message_page(q, 400, "This page does not exist", "Go back to the newest messages.");
        return;
    }
    if (cut)
        snprintf(before_at, sizeof before_at, "%.*s", (int)(cut - before), before);
    const char *p[] =
        {q->tenant,           opt(q, "event_type"), st, opt(q, "since"), opt(q, "until"), rows, cut ? before_at : NULL,
         cut ? cut + 1 : NULL};
    PGresult *res = query_prepared(conn, Q_PORTAL_MESSAGE_LIST, p, err, sizeof err);
    if (!res) {
        portal_message_page(q, 400, "These filters cannot be used", "Check the times: use the date pickers.");
        return;
    }
    int n = PQntuples(res) > LIST_ROWS ? LIST_ROWS : PQntuples(res);
    portal_page_begin(q, "Messages", "messages");
    portal_raw(q, "<section class=\"card\"><h1>Messages</h1>");
    message_filters(conn, q);
    if (n == 0) {
        html_ui_empty(q->body, NULL,
                      before ? "No older messages match."
                             : "No messages match. Messages appear here as soon as events are sent to you.");
    } else {
        static const char *const cols[] = {"Time (UTC)", "Event type", "Status", "Message"};
        html_ui_table_begin(q->body, "messages", NULL, cols, 4);
        for (int i = 0; i < n; i++) {
            const char *state = PQgetvalue(res, i, PORTAL_MESSAGE_LIST_STATE);
            portal_html(q,
                        "<tr><td data-label=\"Time\">%s</td><td data-label=\"Event type\"><code>%s</code></td>"
                        "<td data-label=\"Status\">",
                        PQgetvalue(res, i, PORTAL_MESSAGE_LIST_CREATED_AT),
                        PQgetvalue(res, i, PORTAL_MESSAGE_LIST_EVENT_TYPE));
            badge(q, strcmp(state, "delivered") == 0 ? "ok" : strcmp(state, "failed") == 0 ? "fail" : "off", state);
            portal_html(q,
                        "</td><td data-label=\"Message\"><a href=\"/portal/message/%s\"><code>%s</code></a></td></tr>",
                        PQgetvalue(res, i, PORTAL_MESSAGE_LIST_ID), PQgetvalue(res, i, PORTAL_MESSAGE_LIST_ID));
        }
        html_ui_table_end(q->body);
    }
    portal_raw(q, "<nav class=\"pages\" aria-label=\"Pages\">");
    if (before) {
        messages_url(q, NULL, url, sizeof url);
        portal_html(q, "<a href=\"%s\" id=\"newest\">← Newest</a>", url);
    }
    if (PQntuples(res) > LIST_ROWS) {
        snprintf(cursor, sizeof cursor, "%s_%s", PQgetvalue(res, n - 1, PORTAL_MESSAGE_LIST_CURSOR_AT),
                 PQgetvalue(res, n - 1, PORTAL_MESSAGE_LIST_RAW_ID));
        messages_url(q, cursor, url, sizeof url);
        portal_html(q, "<a href=\"%s\" id=\"older\">Older messages →</a>", url);
    }
    portal_raw(q, "</nav>");
    PQclear(res);
    portal_raw(q, "</section>");
    portal_page_end(q);
}

/* The message's stored payload (its first chars characters; NULL: all)
 * and its length, in the session's tenant; NULL when there is none. */
static PGresult *stored_payload(PGconn *conn, struct portal_req *q, const char *id, const char *chars)
{
    char err[256];
    const char *p[] = {q->tenant, id, chars};
    PGresult *res = query_prepared(conn, Q_PORTAL_MESSAGE_PAYLOAD, p, err, sizeof err);
    if (res && PQntuples(res) == 1)
        return res;
    PQclear(res);
    return NULL;
}

void portal_message_view(PGconn *conn, struct portal_req *q)
{
    const char *id = q->segs[1];
    json_t *m = get(conn, q, "v1.message.get", id, NULL, "with_content=false"); /* the payload: below */
    if (!m)
        return;
    json_t *attempts = get(conn, q, "v1.message-attempt.list-by-msg", id, NULL, "limit=100");
    if (!attempts) {
        json_decref(m);
        return;
    }
    static const char *const delivery_cols[] = {"Endpoint", "State", "Attempts", ""};
    char err[256], action[200], ts[20];
    const char *p[] = {q->tenant, html_ui_str(m, "id")};
    PGresult *res = query_prepared(conn, Q_PORTAL_MESSAGE_DELIVERIES, p, err, sizeof err);
    portal_page_begin(q, "Message", "messages");
    portal_html(q,
                "<p><a href=\"/portal/messages\">← Messages</a></p><section class=\"card\"><h1>Message "
                "<code>%s</code></h1><dl class=\"stats\"><div><dt>Event type</dt><dd><code>%s</code></dd></div>"
                "<div><dt>Created</dt><dd>%s</dd></div></dl><h2>Payload</h2>",
                html_ui_str(m, "id"), html_ui_str(m, "eventType"), short_ts(html_ui_str(m, "timestamp"), ts));
    char shown[16];
    snprintf(shown, sizeof shown, "%d", HTML_UI_PAYLOAD_SHOWN);
    PGresult *text = stored_payload(conn, q, html_ui_str(m, "id"), shown);
    snprintf(action, sizeof action, "/portal/message/%s/payload", html_ui_str(m, "id"));
    html_ui_payload(q->body, "payload", text ? PQgetvalue(text, 0, PORTAL_MESSAGE_PAYLOAD_PAYLOAD) : NULL,
                    text ? (size_t)PQgetlength(text, 0, PORTAL_MESSAGE_PAYLOAD_PAYLOAD) : 0,
                    text ? strtoull(PQgetvalue(text, 0, PORTAL_MESSAGE_PAYLOAD_BYTES), NULL, 10) : 0, action);
    PQclear(text);
    portal_raw(q, "</section>");
    portal_raw(q, "<section class=\"card\"><h2>Deliveries</h2>");
    if (!res || PQntuples(res) == 0)
        html_ui_empty(q->body, NULL, "No endpoint of yours subscribed to this event.");
    else
        html_ui_table_begin(q->body, "deliveries", NULL, delivery_cols, 4);
    for (int i = 0; res && i < PQntuples(res); i++) {
        const char *st = PQgetvalue(res, i, PORTAL_MESSAGE_DELIVERIES_STATUS);
        portal_html(q, "<tr><td class=\"url\" data-label=\"Endpoint\">%s</td><td data-label=\"State\">",
                    PQgetvalue(res, i, PORTAL_MESSAGE_DELIVERIES_URL));
        badge(q,
              strcmp(st, "SUCCEEDED") == 0                             ? "ok"
              : strcmp(st, "DEAD") == 0 || strcmp(st, "RETRYING") == 0 ? "fail"
                                                                       : "off",
              st);
        portal_html(q, "</td><td data-label=\"Attempts\">%s</td><td>",
                    PQgetvalue(res, i, PORTAL_MESSAGE_DELIVERIES_ATTEMPTS));
        snprintf(action, sizeof action, "/portal/message/%s/resend", html_ui_str(m, "id"));
        portal_html(q, "<form method=\"post\" action=\"%s\" class=\"inline\">", action);
        portal_csrf_field(q);
        portal_html(q,
                    "<input type=\"hidden\" name=\"endpoint\" value=\"%s\"><button class=\"secondary\">Resend"
                    "</button></form></td></tr>",
                    PQgetvalue(res, i, PORTAL_MESSAGE_DELIVERIES_ENDPOINT_ID));
    }
    if (res && PQntuples(res) > 0)
        html_ui_table_end(q->body);
    PQclear(res);
    portal_raw(q, "</section><section class=\"card\"><h2>Attempts</h2>");
    attempts_table(q, attempts, false, "No attempts yet.");
    portal_raw(q, "</section>");
    portal_page_end(q);
    json_decref(m);
    json_decref(attempts);
}

/* GET /portal/message/{id}/payload: the whole payload, as stored, as a
 * file: the message page shows a bounded part of it (html_ui_payload). */
void portal_message_payload(PGconn *conn, struct portal_req *q)
{
    char name[64];
    PGresult *res = stored_payload(conn, q, q->segs[1], NULL);
    if (!res) {
        portal_message_page(q, 404, "Not found", "There is no such item in your account.");
        return;
    }
    size_t n = 0;
    for (const char *c = q->segs[1]; *c && n < sizeof name - 1; c++)
        if (isalnum((unsigned char)*c) || *c == '_' || *c == '-')
            name[n++] = *c;
    name[n] = '\0';
    q->status = 200;
    q->content_type = "application/json";
    snprintf(q->disposition, sizeof q->disposition, "attachment; filename=\"%s.json\"", name);
    evbuffer_add(q->body, PQgetvalue(res, 0, PORTAL_MESSAGE_PAYLOAD_PAYLOAD),
                 (size_t)PQgetlength(res, 0, PORTAL_MESSAGE_PAYLOAD_PAYLOAD));
    PQclear(res);
}

void portal_message_resend(PGconn *conn, struct portal_req *q)
{
    char back[256];
    snprintf(back, sizeof back, "/portal/message/%s", q->segs[1]);
    const char *ep = portal_form(q, "endpoint");
    change(conn, q, "v1.message-attempt.resend", q->segs[1], ep ? ep : "", NULL, back, "resent");
}
