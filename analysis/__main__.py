"""`python -m analysis capacity`: see analysis.capacity_cli."""

import sys

from analysis.capacity_cli import main

sys.exit(main())
