"""The plugin's sources on the path, as ``pip install -e .`` would put them, so its tests run from a checkout
(``pytest examples/node-label-score/tests``) without installing it first."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
