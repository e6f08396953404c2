/* The clock; see clock.h. */
#include "clock.h"

#include <stdatomic.h>
#include <time.h>

static _Atomic int64_t offset_ms;
static atomic_bool synced;

int64_t clock_local_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + atomic_load_explicit(&offset_ms, memory_order_relaxed);
}

int64_t clock_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t clock_mono_ms(void)
{
    return clock_mono_us() / 1000;
}

struct timeval clock_tv_from_ms(int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    return tv;
}

struct timeval clock_tv_from_us(int64_t us)
{
    struct timeval tv = {(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};
    return tv;
}

void clock_set_offset_ms(int64_t v)
{
    atomic_store_explicit(&offset_ms, v, memory_order_relaxed);
    atomic_store_explicit(&synced, true, memory_order_release);
}

bool clock_synced(void)
{
    return atomic_load_explicit(&synced, memory_order_acquire);
}

int64_t clock_offset_ms(void)
{
    return atomic_load_explicit(&offset_ms, memory_order_relaxed);
}

struct clock_sample clock_sample_make(int64_t local_send_us, int64_t rtt_us, int64_t server_us)
{
    if (rtt_us < 0)
        rtt_us = 0;
    return (struct clock_sample){server_us - (local_send_us + rtt_us / 2), rtt_us};
}

int64_t clock_sample_offset_ms(struct clock_sample s)
{
    int64_t low = s.offset_us - s.rtt_us / 2 - s.rtt_us % 2;
    return low >= 0 ? low / 1000 : -((-low + 999) / 1000);
}

void clock_samples_add(struct clock_samples *w, struct clock_sample s)
{
    w->s[w->n++ % CLOCK_SAMPLES] = s;
}

int clock_samples_best(const struct clock_samples *w, struct clock_sample *out)
{
    size_t n = w->n < CLOCK_SAMPLES ? w->n : CLOCK_SAMPLES;
    if (n == 0)
        return -1;
    /* oldest first, so the newest of equal round trips wins */
    size_t first = w->n < CLOCK_SAMPLES ? 0 : w->n % CLOCK_SAMPLES;
    const struct clock_sample *best = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct clock_sample *c = &w->s[(first + i) % CLOCK_SAMPLES];
        if (!best || c->rtt_us <= best->rtt_us)
            best = c;
    }
    *out = *best;
    return 0;
}
