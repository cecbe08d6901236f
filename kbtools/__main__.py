"""``python -m kbtools`` runs the ``kb`` command line."""

import sys

from kbtools.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
