"""Fetch the jars Spark needs for ``s3a://`` paths into pyspark's ``jars/`` dir (image build option).

``hadoop-aws`` must be exactly the Hadoop version pyspark bundles (``hadoop-client-api-<v>.jar``), and
the AWS SDK v2 ``bundle`` exactly the version that ``hadoop-aws`` release was built against (the
``aws-java-sdk-v2.version`` property of Hadoop's ``hadoop-project`` POM). Both are read, not guessed,
and each download is checked against Maven Central's SHA-1 before it is installed.

    python deploy/s3a_jars.py            # download and install
    python deploy/s3a_jars.py --plan     # print the versions and URLs only

Used by ``deploy/Dockerfile`` with ``--build-arg WITH_S3A=true``.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

MAVEN = "https://repo1.maven.org/maven2"
_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
_HADOOP_JAR = re.compile(r"^hadoop-client-api-(\d+\.\d+\.\d+)\.jar$")


class S3AJarsError(RuntimeError):
    """The jars cannot be resolved or verified; the message says which and why."""


@dataclass(frozen=True)
class Artifact:
    group: str
    name: str
    version: str

    def url(self, ext: str = "jar") -> str:
        path = f"{MAVEN}/{self.group.replace('.', '/')}/{self.name}/{self.version}"
        return f"{path}/{self.name}-{self.version}.{ext}"

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.version}.jar"


def pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def bundled_hadoop_version(jars: Path) -> str:
    """The Hadoop version of pyspark's ``hadoop-client-api`` jar."""
    versions = sorted({m.group(1) for p in jars.iterdir() if (m := _HADOOP_JAR.match(p.name))})
    if len(versions) != 1:
        raise S3AJarsError(
            f"expected one hadoop-client-api jar in {jars}, found versions {versions or 'none'}"
        )
    return versions[0]


def sdk_version_from_pom(pom: bytes, source: str) -> str:
    """``aws-java-sdk-v2.version`` from Hadoop's ``hadoop-project`` POM."""
    root = ET.fromstring(pom)
    node = root.find("m:properties/m:aws-java-sdk-v2.version", _POM_NS)
    if node is None or not (node.text or "").strip():
        raise S3AJarsError(f"{source} has no aws-java-sdk-v2.version property")
    return node.text.strip()


def _get(url: str, timeout: float = 120) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read()
    except OSError as exc:
        raise S3AJarsError(f"cannot download {url}: {exc}") from exc


def _verified(artifact: Artifact) -> bytes:
    data = _get(artifact.url())
    want = _get(artifact.url("jar.sha1")).decode().split()[0].strip().lower()
    got = hashlib.sha1(data).hexdigest()
    if got != want:
        raise S3AJarsError(f"{artifact.url()}: SHA-1 {got} does not match Maven Central's {want}")
    return data


def plan(jars: Path, sdk_version: str | None = None) -> list[Artifact]:
    """hadoop-aws at pyspark's Hadoop version and the SDK bundle it was built against."""
    hadoop = bundled_hadoop_version(jars)
    if sdk_version is None:
        parent = Artifact("org.apache.hadoop", "hadoop-project", hadoop)
        sdk_version = sdk_version_from_pom(_get(parent.url("pom")), parent.url("pom"))
    return [
        Artifact("org.apache.hadoop", "hadoop-aws", hadoop),
        Artifact("software.amazon.awssdk", "bundle", sdk_version),
    ]


def install(jars: Path, artifacts: list[Artifact]) -> list[Path]:
    out = []
    for artifact in artifacts:
        target = jars / artifact.filename
        tmp = target.with_suffix(".part")
        tmp.write_bytes(_verified(artifact))
        tmp.rename(target)
        out.append(target)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--jars-dir", type=Path, default=None, help="default: the installed pyspark's jars/")
    p.add_argument("--sdk-version", help="AWS SDK v2 bundle version (default: read from Hadoop's POM)")
    p.add_argument("--plan", action="store_true", help="print what would be installed, download nothing")
    args = p.parse_args(argv)
    jars = args.jars_dir or pyspark_jars_dir()
    try:
        if args.plan and args.sdk_version is None:
            hadoop = bundled_hadoop_version(jars)
            print(f"hadoop-aws {hadoop}: {Artifact('org.apache.hadoop', 'hadoop-aws', hadoop).url()}")
            print(
                f"AWS SDK bundle: the aws-java-sdk-v2.version of "
                f"{Artifact('org.apache.hadoop', 'hadoop-project', hadoop).url('pom')}"
            )
            return 0
        artifacts = plan(jars, args.sdk_version)
        if args.plan:
            for a in artifacts:
                print(a.url())
            return 0
        for path in install(jars, artifacts):
            print(f"installed {path}")
    except S3AJarsError as exc:
        print(f"s3a_jars: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
