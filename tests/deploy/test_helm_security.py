"""The deployment's security properties, on the manifests Helm renders (``helm-python-sdk`` embeds
Helm's engine; no cluster): the collectors chart, the offsetops-dagster chart, and the values the
official Dagster chart copies into its pods. And the file policy end to end: what a collector writes,
the Dagster pods can read (uids, gids, fsGroup, mode), checked on paper and, as root, for real."""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from offsetops.coordinator_core.atomic import SHARED_FILE_MODE

from tests.support.shared import REPO_ROOT

helm = pytest.importorskip("helm_python.chart", reason="helm-python-sdk (the deploy extra) is not installed")

HELM = REPO_ROOT / "deploy" / "helm"
COLLECTORS = HELM / "offsetops-collectors"
DAGSTER_EXTRAS = HELM / "offsetops-dagster"
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def render(chart: Path, values: dict[str, Any] | None = None, name: str = "rel") -> list[dict[str, Any]]:
    out = helm.Chart.load(chart).render(values, name=name, namespace="ns", is_install=True)
    return [d for path, text in out.items() if path.endswith(".yaml") for d in yaml.safe_load_all(text) if d]


def collector_pods() -> list[dict[str, Any]]:
    return [
        d["spec"]["jobTemplate"]["spec"]["template"] for d in render(COLLECTORS) if d["kind"] == "CronJob"
    ]


def dagster_values() -> dict[str, Any]:
    return yaml.safe_load((HELM / "values.yaml").read_text())


def dagster_pods() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """(pod securityContext, container securityContext) of every pod the official chart makes from
    deploy/helm/values.yaml (the keys it copies verbatim into the pod spec)."""
    v = dagster_values()
    (code,) = v["dagster-user-deployments"]["deployments"]
    run = v["runLauncher"]["config"]["k8sRunLauncher"]["runK8sConfig"]
    return {
        "webserver": (v["dagsterWebserver"]["podSecurityContext"], v["dagsterWebserver"]["securityContext"]),
        "daemon": (v["dagsterDaemon"]["podSecurityContext"], v["dagsterDaemon"]["securityContext"]),
        "code server": (code["podSecurityContext"], code["securityContext"]),
        "run": (run["podSpecConfig"]["securityContext"], run["containerConfig"]["securityContext"]),
    }


def assert_hardened(pod: dict[str, Any], container: dict[str, Any], where: str) -> None:
    assert pod["runAsNonRoot"] is True and pod["runAsUser"] > 0, where
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, where
    assert container["allowPrivilegeEscalation"] is False, where
    assert container["capabilities"] == {"drop": ["ALL"]}, where
    assert container["readOnlyRootFilesystem"] is True, where
    assert container["runAsNonRoot"] is True, where


def assert_limited(resources: dict[str, Any], where: str) -> None:
    for kind in ("requests", "limits"):
        assert set(resources[kind]) >= {"cpu", "memory"}, f"{where}: {kind}"


# -- the collectors chart ---------------------------------------------------------------------------


def test_collector_pods_are_hardened_limited_and_run_an_image_by_digest() -> None:
    pods = collector_pods()
    assert len(pods) == 3
    for template in pods:
        spec = template["spec"]
        (container,) = spec["containers"]
        assert_hardened(spec["securityContext"], container["securityContext"], "collector")
        assert_limited(container["resources"], "collector")
        assert DIGEST.search(container["image"]), container["image"]
        volumes = {v["name"]: v for v in spec["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert "emptyDir" in volumes[mounts["/tmp"]]  # writes need a volume: the root is read-only


def test_the_collectors_image_digest_is_required_and_checked() -> None:
    for digest in ("", "latest", "sha256:abc"):
        with pytest.raises(Exception, match=r"image\.digest"):
            render(COLLECTORS, {"image": {"digest": digest}})
    good = "sha256:" + "ab" * 32
    (pod, *_) = [
        d["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        for d in render(COLLECTORS, {"image": {"digest": good}})
        if d["kind"] == "CronJob"
    ]
    assert pod["containers"][0]["image"] == f"registry.example.com/offsetops@{good}"


def test_a_network_policy_denies_all_traffic_of_the_collectors() -> None:
    docs = render(COLLECTORS)
    (policy,) = [d for d in docs if d["kind"] == "NetworkPolicy"]
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["ingress"] == [] and policy["spec"]["egress"] == []
    selector = policy["spec"]["podSelector"]["matchLabels"]
    for template in collector_pods():
        assert selector.items() <= template["metadata"]["labels"].items()
    assert not [
        d for d in render(COLLECTORS, {"networkPolicy": {"enabled": False}}) if d["kind"] == "NetworkPolicy"
    ]


# -- the Dagster deployment ---------------------------------------------------------------------------


def test_every_dagster_pod_is_hardened_and_limited() -> None:
    for where, (pod, container) in dagster_pods().items():
        assert_hardened(pod, container, where)
    v = dagster_values()
    (code,) = v["dagster-user-deployments"]["deployments"]
    run = v["runLauncher"]["config"]["k8sRunLauncher"]["runK8sConfig"]
    for where, resources in [
        ("webserver", v["dagsterWebserver"]["resources"]),
        ("daemon", v["dagsterDaemon"]["resources"]),
        ("code server", code["resources"]),
        ("run", run["containerConfig"]["resources"]),
    ]:
        assert_limited(resources, where)
    for section in (v["dagsterWebserver"], v["dagsterDaemon"], code):
        tmp = {m["mountPath"]: m["name"] for m in section["volumeMounts"]}["/tmp"]
        assert "emptyDir" in {vol["name"]: vol for vol in section["volumes"]}[tmp]


def test_the_offsetops_image_is_pinned_by_digest_everywhere() -> None:
    v = dagster_values()
    (code,) = v["dagster-user-deployments"]["deployments"]
    # the official chart prints repository:tag, so the tag carries the digest
    assert DIGEST.search(f"{code['image']['repository']}:{code['image']['tag']}")
    env = {e["name"]: e.get("value") for e in code["env"]}
    conf = dict(p.strip().split("=", 1) for p in env["OFFSETOPS_SPARK_CONF"].split(",") if p.strip())
    assert DIGEST.search(conf["spark.kubernetes.container.image"])


def test_secrets_are_files_one_per_key_never_the_whole_secret_as_environment() -> None:
    (code,) = dagster_values()["dagster-user-deployments"]["deployments"]
    assert "envSecrets" not in code
    env = {e["name"]: e for e in code["env"]}
    for e in env.values():  # a secret reaches the environment only key by key
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        assert ref is None or set(ref) == {"name", "key"}
    (secrets,) = [vol for vol in code["volumes"] if "secret" in vol]
    assert stat.S_IMODE(secrets["secret"]["defaultMode"]) == 0o440
    keys = {item["key"]: item["path"] for item in secrets["secret"]["items"]}
    mounts = {m["mountPath"]: m for m in code["volumeMounts"] if m["name"] == secrets["name"]}
    assert {m["subPath"] for m in mounts.values()} == set(keys.values())  # one mount per key, a plain file
    assert all(m["readOnly"] for m in mounts.values())
    assert env["OFFSETOPS_CLIENT_CONFIG"]["value"] in mounts
    assert env["SLACK_BOT_TOKEN_FILE"]["value"] in mounts


def test_only_the_webserver_and_the_daemon_reach_the_code_servers_grpc() -> None:
    v = dagster_values()
    (code,) = v["dagster-user-deployments"]["deployments"]
    extras = yaml.safe_load((DAGSTER_EXTRAS / "values.yaml").read_text())
    assert (extras["codeServer"]["deployment"], extras["codeServer"]["port"]) == (code["name"], code["port"])
    (policy,) = render(DAGSTER_EXTRAS)
    assert policy["kind"] == "NetworkPolicy" and policy["spec"]["policyTypes"] == ["Ingress"]
    # the labels the official chart puts on the code server's pods (deployment-user.yaml)
    assert policy["spec"]["podSelector"]["matchLabels"] == {
        "app.kubernetes.io/instance": "offsetops",
        "component": "user-deployments",
        "deployment": "offsetops",
    }
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 3030}]
    assert [p["podSelector"]["matchLabels"] for p in rule["from"]] == [
        {"app.kubernetes.io/instance": "offsetops", "component": "dagster-webserver"},
        {"app.kubernetes.io/instance": "offsetops", "component": "dagster-daemon"},
    ]
    report = helm.lint(DAGSTER_EXTRAS, strict=True, kube_version="v1.30.0")
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == []


# -- the file policy across the two charts -------------------------------------------------------------


def identity(pod: dict[str, Any]) -> tuple[int, int, set[int]]:
    """(uid, primary gid, every gid) of a pod's process, as the kubelet starts it."""
    gid = pod["runAsGroup"]
    return (
        pod["runAsUser"],
        gid,
        {gid, *pod.get("supplementalGroups", ()), *([pod["fsGroup"]] if "fsGroup" in pod else [])},
    )


def can_read(mode: int, owner: tuple[int, int], reader: tuple[int, int, set[int]]) -> bool:
    uid, _, gids = reader
    if uid == owner[0]:
        return bool(mode & stat.S_IRUSR)
    if owner[1] in gids:
        return bool(mode & stat.S_IRGRP)
    return bool(mode & stat.S_IROTH)


def test_the_dagster_pods_can_read_the_scans_the_collectors_write() -> None:
    readers = {k: identity(pod) for k, (pod, _) in dagster_pods().items() if k in ("code server", "run")}
    for template in collector_pods():
        writer_pod = template["spec"]["securityContext"]
        uid, gid, _ = identity(writer_pod)
        # a new file takes the process's primary gid, or the volume's (fsGroup sets its setgid bit)
        for owner_gid in {gid, writer_pod["fsGroup"]}:
            for where, reader in readers.items():
                assert can_read(SHARED_FILE_MODE, (uid, owner_gid), reader), (where, uid, owner_gid, reader)
    assert not SHARED_FILE_MODE & stat.S_IRWXO  # nobody outside the shared group


@pytest.fixture
def traversable() -> Iterator[Path]:
    """A directory every uid can traverse (pytest's own tmp root is private to its user)."""
    path = Path(tempfile.mkdtemp(prefix="offsetops-modes-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def as_pod(pod: dict[str, Any], fn: Callable[[], object]) -> int:
    """Run ``fn`` in a forked child with the pod's uid, gid and groups (umask 022); its exit status."""
    uid, gid, gids = identity(pod)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status
        code = 1
        try:
            os.setgroups(sorted(gids))
            os.setgid(gid)
            os.setuid(uid)
            os.umask(0o022)
            fn()
            code = 0
        except BaseException as exc:
            print(f"as uid {uid}: {type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.skipif(os.geteuid() != 0, reason="switching uid/gid needs root")
def test_a_scan_written_as_the_collector_is_read_as_the_dagster_run(traversable: Path) -> None:
    """For real: the collector's uid and groups write a scan with the project's writer, the run pod's
    read it with the project's reader (forked children, so no interpreter path must be reachable)."""
    from offsetops.coordinator_core.cleaner.collect import BrokerScan, read_broker_scans, write_broker_scan

    writers = {str(t["spec"]["securityContext"]): t["spec"]["securityContext"] for t in collector_pods()}
    (writer_pod,) = writers.values()
    reader_pod, _ = dagster_pods()["run"]
    shared = traversable / "scans"
    shared.mkdir()
    os.chown(shared, 0, writer_pod["fsGroup"])
    shared.chmod(0o2770)  # what fsGroup makes of a volume's root: group-owned, setgid
    scan = BrokerScan(1, "data", 1_700_000_000_000, {})
    assert as_pod(writer_pod, lambda: write_broker_scan(scan, shared)) == 0
    st = os.stat(shared / "broker-1.json")
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (writer_pod["runAsUser"], 10001, 0o640)

    def read() -> None:
        (scan,) = read_broker_scans(shared)
        assert scan.broker_id == 1

    assert as_pod(reader_pod, read) == 0
    outsider = {**reader_pod, "runAsUser": 4242, "runAsGroup": 4242, "fsGroup": 4242}
    assert as_pod(outsider, read) == 1  # others: nothing (mode 0640)
