"""Dynamic Resource Allocation's pure logic: the CEL selector environment and the structured allocator.

Follows ``k8s.io/dynamic-resource-allocation@v0.37.2`` (``cel/``, ``structured/internal/incubating/``,
``resourceclaim/``, ``resourceslice/tracker/``) as kube-scheduler v1.37.2 uses it from
``pkg/scheduler/framework/plugins/dynamicresources/``. Nothing here talks to the API server or is wired
into the live plugin yet (``scheduler/plugins/dynamic_resources.py``); docs/dra.md says what is left.
"""
