"""Dynamic Resource Allocation's pure logic: the CEL selector environment and the structured allocator.

Follows ``k8s.io/dynamic-resource-allocation`` (``cel/``, ``structured/internal/incubating/``,
``resourceclaim/``, ``resourceslice/tracker/``) as kube-scheduler v1.37.2 uses it from
``pkg/scheduler/framework/plugins/dynamicresources/``. A library, not a plugin, so it lives under
``plugins/helper/`` and imports no plugin module; the DynamicResources plugin
(``scheduler/plugins/dynamic_resources.py``, still the placeholder) is to use it. docs/dra.md says what
is left.
"""
