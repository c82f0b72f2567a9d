"""The exporter's HTTP endpoint: an asyncio server that no crowd of clients can hold.

``prometheus_client.start_http_server`` serves one thread per connection with no read timeout and
renders the whole exposition for every request: idle connections pile up threads, and a crowd that
sends half a request and hangs up gets a full render each. Here one event-loop thread serves every
connection, and:

- a client has :data:`READ_TIMEOUT_S` to send its request line and headers (at most
  :data:`MAX_REQUEST_BYTES`), else it is disconnected;
- at most ``max_connections`` are open; when a new one arrives at the cap, the oldest connection still
  waiting for its request is dropped for it, else the one that has been taking its answer the longest
  (a real scrape sends its request at once and reads its answer in milliseconds, so neither idle
  clients nor clients that never read can lock it out);
- a scrape only sends bytes rendered once per refresh (:meth:`OffsetsCollector.exposition`), in chunks
  with flow control, within :data:`WRITE_TIMEOUT_S`: memory is bounded by the cap times one chunk, not
  by the number of requests times the exposition.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

from offsetops.coordinator_core.errors import printable

__all__ = ["MAX_CONNECTIONS", "READ_TIMEOUT_S", "WRITE_TIMEOUT_S", "MetricsServer"]

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 5.0
WRITE_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 64
MAX_REQUEST_BYTES = 8192
_CHUNK = 64 << 10
_CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"
_PATHS = (b"/metrics", b"/")


def _response(status: bytes, body: bytes = b"", content_type: bytes = b"text/plain; charset=utf-8") -> bytes:
    return (
        b"HTTP/1.1 " + status + b"\r\nContent-Type: " + content_type + b"\r\nContent-Length: "
        + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n"
    )  # fmt: skip


class _Conn:
    __slots__ = ("answering", "since", "writer")

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.answering = False
        self.since = time.monotonic()


class MetricsServer:
    """Serve ``body()`` (the rendered exposition) on ``/metrics`` from a thread of its own."""

    def __init__(
        self,
        host: str,
        port: int,
        body: Callable[[], bytes],
        *,
        max_connections: int = MAX_CONNECTIONS,
        read_timeout_s: float = READ_TIMEOUT_S,
        write_timeout_s: float = WRITE_TIMEOUT_S,
    ) -> None:
        self.host, self.port = host, port
        self._body = body
        self._max = max_connections
        self._read_timeout = read_timeout_s
        self._write_timeout = write_timeout_s
        self._conns: dict[asyncio.StreamWriter, _Conn] = {}  # insertion order: oldest first
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    def start(self) -> int:
        """Listen and serve in a daemon thread; returns the bound port (OSError if it cannot listen)."""
        self._thread = threading.Thread(target=self._run, name="metrics-http", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error
        return self.port

    def stop(self) -> None:
        loop = self._loop
        if loop is not None and self._server is not None:
            loop.call_soon_threadsafe(self._server.close)
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        import asyncio  # here, not at the top: every ``offsetops`` command imports this module's constants

        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._handle, self.host, self.port, limit=MAX_REQUEST_BYTES, backlog=128)
            )
            self.port = self._server.sockets[0].getsockname()[1]
        except OSError as exc:
            self._error = exc
            self._started.set()
            loop.close()
            return
        self._started.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    def _admit(self) -> None:
        """Make room for a new connection at the cap: drop the oldest one still waiting for its request,
        else the one that has been taking its answer the longest (a client that does not read)."""
        if len(self._conns) < self._max:
            return
        victim = min(self._conns.values(), key=lambda c: (c.answering, c.since))
        victim.writer.transport.abort()
        self._conns.pop(victim.writer, None)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import asyncio

        self._admit()
        conn = self._conns[writer] = _Conn(writer)
        writer.transport.set_write_buffer_limits(high=0)  # drain() waits for the socket to take it all
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self._read_timeout)
            conn.answering, conn.since = True, time.monotonic()
            method, _, rest = head.partition(b" ")
            path = rest.split(b" ", 1)[0].split(b"?", 1)[0]
            if method not in (b"GET", b"HEAD"):
                await self._send(writer, _response(b"405 Method Not Allowed"))
            elif path not in _PATHS:
                await self._send(writer, _response(b"404 Not Found"))
            else:
                body = self._body()
                head = _response(b"200 OK", body, _CONTENT_TYPE)
                await self._send(writer, head, b"" if method == b"HEAD" else body)
        except asyncio.LimitOverrunError:
            await self._send(writer, _response(b"431 Request Header Fields Too Large"))
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError):
            pass  # a client that never finished its request, or went away: nothing to answer
        except Exception as exc:  # never let one connection take the loop down; say what happened
            log.error("metrics request failed: %s", printable(f"{type(exc).__name__}: {exc}"))
        finally:
            self._conns.pop(writer, None)
            writer.close()

    async def _send(self, writer: asyncio.StreamWriter, head: bytes, body: bytes = b"") -> None:
        """Write ``head`` and ``body`` a chunk at a time, all within the write timeout; a client that does
        not take it in time is cut off (its unsent bytes are dropped, not kept)."""
        import asyncio

        deadline = time.monotonic() + self._write_timeout
        view = memoryview(body)
        try:
            writer.write(head)
            for i in range(0, len(view), _CHUNK):
                await asyncio.wait_for(writer.drain(), max(0.0, deadline - time.monotonic()))
                writer.write(view[i : i + _CHUNK])
            await asyncio.wait_for(writer.drain(), max(0.0, deadline - time.monotonic()))
        except (TimeoutError, ConnectionError, OSError):
            writer.transport.abort()
