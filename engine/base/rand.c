/* Random values; see rand.h. */
#include "rand.h"

#include <openssl/rand.h>

#include "clock.h"

uint64_t rand_u64(void)
{
    uint64_t r = 0;
    if (RAND_bytes((unsigned char *)&r, sizeof r) != 1)
        r = (uint64_t)clock_mono_us();
    return r;
}
