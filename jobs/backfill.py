#!/usr/bin/env python
"""Scheduled job: kb backfill over one or more banks. See `python jobs/backfill.py --help` and jobs/README.md."""

import sys

from kbtools.ops.fleet import main

if __name__ == "__main__":
    sys.exit(main("backfill"))
