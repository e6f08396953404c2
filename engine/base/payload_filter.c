/*
 * payload_filter.c — see payload_filter.h. A recursive walk over the filter
 * document, bounded by PAYLOAD_FILTER_MAX_DEPTH; paths are read with
 * jsonpath_get.
 */
#include "payload_filter.h"

#include <stdio.h>
#include <string.h>

#include "errbuf.h"
#include "jsonpath.h"

static bool is_number(const json_t *v)
{
    return json_is_integer(v) || json_is_real(v);
}

static bool equal(const json_t *a, const json_t *b)
{
    if (is_number(a) && is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal((json_t *)a, (json_t *)b);
}

static int check(const json_t *f, int depth, char *err, size_t errlen);

static int check_condition(const char *path, const json_t *cond, char *err, size_t errlen)
{
    if (!jsonpath_valid(path))
        return err_set(err, errlen, "'%s' is not a dotted path", path);
    if (!json_is_object(cond) || json_object_size(cond) == 0)
        return 0; /* a literal: $eq */
    const char *op;
    json_t *v;
    json_object_foreach((json_t *)cond, op, v)
    {
        if (strcmp(op, "$eq") == 0 || strcmp(op, "$neq") == 0)
            continue;
        if (strcmp(op, "$in") == 0) {
            if (!json_is_array(v))
                return err_set(err, errlen, "%s: $in takes an array", path);
        } else if (strcmp(op, "$gt") == 0 || strcmp(op, "$lt") == 0) {
            if (!is_number(v))
                return err_set(err, errlen, "%s: %s takes a number", path, op);
        } else if (strcmp(op, "$exists") == 0) {
            if (!json_is_boolean(v))
                return err_set(err, errlen, "%s: $exists takes true or false", path);
        } else if (op[0] == '$') {
            return err_set(err, errlen, "%s: unknown operator %s", path, op);
        } else {
            return err_set(err, errlen, "%s: a condition mixes operators and fields ('%s')", path, op);
        }
    }
    return 0;
}

static int check(const json_t *f, int depth, char *err, size_t errlen)
{
    if (depth > PAYLOAD_FILTER_MAX_DEPTH)
        return err_set(err, errlen, "nested deeper than %d", PAYLOAD_FILTER_MAX_DEPTH);
    if (!json_is_object(f))
        return err_set(err, errlen, "a filter is a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)f, key, v)
    {
        if (strcmp(key, "$and") == 0 || strcmp(key, "$or") == 0) {
            if (!json_is_array(v) || json_array_size(v) == 0)
                return err_set(err, errlen, "%s takes a non-empty array of filters", key);
            size_t i;
            json_t *sub;
            json_array_foreach(v, i, sub)
            {
                if (check(sub, depth + 1, err, errlen) != 0)
                    return -1;
            }
        } else if (key[0] == '$') {
            return err_set(err, errlen, "unknown combinator %s (use $and or $or)", key);
        } else if (check_condition(key, v, err, errlen) != 0) {
            return -1;
        }
    }
    return 0;
}

int payload_filter_check(const json_t *filter, char *err, size_t errlen)
{
    return check(filter, 0, err, errlen);
}

static bool op_holds(const char *op, const json_t *arg, json_t *value)
{
    if (strcmp(op, "$eq") == 0)
        return value && equal(value, arg);
    if (strcmp(op, "$neq") == 0)
        return !value || !equal(value, arg);
    if (strcmp(op, "$exists") == 0)
        return (value != NULL) == json_is_true(arg);
    if (strcmp(op, "$gt") == 0 || strcmp(op, "$lt") == 0) {
        if (!value || !is_number(value) || !is_number(arg))
            return false;
        double a = json_number_value(value), b = json_number_value(arg);
        return op[2] == 't' && op[1] == 'g' ? a > b : a < b;
    }
    if (strcmp(op, "$in") == 0) {
        size_t i;
        json_t *x;
        if (!value || !json_is_array(arg))
            return false;
        json_array_foreach((json_t *)arg, i, x)
        {
            if (equal(value, x))
                return true;
        }
        return false;
    }
    return false;
}

static bool condition_holds(const json_t *cond, json_t *value)
{
    if (!json_is_object(cond) || json_object_size(cond) == 0)
        return value && equal(value, cond);
    const char *op;
    json_t *arg;
    json_object_foreach((json_t *)cond, op, arg)
    {
        if (!op_holds(op, arg, value))
            return false;
    }
    return true;
}

static bool match(const json_t *f, json_t *payload, int depth)
{
    if (depth > PAYLOAD_FILTER_MAX_DEPTH || !json_is_object(f))
        return false;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)f, key, v)
    {
        bool ok;
        if (strcmp(key, "$and") == 0 || strcmp(key, "$or") == 0) {
            bool any = key[1] == 'o';
            ok = !any;
            size_t i;
            json_t *sub;
            json_array_foreach(v, i, sub)
            {
                if (match(sub, payload, depth + 1) == any) {
                    ok = any;
                    break;
                }
            }
        } else {
            ok = condition_holds(v, payload ? jsonpath_get(payload, key) : NULL);
        }
        if (!ok)
            return false;
    }
    return true;
}

bool payload_filter_match(const json_t *filter, json_t *payload)
{
    return match(filter, payload, 0);
}
