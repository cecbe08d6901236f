#!/usr/bin/env python
"""Scheduled job: kb decay over one or more banks. See `python jobs/decay.py --help` and jobs/README.md."""

import sys

from kbtools.ops.fleet import main

if __name__ == "__main__":
    sys.exit(main("decay"))
