"""hookd's benchmark suite (`make bench`): each figure next to its ceiling.

Every scenario measures hookd and, in the same run on the same machine, the
thing that bounds it (pgbench doing the same SQL by hand, the receiver's own
capacity, the Redis script alone), so the figures read as ratios rather than
as absolute numbers of one noisy machine:

  1. Ingest      signed POSTs -> committed inbox rows   vs pgbench single-row INSERTs
  2. Processing  PENDING rows -> applied transitions    vs pgbench per-event transaction
                 (1, 2 and 4 workers), peak RSS, scheduler lateness
  3. Delivery    outbox rows -> 2xx at a local sink     vs the sink's own ceiling
                 (bulk and paced at 1,000 events/s)
  4. Claim       the Redis claim script alone (information)
  5. Retry       deliveries failing 3x then succeeding, attempts/s     (BENCH_RETRY_BASELINE=binary: vs another
                 hookd, run alternately; BENCH_PGSS=1: statements per attempt from pg_stat_statements;
                 BENCH_EXPLAIN_MS=N as well: plans slower than N ms in build/bench/plans-retry*.log)
  6. Peers       processing, retries, lateness at 1,000 due/s          vs BullMQ 6.7.6, pg-boss 12.38.0,
                                                                       Graphile Worker 0.18.0
  7. Storm       a healthy endpoint's p99 next to a failing backlog; the recovery drain vs first attempts
  8. API         Svix message creations (token, idempotency-key, eventId) vs signed inbox ingest, same worker
  9. Inbound     inbox events whose apply fails on an SQL error 3x then goes through, evaluations/s
     retry       vs the same events' first attempts (BENCH_INBOUND_BASELINE=binary: vs another hookd, alternately)
 10. Tenants     fan-out to 10,000 tenants x 3 endpoints, and with a payload  vs one global endpoint, same run
                 filter on every endpoint, deliveries/s                         (BENCH_TENANTS_BASELINE=binary: another
                                                                                hookd too, alternately)

Postgres runs with fsync ON (unlike the tests). Everything it starts it
stops, also on failure or Ctrl-C. Writes the run's report to
build/bench/report.md (and build/bench/bench.png when gnuplot is installed;
BENCH_REPORT_DIR moves both) and prints the table. docs/benchmarks.md is
written by hand from such reports.

Environment: HOOKD_BIN (the hookd binary), HOOKD_TOOLS (directory with
loadgen and sink), BENCH_SCALE (default 1.0; e.g. 0.1 for a quick smoke run
of the script itself, whose figures mean nothing), BENCH_KEEP=1 keeps the
work directory with the worker logs.

Modules: common (sizes, bookkeeping, Bench), one per scenario (ingest,
processing, delivery, claim, retry, peers, storm, api, inbound, tenants; BENCH_ONLY names them;
`make bench-peers` runs the last three), report (the table,
the report file, the chart), main (the run in order).
"""
