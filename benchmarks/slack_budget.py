"""Wall time of one alert evaluation against a Slack that misbehaves, and of the delivery after it.

For each behaviour of the loopback Slack stand-in (healthy, 429 with ``Retry-After: 20``, never
answers, trickles bytes), one notifier (one evaluation, budget ``--budget`` s) sends ``--alerts``
alerts; then a fresh notifier, against a healthy server, delivers the outbox. Printed: the seconds
each took, how many requests reached the server, and how many messages Slack ended up with.

    .venv/bin/python -m benchmarks.slack_budget --alerts 20 --budget 5
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from offsetops.checks.alerting import Alert, SlackNotifier

from tests.support.slack_server import SlackTestServer

TOKEN = "xoxb-test-token"


def _notifier(server: SlackTestServer, folder: Path, budget_s: float) -> SlackNotifier:
    return SlackNotifier(
        TOKEN,
        "#bench",
        base_url=server.base_url,
        state_path=folder / "state.json",
        outbox_path=folder / "outbox.jsonl",
        budget_s=budget_s,
        timeout_s=10,
        max_retry_after_s=5,
    )


def run(behaviour: str, alerts: int, budget_s: float) -> None:
    with SlackTestServer(valid_tokens={TOKEN}) as server, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if behaviour == "429 Retry-After 20":
            server.rate_limit_next(1, retry_after=20)
        elif behaviour == "never answers":
            server.hang_next(alerts)
        elif behaviour == "trickles bytes":
            server.trickle_next(alerts, interval_s=0.05)
        notifier = _notifier(server, folder, budget_s)
        started = time.monotonic()
        statuses = [
            notifier.send(
                Alert(f"bench:{i}", "critical", f"alert {i}", (i % 50,), "benchmark", "none")
            ).status.value
            for i in range(alerts)
        ]
        first = time.monotonic() - started
        requests = len(server.requests)
        server.rate_limit_next(0)
        server.hang_next(0)
        server.trickle_next(0)
        started = time.monotonic()
        later = _notifier(server, folder, budget_s).flush()
        second = time.monotonic() - started
        print(
            f"{behaviour:<20} evaluation {first:6.2f} s ({requests:>3} requests, "
            f"{statuses.count('sent'):>3} sent, {statuses.count('outboxed'):>3} outboxed) | "
            f"next evaluation {second:5.2f} s delivers {sum(r.sent for r in later):>3} | "
            f"Slack has {len(server.messages):>3} messages"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alerts", type=int, default=20)
    parser.add_argument("--budget", type=float, default=5.0)
    args = parser.parse_args()
    print(f"{args.alerts} alerts per evaluation, Slack budget {args.budget:g} s, request timeout 10 s")
    for behaviour in ("healthy", "429 Retry-After 20", "never answers", "trickles bytes"):
        run(behaviour, args.alerts, args.budget)


if __name__ == "__main__":
    main()
