"""`make e2e`: the e2e suite (e2e/tests) against $KUBECONFIG, or against the local control plane with
py-scheduler started as a process when KUBECONFIG is not set.

On the local control plane the scheduler runs as its in-cluster identity: the manifests' ClusterRole
and Role are applied, the process gets a ServiceAccount-token kubeconfig (e2e/rbac.py) and the
manifests' KubeSchedulerConfiguration (leader election on its Lease). The run fails if the scheduler's
log shows a denied API call, even when every test passed: a missing permission must not go unnoticed.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from e2e.cluster.cluster import LocalCluster, create_nodes
from e2e.process import start_scheduler, stop_scheduler
from e2e.rbac import USERNAME, forbidden_lines, render_manifests, service_account_kubeconfig, write_scheduler_config


def main() -> int:
    tests = str(Path(__file__).parent / "tests")
    if os.environ.get("KUBECONFIG"):
        return pytest.main(["-q", tests])
    with tempfile.TemporaryDirectory(prefix="py-scheduler-e2e-") as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster")
        cluster.up()
        try:
            create_nodes(str(cluster.kubeconfig), 6, zones=3)
            docs = render_manifests()
            sa_kubeconfig = service_account_kubeconfig(cluster, Path(tmp) / "sa.kubeconfig", docs)
            config = write_scheduler_config(docs, Path(tmp) / "scheduler-config.yaml")
            log_path = Path(tmp) / "scheduler.log"
            print(f"[e2e] py-scheduler runs as {USERNAME} with the manifests' RBAC and config", file=sys.stderr)
            proc = start_scheduler(sa_kubeconfig, log_path, ["--config", str(config)])
            os.environ["KUBECONFIG"] = str(cluster.kubeconfig)
            try:
                code = int(pytest.main(["-q", tests]))
            finally:
                stop_scheduler(proc)
            log_text = log_path.read_text(errors="replace")
            denied = forbidden_lines(log_text)
            if denied:
                sys.stderr.write(
                    f"[e2e] FAILED: the scheduler was denied API access {len(denied)} time(s) as {USERNAME}; "
                    "manifests/ lacks a permission it uses:\n" + "\n".join(denied[:20]) + "\n"
                )
                code = code or 1
            if code != 0:
                sys.stderr.write(log_text[-5000:])
            return code
        finally:
            cluster.down()


if __name__ == "__main__":
    sys.exit(main())
