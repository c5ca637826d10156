import sys

from runner.cli.parser import main

sys.exit(main())
