"""The image's install steps, as far as a machine without a container runtime can take them.

Run here: the wheel is built from the tree (as ``pip install --no-deps .`` in the Dockerfile does), it
holds every package and the ``offsetops`` entry point, its requirements are all pinned by
``requirements.lock``, and installed ``--no-deps`` into a fresh venv whose third-party packages are the
locked ones of this environment, the code location loads from the wheel (not the checkout) as the
image's CMD loads it. The Dockerfile's COPY sources exist and its pip steps use the lockfile.
Not run here: ``docker build`` itself, the apt layer, and the WITH_S3A download from Maven Central.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.deploy.conftest import REPO

pytestmark = pytest.mark.slow

PACKAGES = ("coordinator_core", "offsetops", "pipelines", "assets", "checks")
RUNTIME_EXTRAS = ("spark", "gx", "dagster", "deploy")


def pins(lock: Path) -> dict[str, str]:
    """``name==version`` lines of a uv/pip-compile lockfile, by normalized name."""
    out = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;]+)", line)
        if m:
            out[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(3)
    return out


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def requirements(extras: tuple[str, ...]) -> list[Requirement]:
    proj = project()
    reqs = [Requirement(r) for r in proj["dependencies"]]
    for extra in extras:
        reqs += [Requirement(r) for r in proj["optional-dependencies"][extra]]
    return reqs


@pytest.mark.parametrize(
    ("lock", "extras"),
    [("requirements.lock", RUNTIME_EXTRAS), ("requirements-dev.lock", (*RUNTIME_EXTRAS, "test"))],
)
def test_lockfile_pins_every_requirement_of_pyproject(lock: str, extras: tuple[str, ...]) -> None:
    locked = pins(REPO / lock)
    stale = []
    for req in requirements(extras):
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name == "offsetops":  # the all extra refers to the project itself
            continue
        if name not in locked or not req.specifier.contains(locked[name], prereleases=True):
            stale.append(f"{req} (locked: {locked.get(name, 'missing')})")
    assert not stale, f"{lock} is stale, run scripts/lock.sh: {stale}"


def test_dev_lock_agrees_with_the_image_lock() -> None:
    image, dev = pins(REPO / "requirements.lock"), pins(REPO / "requirements-dev.lock")
    differ = {n: (v, dev.get(n)) for n, v in image.items() if dev.get(n) != v}
    assert not differ, f"CI would test other versions than the image ships: {differ}"


def test_dockerfile_installs_from_the_lock_and_copies_what_exists() -> None:
    text = (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    steps = " ".join(text.replace("\\\n", " ").split())
    assert "pip install --no-deps -r requirements.lock" in steps
    assert "pip install --no-deps ." in steps
    assert not re.search(r"pip install (?!--no-deps)", steps), "every pip install in the image must be pinned"
    for line in text.splitlines():
        if line.startswith("COPY "):
            sources = line.split()[1:-1]
            for src in sources:
                assert (REPO / src).exists(), f"Dockerfile copies {src}, which does not exist"
    for package in PACKAGES:
        assert f"COPY {package} " in text


def _build_wheel(out: Path) -> Path:
    if importlib.util.find_spec("pip") is not None:
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)]
    elif shutil.which("uv"):
        cmd = ["uv", "build", "--wheel", "-q", "-o", str(out), str(REPO)]
    else:
        pytest.skip("neither pip nor uv is available to build the wheel")
    subprocess.run(cmd, check=True, timeout=300, cwd=out)
    [wheel] = out.glob("offsetops-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build_wheel(tmp_path_factory.mktemp("wheel"))


def test_wheel_holds_every_package_and_the_entry_point(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(meta).decode()
        entry_points = zf.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    for package in PACKAGES:
        source = sorted(p.relative_to(REPO).as_posix() for p in (REPO / package).rglob("*.py"))
        missing = [s for s in source if s not in names]
        assert not missing, f"the wheel lacks {missing[:5]}"
    assert "offsetops = offsetops.cli:main" in entry_points
    assert not any(n.startswith("tests/") for n in names)
    locked = pins(REPO / "requirements.lock")
    for line in metadata.splitlines():
        if line.startswith("Requires-Dist:"):
            req = Requirement(line.split(":", 1)[1].strip())
            extra = re.search(r'extra == "([^"]+)"', str(req.marker or ""))
            if extra and extra.group(1) not in RUNTIME_EXTRAS:
                continue
            name = re.sub(r"[-_.]+", "-", req.name).lower()
            assert name in locked and req.specifier.contains(locked[name], prereleases=True), str(req)


def test_code_location_loads_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    """The image's install: the locked packages, then the wheel with --no-deps; then its CMD's module."""
    base = getattr(sys, "_base_executable", sys.executable)
    venv = tmp_path / "image-venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # The third-party packages of this (locked) environment, without its editable offsetops hook.
    (site / "locked-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    with zipfile.ZipFile(wheel) as zf:  # a wheel install of pure Python is an unzip into site-packages
        zf.extractall(site)
    probe = (
        "import offsetops.assets.definitions as d, offsetops.coordinator_core as core, pathlib; "
        "print(pathlib.Path(core.__file__).parents[2]); "
        "print(len(d.defs.resolve_job_def('offsetops_main_job').nodes_in_topological_order))"
    )
    env = {
        **os.environ,
        "OFFSETOPS_DEPLOYMENT": "cluster",
        "OFFSETOPS_SPARK_MASTER": "spark://spark-master:7077",
        "OFFSETOPS_OUTPUT_DIR": str(tmp_path / "out"),
        "OFFSETOPS_LOG_DIR": str(tmp_path),
        "PYTHONPATH": "",
    }
    done = subprocess.run(
        [str(python), "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    where, nodes = done.stdout.split()[-2:]
    assert Path(where) == site, f"loaded from {where}, not from the wheel"
    assert int(nodes) >= 5
