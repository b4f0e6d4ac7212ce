import sys

from aspan.cli import main

sys.exit(main())
