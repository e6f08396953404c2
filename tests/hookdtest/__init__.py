"""hookdtest: the Python harness shared by the integration tests, the demo,
the benchmarks, the soak run and the chaos suite.

Each module does one job:

  paths     where the tree, scripts/services.sh and the hookd binary are
  util      free_port(), wait_for()
  signing   the partner signature schemes (Standard Webhooks, Stripe, GitHub)
  client    HTTP to a worker: http(), order_event(), post_standard()
  worker    generated configs, `hookd` commands, the Worker process
  services  throw-away PostgreSQL and Redis on free loopback ports, and Db
  chaos     the chaos driver (tests/chaos/chaos.py is its command line)
  bench     the benchmark suite, one module per scenario (scripts/bench.py)

Everything started through it is stopped at the end, also when a test fails.
The package is found through the `tests` directory on the Python path:
pytest.ini's `pythonpath = tests` for pytest, PYTHONPATH=tests in the
Makefile recipes for the scripts.
"""
