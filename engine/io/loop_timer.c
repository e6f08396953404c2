/* libevent timers armed in milliseconds; see loop_timer.h. */
#include "loop_timer.h"

#include <event2/event.h>

#include "clock.h"

void loop_timer_arm(struct event *ev, int64_t ms)
{
    struct timeval tv = clock_tv_from_ms(ms);
    event_add(ev, &tv);
}
