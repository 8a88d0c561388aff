"""`make e2e`: the e2e suite (e2e/tests) against $KUBECONFIG, or against the local control plane with
py-scheduler started as a process when KUBECONFIG is not set."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from e2e.cluster.cluster import LocalCluster, create_nodes
from e2e.process import start_scheduler, stop_scheduler


def main() -> int:
    tests = str(Path(__file__).parent / "tests")
    if os.environ.get("KUBECONFIG"):
        return pytest.main(["-q", tests])
    with tempfile.TemporaryDirectory(prefix="py-scheduler-e2e-") as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster")
        cluster.up()
        try:
            create_nodes(str(cluster.kubeconfig), 6, zones=3)
            proc = start_scheduler(cluster.kubeconfig, Path(tmp) / "scheduler.log")
            os.environ["KUBECONFIG"] = str(cluster.kubeconfig)
            try:
                code = pytest.main(["-q", tests])
            finally:
                stop_scheduler(proc)
                if code != 0:
                    sys.stderr.write((Path(tmp) / "scheduler.log").read_text()[-5000:])
            return int(code)
        finally:
            cluster.down()


if __name__ == "__main__":
    sys.exit(main())
