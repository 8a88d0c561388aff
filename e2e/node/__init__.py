"""e2e-node: a real kubelet node (containerd, runc, CNI bridge, kube-proxy) joined to the local control
plane beside kwok's simulated nodes, running py-scheduler from the Dockerfile's image as deployed by
``kubectl apply -k`` of manifests/ (image name overridden by the overlay in e2e/node/overlay).

``python -m e2e.node run`` (``make e2e-node``) does everything and tears it all down, also on failure;
``up``/``down`` keep a node for poking at. docs/deploy-node.md lists what differs from a production node.
"""
