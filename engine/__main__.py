"""Entry point of `python -m engine`."""

import sys

from engine.cli import main

sys.exit(main())
