"""Entry point for ``python -m e2e.node``."""

import sys

from e2e.node.run import main

sys.exit(main())
