"""Entry point for ``python -m e2e.cluster``."""

import sys

from e2e.cluster.cluster import main

sys.exit(main())
