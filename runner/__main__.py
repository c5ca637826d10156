"""`python -m runner`: the command line, in runner.cli."""

import sys

from runner.cli.parser import main

sys.exit(main())
