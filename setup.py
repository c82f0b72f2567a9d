"""Package layout and the one compiled part.

Package layout: the product's top-level folders install under the one ``offsetops`` namespace. The
repository keeps its layout (``coordinator_core/``, ``pipelines/``, ``checks/``, ``assets/`` beside
the CLI package ``offsetops/``), and every import says whose code it is: ``offsetops.pipelines.reload``,
never a bare ``pipelines`` that would collide with another project's in site-packages.

The compiled part: the reload's native fold over magic-2 batches (``coordinator_core/records/_cfold.c``,
see ``records/fold.py``). It is optional: without a C compiler and the Python headers the install
still succeeds and the reload uses its pure-Python path (``scripts/ensure_system_deps.sh`` installs
both; CI fails if the extension did not build). Everything else about the build is in pyproject.toml.
"""

from setuptools import Extension, find_packages, setup

#: Top-level folders installed as ``offsetops.<name>``.
NAMESPACED = ("coordinator_core", "pipelines", "checks", "assets")

package_dir = {"offsetops": "offsetops"}
packages = find_packages(include=["offsetops", "offsetops.*"])
for top in NAMESPACED:
    package_dir[f"offsetops.{top}"] = top
    packages += [f"offsetops.{name}" for name in find_packages(include=[top, f"{top}.*"])]

setup(
    packages=packages,
    package_dir=package_dir,
    # The compiled fold's declared interface, for type checkers of an installed offsetops.
    package_data={"offsetops.coordinator_core.records": ["_cfold.pyi"]},
    ext_modules=[
        Extension(
            "offsetops.coordinator_core.records._cfold",
            ["coordinator_core/records/_cfold.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ],
)
