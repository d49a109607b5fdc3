import sys

from dpkit.cli import main

sys.exit(main())
