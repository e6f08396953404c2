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

Postgres runs with fsync ON (unlike the tests). Everything it starts it
stops, also on failure or Ctrl-C. Writes docs/benchmarks.md (and
docs/bench.png when gnuplot is installed) and prints the table.

Environment: HOOKD_BIN (the hookd binary), HOOKD_TOOLS (directory with
loadgen and sink), BENCH_SCALE (default 1.0; e.g. 0.1 for a quick smoke run
of the script itself, whose figures mean nothing), BENCH_KEEP=1 keeps the
work directory with the worker logs.

Modules: common (sizes, bookkeeping, Bench), one per scenario (ingest,
processing, delivery, claim; BENCH_ONLY names them), report (the table,
docs/benchmarks.md, the chart), main (the run in order).
"""
