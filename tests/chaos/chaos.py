#!/usr/bin/env python3
"""The chaos suite's command line (`make chaos`; README.md here says what it
does). The driver is hookdtest.chaos (tests/hookdtest/chaos.py), which
tests/integration/test_chaos.py runs in its short form; tests/ must be on
PYTHONPATH, as the Makefile sets it."""
import sys

from hookdtest.chaos import main

if __name__ == "__main__":
    sys.exit(main())
