"""Many processes: ``initialize`` / ``shutdown`` (see ``minijax.runtime.distributed``).

Start N local processes of a script for development with
``python -m minijax.launch -n N script.py [args]``.
"""

from minijax.runtime.distributed import initialize, is_initialized, shutdown

__all__ = ["initialize", "is_initialized", "shutdown"]
