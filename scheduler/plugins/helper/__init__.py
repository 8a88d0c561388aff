"""What plugins share and that is no plugin (upstream ``pkg/scheduler/framework/plugins/helper``, and for
``podgroup`` scheduler-plugins' ``pkg/coscheduling/core``).

Kept out of ``scheduler/plugins/``, the namespace from which an in-tree plugin's module is derived by
name (``NodeResourcesFit`` -> ``scheduler.plugins.node_resources_fit``), so that every module there is a
plugin. Modules here import no plugin module.
"""
