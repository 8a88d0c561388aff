"""A real local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kwok) for tests.

No Docker is needed: the binaries are built from Go modules by ``build.sh`` and run as plain
processes on 127.0.0.1. See ``cluster.py`` for the CLI (``python -m e2e.cluster``) and the API.
"""

from e2e.cluster.cluster import ClusterError, LocalCluster, create_nodes, node_manifest

__all__ = ["ClusterError", "LocalCluster", "create_nodes", "node_manifest"]
