"""CRC-32C (Castagnoli), the checksum of a magic-2 batch (``DefaultRecordBatch``: ``Crc32C.compute`` over
the bytes from the attributes to the end of the batch).

The ``crc32c`` package is imported on first use: its ``__init__`` reads the installed distributions'
metadata (``importlib.metadata``), a cost every command paid at start-up, most of them without ever
checking a batch in Python (the native fold has its own). The function it gives is kept, so a walk of
many small batches pays the import once, not once a batch.
"""

from __future__ import annotations

from collections.abc import Callable

_compute: Callable[[bytes | bytearray | memoryview, int], int] | None = None


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """The CRC-32C of ``data``, continuing from ``value`` (0 for a fresh checksum)."""
    global _compute
    if _compute is None:
        from crc32c import crc32c as compute

        _compute = compute
    return _compute(data, value)
