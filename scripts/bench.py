#!/usr/bin/env python3
"""`make bench`: hookd's benchmark suite, each figure next to its ceiling.

The suite is the package hookdtest.bench (tests/hookdtest/bench/: one module
per scenario, and the report); its docstring lists the scenarios and the
environment (HOOKD_BIN, HOOKD_TOOLS, BENCH_SCALE, BENCH_ONLY, BENCH_KEEP).
tests/ must be on PYTHONPATH, as the Makefile sets it.
"""
import sys

from hookdtest.bench.main import main

if __name__ == "__main__":
    sys.exit(main())
