"""Package layout: the product's top-level folders install under the one ``offsetops`` namespace.

The repository keeps its layout (``coordinator_core/``, ``pipelines/``, ``checks/``, ``assets/`` beside
the CLI package ``offsetops/``), and every import says whose code it is: ``offsetops.pipelines.reload``,
never a bare ``pipelines`` that would collide with another project's in site-packages. Everything else
about the build is in pyproject.toml.
"""

from setuptools import find_packages, setup

#: Top-level folders installed as ``offsetops.<name>``.
NAMESPACED = ("coordinator_core", "pipelines", "checks", "assets")

package_dir = {"offsetops": "offsetops"}
packages = find_packages(include=["offsetops", "offsetops.*"])
for top in NAMESPACED:
    package_dir[f"offsetops.{top}"] = top
    packages += [f"offsetops.{name}" for name in find_packages(include=[top, f"{top}.*"])]

setup(packages=packages, package_dir=package_dir)
