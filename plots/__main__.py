"""``python -m plots``."""
import sys

from plots.cli import main

sys.exit(main())
