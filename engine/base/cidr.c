/* Address ranges and the client address behind trusted proxies; see cidr.h.
 * Addresses are parsed with inet_pton on a NUL-terminated copy of at most
 * INET6_ADDRSTRLEN characters, so a long or odd entry is refused, never
 * truncated into another address. */
#include "cidr.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "xmalloc.h"

static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static int addr_bits(const struct cidr_addr *a)
{
    return a->family == AF_INET ? 32 : 128;
}

int cidr_addr_parse(const char *text, size_t len, struct cidr_addr *out)
{
    char buf[INET6_ADDRSTRLEN + 1];

    if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
        text++;
        len -= 2;
    }
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    memset(out, 0, sizeof *out);
    if (inet_pton(AF_INET, buf, out->b) == 1) {
        out->family = AF_INET;
        return 0;
    }
    if (strchr(buf, '%') == NULL && inet_pton(AF_INET6, buf, out->b) == 1) {
        out->family = AF_INET6;
        if (memcmp(out->b, v4_mapped, sizeof v4_mapped) == 0) {
            memmove(out->b, out->b + 12, 4);
            memset(out->b + 4, 0, 12);
            out->family = AF_INET;
        }
        return 0;
    }
    return -1;
}

int cidr_addr_from_sockaddr(const struct sockaddr *sa, struct cidr_addr *out)
{
    memset(out, 0, sizeof *out);
    if (sa && sa->sa_family == AF_INET) {
        out->family = AF_INET;
        memcpy(out->b, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return 0;
    }
    if (sa && sa->sa_family == AF_INET6) {
        const unsigned char *b = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
        if (memcmp(b, v4_mapped, sizeof v4_mapped) == 0) {
            out->family = AF_INET;
            memcpy(out->b, b + 12, 4);
        } else {
            out->family = AF_INET6;
            memcpy(out->b, b, 16);
        }
        return 0;
    }
    return -1;
}

static void mask_host_bits(struct cidr_addr *a, int prefix, int *had_host_bits)
{
    int bits = addr_bits(a);

    *had_host_bits = 0;
    for (int i = prefix; i < bits; i++) {
        unsigned char bit = (unsigned char)(0x80 >> (i % 8));
        if (a->b[i / 8] & bit) {
            *had_host_bits = 1;
            a->b[i / 8] &= (unsigned char)~bit;
        }
    }
}

static int parse_range(const char *tok, size_t len, struct cidr_range *out, char *err, size_t errlen)
{
    const char *slash = memchr(tok, '/', len);
    size_t alen = slash ? (size_t)(slash - tok) : len;
    int host_bits;

    if (cidr_addr_parse(tok, alen, &out->net) != 0) {
        return err_set(err, errlen, "'%.*s' is not an IPv4 or IPv6 address", (int)(alen > 64 ? 64 : alen), tok);
    }
    out->prefix = addr_bits(&out->net);
    if (slash) {
        const char *p = slash + 1;
        size_t plen = len - alen - 1;
        int v = 0;

        if (plen == 0 || plen > 3)
            goto bad_prefix;
        for (size_t i = 0; i < plen; i++) {
            if (!isdigit((unsigned char)p[i]))
                goto bad_prefix;
            v = v * 10 + (p[i] - '0');
        }
        /* "::ffff:10.0.0.0/104" names IPv4 10/8: the mapped prefix counts 96 bits more. */
        if (out->net.family == AF_INET && memchr(tok, ':', alen) != NULL)
            v -= 96;
        if (v < 0 || v > addr_bits(&out->net))
            goto bad_prefix;
        out->prefix = v;
    }
    mask_host_bits(&out->net, out->prefix, &host_bits);
    if (host_bits) {
        return err_set(err, errlen, "'%.*s' has bits set after the /%d prefix (did you mean the network address?)",
                       (int)(len > 64 ? 64 : len), tok, out->prefix);
    }
    return 0;
bad_prefix:
    return err_set(err, errlen, "'%.*s' has a bad prefix length", (int)(len > 64 ? 64 : len), tok);
}

static int is_sep(char c)
{
    return c == ',' || c == ' ' || c == '\t';
}

int cidr_list_parse(const char *text, struct cidr_list *out, char *err, size_t errlen)
{
    struct cidr_list l = {NULL, 0};
    size_t cap = 0;

    for (const char *p = text ? text : ""; *p;) {
        size_t n = 0;

        while (*p && is_sep(*p))
            p++;
        while (p[n] && !is_sep(p[n]))
            n++;
        if (n == 0)
            break;
        if (l.n == cap) {
            cap = cap ? cap * 2 : 4;
            l.v = xrealloc(l.v, cap * sizeof *l.v);
        }
        if (parse_range(p, n, &l.v[l.n], err, errlen) != 0) {
            cidr_list_free(&l);
            return -1;
        }
        l.n++;
        p += n;
    }
    if (l.n == 0) {
        return err_set(err, errlen, "the list of addresses is empty");
    }
    *out = l;
    return 0;
}

void cidr_list_free(struct cidr_list *l)
{
    if (!l)
        return;
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static bool range_contains(const struct cidr_range *r, const struct cidr_addr *a)
{
    int full = r->prefix / 8, rest = r->prefix % 8;

    if (r->net.family != a->family)
        return false;
    if (memcmp(r->net.b, a->b, (size_t)full) != 0)
        return false;
    if (rest == 0)
        return true;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (a->b[full] & mask) == r->net.b[full];
}

bool cidr_list_contains(const struct cidr_list *l, const struct cidr_addr *a)
{
    if (!l || !a)
        return false;
    for (size_t i = 0; i < l->n; i++)
        if (range_contains(&l->v[i], a))
            return true;
    return false;
}

/* One X-Forwarded-For entry: an address, optionally "[v6]:port" or "v4:port"
 * as some load balancers write it. */
static int parse_forwarded_entry(const char *p, size_t n, struct cidr_addr *out)
{
    if (cidr_addr_parse(p, n, out) == 0)
        return 0;
    if (n > 0 && p[0] == '[') {
        const char *close = memchr(p, ']', n);
        if (close && close + 1 < p + n && close[1] == ':')
            return cidr_addr_parse(p, (size_t)(close - p) + 1, out);
        return -1;
    }
    const char *colon = memchr(p, ':', n);
    if (colon && memchr(colon + 1, ':', n - (size_t)(colon - p) - 1) == NULL)
        return cidr_addr_parse(p, (size_t)(colon - p), out) == 0 && out->family == AF_INET ? 0 : -1;
    return -1;
}

int cidr_client_addr(const struct cidr_addr *peer, const char *xff, const struct cidr_list *trusted,
                     struct cidr_addr *out)
{
    *out = *peer;
    if (!trusted || trusted->n == 0 || !xff || !cidr_list_contains(trusted, peer))
        return 0;
    /* Walk right to left: each hop appended the address it saw. */
    size_t end = strlen(xff);
    while (end > 0) {
        size_t start = end;
        while (start > 0 && xff[start - 1] != ',')
            start--;
        size_t a = start, b = end;
        while (a < b && isspace((unsigned char)xff[a]))
            a++;
        while (b > a && isspace((unsigned char)xff[b - 1]))
            b--;
        end = start > 0 ? start - 1 : 0;
        if (a == b)
            continue; /* an empty element ("a,,b") */
        if (parse_forwarded_entry(xff + a, b - a, out) != 0)
            return -1;
        if (!cidr_list_contains(trusted, out))
            return 0;
    }
    /* Every hop was a trusted proxy: the left-most one is the client. */
    return 0;
}

void cidr_addr_format(const struct cidr_addr *a, char *buf, size_t buflen)
{
    if (buflen == 0)
        return;
    if (!inet_ntop(a->family, a->b, buf, (socklen_t)buflen))
        snprintf(buf, buflen, "?");
}
