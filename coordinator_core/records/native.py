"""The compiled twin of the record walk (``_cfold``, a C extension): loading it, and the one switch.

Two entry points use it: :func:`~offsetops.coordinator_core.records.fold.fold_buffer` (the reload's
fold, ``_cfold.fold_run``) and :func:`~offsetops.coordinator_core.records.batch.decode_v2_records` (the
record parser every other reader goes through: ``dump``, the cleaner audit's scan, the live readers,
``_cfold.decode_records``). Both take the native path only for input they represent exactly, and hand
anything else to the pure-Python code, which stays the reference and reports every error.

``OFFSETOPS_NATIVE=0`` turns the twin off (read once, at import); :data:`NATIVE` is the switch the
callers read on every call, so a test can flip it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING

__all__ = ["INTERFACE", "NATIVE", "cfold", "native_available"]

INTERFACE = 8  # the calling convention of _cfold that this package speaks (8: fold_run takes a FoldState
# with txn_keys, the index of open transactions by key; offset_commit_key and offset_commit_value)


def _installed_cfold() -> ModuleType | None:
    """The compiled twin from an installed offsetops, when this package was imported from a zip.

    Spark ships our sources to executors as a ``--py-files`` zip, from which no extension can load; an
    executor whose image or venv has offsetops installed still has the compiled twin on ``sys.path``.
    """
    for entry in sys.path:
        folder = os.path.join(entry or ".", "offsetops", "coordinator_core", "records")
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.startswith("_cfold.") and name.endswith(".so"):
                spec = importlib.util.spec_from_file_location(__name__.rpartition(".")[0] + "._cfold",
                                                              os.path.join(folder, name))  # fmt: skip
                if spec is None or spec.loader is None:
                    continue
                try:
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)
                except ImportError:
                    continue
                return module
    return None


def _load() -> ModuleType | None:
    try:
        _cfold = importlib.import_module(__name__.rpartition(".")[0] + "._cfold")
    except ImportError:  # not built here (no compiler at install time, or imported from a zip)
        _cfold = _installed_cfold()
    if _cfold is not None and getattr(_cfold, "INTERFACE", None) != INTERFACE:
        return None  # a build of another version of offsetops: the pure-Python path is always right
    return _cfold


_loaded = _load()
if TYPE_CHECKING:  # the checker sees the twin's declared interface (_cfold.pyi) wherever it is used
    from offsetops.coordinator_core.records import _cfold as _declared

    cfold = _declared if _loaded is not None else None
else:
    cfold = _loaded
"""The extension module, or None when it is not built (or is a build of another version)."""


def native_available() -> bool:
    """Whether the C twin was built and imports."""
    return cfold is not None


NATIVE: bool = cfold is not None and os.environ.get("OFFSETOPS_NATIVE", "1").strip().lower() not in (
    "0",
    "false",
    "no",
)
"""Whether the readers use the C twin (``OFFSETOPS_NATIVE=0`` at import turns it off)."""
