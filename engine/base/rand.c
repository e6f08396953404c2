/* Random values; see rand.h. */
#include "rand.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "clock.h"
#include "encoding.h"

uint64_t rand_u64(void)
{
    uint64_t r = 0;
    if (rand_bytes(&r, sizeof r) != 0)
        r = (uint64_t)clock_mono_us();
    return r;
}

int rand_bytes(void *out, size_t n)
{
    return n <= (size_t)INT32_MAX && RAND_bytes(out, (int)n) == 1 ? 0 : -1;
}

int rand_hex(char *out, size_t nbytes)
{
    unsigned char rnd[RAND_HEX_MAX];
    if (nbytes > sizeof rnd || rand_bytes(rnd, nbytes) != 0)
        return -1;
    int rc = enc_hex_encode(rnd, nbytes, out, ENC_HEX_LEN(nbytes) + 1);
    OPENSSL_cleanse(rnd, sizeof rnd);
    return rc;
}
