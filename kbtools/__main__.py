"""``python -m kbtools`` runs the ``kb`` command line."""

import sys

from kbtools.cli import main

if __name__ == "__main__":
    sys.exit(main())
