"""Write what offsetops prints for every real broker log dir, to diff before and after a refactor.

    python scripts/snapshot_fixtures.py OUT_DIR [--fixtures ../shared/fixtures/real-kafka]
    diff -r BEFORE_DIR AFTER_DIR     # no output: every behaviour the fixtures reach is unchanged

For each log dir: ``reload --json`` and ``audit --json --no-record`` at a fixed ``--now``, plus their
exit codes and stderr. A refactor that changes none of these bytes changed no decoded group, offset,
statistic, error or verdict on data written by real brokers (Kafka 0.10 to 4.1).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

NOW = "2026-01-01T00:00:00Z"  # the audit's verdicts depend on the clock
#: Wall-clock measurements, the only fields that differ between two runs of the same code.
TIMINGS = {"elapsed_ms"}


def normalized(stdout: str) -> str:
    """The JSON indented with sorted keys and without timings, so ``diff`` shows real changes by line."""
    try:
        doc = json.loads(stdout)
    except ValueError:
        return stdout

    def strip(node: object) -> object:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in TIMINGS}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return json.dumps(strip(doc), indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    default = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "real-kafka"
    parser.add_argument("--fixtures", type=Path, default=default)
    args = parser.parse_args(argv)
    if not args.fixtures.is_dir():
        print(f"snapshot_fixtures: no fixtures at {args.fixtures}", file=sys.stderr)
        return 2
    cli = Path(sys.executable).with_name("offsetops")
    args.out.mkdir(parents=True, exist_ok=True)
    commands = {
        "reload": ["reload", "{dir}", "--json"],
        "audit": ["audit", "{dir}", "--json", "--no-record", "--now", NOW],
    }
    for log_dir in sorted(p for p in args.fixtures.iterdir() if p.is_dir()):
        for name, template in commands.items():
            argv_ = [str(cli), *(a.format(dir=log_dir) for a in template)]
            done = subprocess.run(argv_, capture_output=True, text=True, timeout=600)
            stem = f"{name}-{log_dir.name}"
            (args.out / f"{stem}.json").write_text(normalized(done.stdout), encoding="utf-8")
            (args.out / f"{stem}.err").write_text(f"exit {done.returncode}\n{done.stderr}", encoding="utf-8")
            print(f"{name:6} {log_dir.name}: exit {done.returncode}, {len(done.stdout)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
