"""VolumeBinding (upstream ``pkg/scheduler/framework/plugins/volumebinding``): the plugin
(``volume_binding.py``), its binder (``binder.py``) and its assume caches (``assume_cache.py``).

The registry finds an in-tree plugin at ``scheduler.plugins.<snake_case name>:<Name>``; this package
is that module for VolumeBinding.
"""

from scheduler.plugins.volume_binding.volume_binding import VolumeBinding

__all__ = ["VolumeBinding"]
