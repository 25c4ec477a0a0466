"""``python -m unmask ...``: the command line without the installed ``unmask`` script."""

import sys

from unmask.cli import main

sys.exit(main())
