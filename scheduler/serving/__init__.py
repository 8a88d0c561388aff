"""The secure port: kube-scheduler's serving flags, the health and metrics endpoints, their HTTP(S)
transport and the delegated authentication and authorization in front of them."""
