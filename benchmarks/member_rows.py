"""Rebuilding members from collected ``members`` rows (``pipelines.tables._member_from_row``, what
``caches_from_rows`` does for each member when the expiration plan reads the reload's tables back):
2000 members of 12 assigned topics each, their assignment entries as Spark's ``collect`` gives them.

    .venv/bin/python -m benchmarks.member_rows --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import time

from offsetops.pipelines.schemas import ASSIGNMENT_ENTRY
from offsetops.pipelines.tables import _member_from_row
from pyspark.sql.types import _create_row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=2000)
    ap.add_argument("--topics", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    names = ASSIGNMENT_ENTRY.fieldNames()
    rows = [
        {
            "member_id": f"member-{m}",
            "group_instance_id": None,
            "client_id": "client",
            "client_host": "/10.0.0.1",
            "session_timeout_ms": 45_000,
            "rebalance_timeout_ms": 300_000,
            "subscribed_topics": [f"topic-{t}" for t in range(args.topics)],
            "assignment": [_create_row(names, [f"topic-{t}", [t, t + 1]]) for t in range(args.topics)],
        }
        for m in range(args.members)
    ]
    seconds = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        for r in rows:
            _member_from_row(r)
        seconds.append(time.perf_counter() - started)
    print(
        f"{args.members} members x {args.topics} topics: median {statistics.median(seconds) * 1000:.1f} ms "
        f"({', '.join(f'{s * 1000:.1f}' for s in seconds)})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
