/* What every fuzz target shares: CHECK, a property of the code under test
 * that must hold for any input. A failed one is named on stderr and aborts,
 * so that libFuzzer records the input that broke it. */
#ifndef HOOKD_FUZZ_CHECK_H
#define HOOKD_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                                   \
    do {                                                                                                              \
        if (!(cond)) {                                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                                  \
            abort();                                                                                                  \
        }                                                                                                             \
    } while (0)

#endif
