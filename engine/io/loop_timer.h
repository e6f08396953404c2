/* The one way hookd arms a libevent timer: a delay in milliseconds, turned
 * into the struct timeval libevent takes by clock_tv_from_ms(). Works for a
 * one-shot evtimer and for an EV_PERSIST event alike (the delay is then its
 * period); arming a pending timer again moves it to the new delay. */
#ifndef HOOKD_LOOP_TIMER_H
#define HOOKD_LOOP_TIMER_H

#include <stdint.h>

struct event;

/* Runs ev's callback ms milliseconds from now (0: on the next loop turn). */
void loop_timer_arm(struct event *ev, int64_t ms);

#endif
