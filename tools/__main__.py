"""Entry point of `python -m tools`."""

import sys

from tools.cli import main

sys.exit(main())
