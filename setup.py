"""The native part of offsetops: the reload's fold over magic-2 batches, in C (see records/fold.py).

Everything else is in pyproject.toml. The extension is optional: without a C compiler and the Python
headers the install still succeeds and the reload uses its pure-Python path (``scripts/ensure_system_deps.sh``
installs both; CI fails if the extension did not build).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "coordinator_core.records._cfold",
            ["coordinator_core/records/_cfold.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ]
)
