import sys

from runner.cli import main

sys.exit(main())
