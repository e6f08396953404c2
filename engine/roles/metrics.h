/* GET /metrics: this worker's counters and gauges in the Prometheus text
 * exposition format (version 0.0.4). */
#ifndef HOOKD_METRICS_H
#define HOOKD_METRICS_H

struct evhttp_request;

/* arg is the struct worker. */
void metrics_handle(struct evhttp_request *req, void *arg);

#endif
