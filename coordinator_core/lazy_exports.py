"""A package's names imported on first use (PEP 562 module ``__getattr__``).

A package ``__init__`` that imports every submodule makes each process pay for all of them: a
``reload`` of a log dir would load the live client's TLS stack, every codec library and the resume
store. With :func:`lazy_exports` the package still offers the same names (``from package import
name`` works as before), and the submodule that defines a name is imported when it is first read.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(package: str, submodules: Mapping[str, tuple[str, ...]]) -> Callable[[str], object]:
    """The ``__getattr__`` of ``package``: ``submodules`` maps each submodule (its name relative to the
    package) to the names it exports; a name read the first time imports its submodule and is kept."""
    where = {name: sub for sub, names in submodules.items() for name in names}
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> object:
        sub = where.get(name)
        if sub is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{sub}"), name)
        namespace[name] = value
        return value

    return __getattr__
