"""Packages whose names load on first use offer every name they declare, each the object its submodule
defines, and only the submodules a name was read from are imported."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

LAZY_PACKAGES = (
    "offsetops.coordinator_core.kafka_client",
    "offsetops.coordinator_core.records",
    "offsetops.coordinator_core.resume",
    "offsetops.coordinator_core.schema",
)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_declared_name_is_its_submodules_object(package: str) -> None:
    pkg = importlib.import_module(package)
    assert pkg.__all__
    for name in pkg.__all__:
        value = getattr(pkg, name)
        owner = getattr(value, "__module__", None)
        if owner is not None and owner.startswith(f"{package}."):
            assert getattr(importlib.import_module(owner), name) is value
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)  # star imports read __all__ through __getattr__
    assert set(pkg.__all__) <= set(namespace)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_an_undeclared_name_is_an_attribute_error(package: str) -> None:
    pkg = importlib.import_module(package)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        pkg.no_such_name  # noqa: B018
    assert not hasattr(pkg, "no_such_name")


def test_reading_one_name_imports_its_submodule_only() -> None:
    probe = (
        "import json, sys\n"
        "from offsetops.coordinator_core.schema import decode_key\n"
        "from offsetops.coordinator_core.kafka_client import KafkaClientError\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out))
    assert "offsetops.coordinator_core.schema.keys" in loaded
    assert "offsetops.coordinator_core.kafka_client.config" in loaded
    for lazy in ("schema.json_view", "schema.control", "kafka_client.probe"):
        assert f"offsetops.coordinator_core.{lazy}" not in loaded
