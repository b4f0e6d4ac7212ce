"""``python -m experiments ...``: the ``aspan`` command line without the installed script."""
import sys

from experiments.cli import main

sys.exit(main())
