"""How long each live path takes to give up on a cluster that misbehaves, and what it prints.

    .venv/bin/python -m benchmarks.connect_bounds --timeout-ms 10000 --items 2

For each misbehaving loopback server (a listener that accepts and never answers, one that closes every
connection at once, and, when the Tansu test broker is installed, a PLAINTEXT broker spoken to with
``security.protocol=SSL``) it runs the real CLI in a subprocess (``reload --bootstrap``,
``audit --bootstrap``, ``expire --execute --executor admin|produce`` on a plan of ``--items`` offset
tombstones) and prints the wall seconds (interpreter start-up included), the exit code and how many
lines reached stderr. The connect timeout is ``OFFSETOPS_CONNECT_TIMEOUT_MS``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def _server(kind: str) -> Iterator[tuple[str, dict[str, str]]]:
    from tests.support.tls import misbehaving_server

    if kind == "ssl_to_plaintext":
        from tests.support.broker import TansuBroker

        broker = TansuBroker.start()
        try:
            yield broker.bootstrap, {"OFFSETOPS_SECURITY_PROTOCOL": "SSL"}
        finally:
            broker.stop()
    else:
        with misbehaving_server(kind) as address:
            yield address, {}


def _plan(root: Path, items: int) -> Path:
    from tests.coordinator_core.expiration.scenario import DAY, ScenarioLog
    from tests.coordinator_core.expiration.test_rules import NOW, P

    log = ScenarioLog(P)
    for i in range(items):
        log.commit(f"bench-{i}", "orders", 0, 5, NOW - 9 * DAY)
    log.write(root / "snap")
    return root / "snap"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout-ms", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=2, help="offset tombstones in the expire plan")
    parser.add_argument("--kinds", default="silent,closing,ssl_to_plaintext")
    args = parser.parse_args()
    from tests.coordinator_core.cleaner_audit.scenarios import healthy_partition
    from tests.coordinator_core.expiration.test_rules import NOW, RET

    print(f"connect timeout {args.timeout_ms} ms, expire plan of {args.items} items")
    print(f"{'server':<18} {'path':<16} {'wall s':>7} {'exit':>4} {'stderr lines':>12}")
    with tempfile.TemporaryDirectory(prefix="offsetops-bench-") as tmp:
        root = Path(tmp)
        logs = healthy_partition(root / "logs", 0).parent
        snap = _plan(root, args.items)
        for kind in args.kinds.split(","):
            with _server(kind) as (address, extra):
                env = {**os.environ, **extra, "OFFSETOPS_CONNECT_TIMEOUT_MS": str(args.timeout_ms)}
                expire = [
                    "expire",
                    str(snap),
                    "--now",
                    str(NOW),
                    "--retention-ms",
                    str(RET),
                    "--execute",
                    "--bootstrap",
                    address,
                    "--force-new-plan",
                ]
                paths = {
                    "reload": ["reload", "--bootstrap", address],
                    "audit": ["audit", str(logs), "--bootstrap", address],
                    "expire admin": [
                        *expire,
                        "--executor",
                        "admin",
                        "--journal-dir",
                        str(root / f"ja-{kind}"),
                    ],
                    "expire produce": [
                        *expire,
                        "--executor",
                        "produce",
                        "--target-topic",
                        "mirror",
                        "--journal-dir",
                        str(root / f"p-{kind}"),
                    ],
                }
                for name, argv in paths.items():
                    started = time.monotonic()
                    run = subprocess.run(
                        [sys.executable, "-m", "offsetops.cli", *argv],
                        cwd=REPO,
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=900,
                    )
                    wall = time.monotonic() - started
                    lines = len(run.stderr.splitlines())
                    print(f"{kind:<18} {name:<16} {wall:>7.1f} {run.returncode:>4} {lines:>12}", flush=True)


if __name__ == "__main__":
    main()
