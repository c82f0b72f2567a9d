"""Kafka's compression codecs (``org.apache.kafka.common.compress.*``, ``CompressionType``).

Every codec is read the way a broker reads it, and written the way a broker (or the Java producer) writes
it, so bytes built here are accepted by a real broker:

- gzip: one gzip member (``GzipCompression``).
- snappy: the Java client writes xerial framing (``SnappyOutputStream``: an 8-byte magic, two int32
  versions, then int32-length-prefixed raw snappy blocks). Non-Java clients (librdkafka, kafka-python
  without xerial) write one raw snappy block, so reading accepts both.
- lz4: an LZ4 frame with 64 KiB independent blocks (``Lz4BlockOutputStream``). Magic-0 messages carry
  KAFKA-3160's broken header checksum (computed over the frame magic as well as the descriptor), so
  reading never trusts that byte, and writing with ``magic=0`` reproduces it.
- zstd: a zstd frame; zstd-jni streams without a content size, so reading never relies on it.

Decompression is bounded: ``decompress(..., limit=N)`` streams and stops with a
:class:`DecompressionLimitError` as soon as the output would exceed ``N`` bytes, so a small batch that
inflates to gigabytes (a "zip bomb") costs at most about ``N`` bytes of memory, never the whole output.
"""

from __future__ import annotations

import struct
import threading
import zlib
from typing import TYPE_CHECKING

# The codecs' libraries are imported where a payload of theirs is first met: most logs hold one codec
# or none, and every process would otherwise pay for all four at start-up.
if TYPE_CHECKING:
    import zstandard

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4

CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

__all__ = [
    "CODEC_NAMES",
    "DEFAULT_MAX_BATCH_BYTES",
    "GZIP",
    "LZ4",
    "NONE",
    "SNAPPY",
    "ZSTD",
    "CompressionError",
    "DecompressionLimitError",
    "compress",
    "decompress",
    "xxh32",
]


class CompressionError(ValueError):
    """A payload could not be decompressed (or a codec is not valid for a message format)."""


class DecompressionLimitError(CompressionError):
    """A payload inflates beyond the limit it was given (a batch bigger than any broker accepts)."""


#: The default bound on a batch, framed and decompressed (``message.max.bytes``-style; the broker's
#: default is 1 MiB, so this leaves room for clusters that raised it). Configurable per reader.
DEFAULT_MAX_BATCH_BYTES = 32 << 20

# zstd and gzip input is fed in pieces this small, so one call can produce at most a few MiB more than
# the limit (a 3-byte zstd RLE block expands to 128 KiB; deflate to about 1032:1).
_FEED = 256


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
# SnappyOutputStream's default block size; Kafka keeps the xerial default.
_XERIAL_BLOCK = 32 * 1024

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_BLOCK_SIZES = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}

_I32 = struct.Struct(">i")
_U32LE = struct.Struct("<I")


# --- xxHash32 -----------------------------------------------------------------------------------------
# Only needed for the LZ4 frame header-checksum byte (two or six bytes of input), so a small pure-Python
# version is enough and avoids another dependency.
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of ``data`` (the hash the LZ4 frame format uses for its checksums)."""
    n = len(data)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while i + 16 <= n:
            a, b, c, d = struct.unpack_from("<IIII", data, i)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        h = (h + _U32LE.unpack_from(data, i)[0] * _P3) & _M32
        h = (_rotl(h, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (h + data[i] * _P5) & _M32
        h = (_rotl(h, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


# --- decompression ------------------------------------------------------------------------------------


def _snappy_raw_length(block: memoryview) -> int:
    """The uncompressed length a raw snappy block declares (its leading varint)."""
    result = shift = 0
    for i in range(min(5, len(block))):
        b = block[i]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result
        shift += 7
    raise CompressionError("snappy: bad uncompressed-length header")


def _snappy_block(block: memoryview, budget: int) -> bytes:
    if _snappy_raw_length(block) > budget:
        raise DecompressionLimitError(
            f"snappy: block declares {_snappy_raw_length(block)} bytes, beyond the {budget}-byte budget"
        )
    import cramjam

    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_decompress(data: bytes | memoryview, limit: int) -> bytes:
    mv = memoryview(data)
    if bytes(mv[:8]) != _XERIAL_MAGIC:
        return _snappy_block(mv, limit)
    # Xerial framing: magic, int32 version, int32 min-compatible version, then length-prefixed blocks.
    pos, end = 16, len(mv)
    out = []
    while pos < end:
        if pos + 4 > end:
            raise CompressionError("xerial snappy: truncated block length")
        (n,) = _I32.unpack_from(mv, pos)
        pos += 4
        if n < 0 or pos + n > end:
            raise CompressionError(f"xerial snappy: block length {n} runs past the payload")
        block = _snappy_block(mv[pos : pos + n], limit)
        limit -= len(block)
        out.append(block)
        pos += n
    return b"".join(out)


def _lz4_decompress_lenient(data: bytes | memoryview, limit: int) -> bytes:
    import lz4.block

    """Walk an LZ4 frame by hand, ignoring the header checksum byte (KAFKA-3160)."""
    mv = memoryview(data)
    end = len(mv)
    if end < 7 or bytes(mv[:4]) != _LZ4_MAGIC:
        raise CompressionError("lz4: not an LZ4 frame (bad magic)")
    flg, bd = mv[4], mv[5]
    if flg >> 6 != 1:
        raise CompressionError(f"lz4: unsupported frame version {flg >> 6}")
    block_checksum = bool(flg & 0x10)
    content_size = bool(flg & 0x08)
    content_checksum = bool(flg & 0x04)
    dict_id = bool(flg & 0x01)
    max_block = _LZ4_BLOCK_SIZES.get((bd >> 4) & 7)
    if max_block is None:
        raise CompressionError(f"lz4: bad block-size descriptor {bd:#x}")
    pos = 6 + (8 if content_size else 0) + (4 if dict_id else 0) + 1  # +1: the header checksum byte
    out = []
    while True:
        if pos + 4 > end:
            raise CompressionError("lz4: frame ends without an end mark")
        (n,) = _U32LE.unpack_from(mv, pos)
        pos += 4
        if n == 0:
            break
        stored = bool(n & 0x80000000)
        n &= 0x7FFFFFFF
        if pos + n > end:
            raise CompressionError(f"lz4: block of {n} bytes runs past the payload")
        block = mv[pos : pos + n]
        piece = bytes(block) if stored else lz4.block.decompress(block, uncompressed_size=max_block)
        limit -= len(piece)
        if limit < 0:
            raise DecompressionLimitError("lz4: frame inflates beyond the limit")
        out.append(piece)
        pos += n + (4 if block_checksum else 0)
    if content_checksum:
        pos += 4
    if pos > end:
        raise CompressionError("lz4: truncated frame trailer")
    return b"".join(out)


def _lz4_decompress(data: bytes | memoryview, limit: int) -> bytes:
    import lz4.frame

    dobj = lz4.frame.LZ4FrameDecompressor()
    try:
        out = dobj.decompress(data, max_length=limit + 1)
    except RuntimeError:
        # Most likely KAFKA-3160's broken header checksum (magic 0): walk the frame ourselves.
        return _lz4_decompress_lenient(data, limit)
    if len(out) > limit:
        raise DecompressionLimitError(f"lz4: frame inflates beyond {limit} bytes")
    if not dobj.eof:
        raise CompressionError("lz4: truncated frame")
    return out


def _over(name: str, limit: int) -> DecompressionLimitError:
    return DecompressionLimitError(f"{name}: payload inflates beyond {limit} bytes (the batch size limit)")


_ZSTD = threading.local()


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """This thread's ``ZstdDecompressor``. Building one allocates and clears a decompression context,
    which cost more than decompressing a typical batch; each ``decompressobj()`` resets it, and an
    instance must not be shared between threads."""
    dctx = getattr(_ZSTD, "dctx", None)
    if dctx is None:
        import zstandard

        dctx = _ZSTD.dctx = zstandard.ZstdDecompressor()
    return dctx


def _zstd_decompress(data: bytes | memoryview, limit: int) -> bytes:
    # A stream decompressor, because zstd-jni does not write the frame content size; fed in small pieces
    # so that the output can be stopped at the limit. Concatenated frames are read as ZstdInputStream does.
    # A zstd block inflates at most 32768-fold (a 4-byte RLE block to 128 KiB), so a piece of limit/32768
    # bytes cannot return much more than the limit in one call: a small batch takes a single call.
    feed = max(_FEED, limit >> 15)
    mv = memoryview(data)
    out: list[bytes] = []
    size = pos = 0
    end = len(mv)
    while pos < end:
        dobj = _zstd_decompressor().decompressobj()
        while pos < end and not dobj.eof:
            piece = dobj.decompress(mv[pos : pos + feed])
            pos += feed
            size += len(piece)
            if size > limit:
                raise _over("zstd", limit)
            out.append(piece)
        if not dobj.eof:
            raise CompressionError("zstd: truncated frame")
        pos -= len(dobj.unused_data)
    return b"".join(out)


def _gzip_decompress(data: bytes | memoryview, limit: int) -> bytes:
    # GZIPInputStream reads concatenated members; max_length bounds each call's output.
    mv = memoryview(data)
    out: list[bytes] = []
    size = pos = 0
    end = len(mv)
    while pos < end:
        dobj = zlib.decompressobj(wbits=31)
        tail = b""
        while not dobj.eof:
            if not tail:
                if pos >= end:
                    raise CompressionError("gzip: compressed data ended before the end-of-stream marker")
                tail = mv[pos : pos + _FEED]
                pos += len(tail)
            piece = dobj.decompress(tail, limit + 1 - size)
            tail = dobj.unconsumed_tail
            size += len(piece)
            if size > limit:
                raise _over("gzip", limit)
            out.append(piece)
        rest = len(dobj.unused_data) + len(tail)
        pos -= rest
        if not bytes(mv[pos:]).strip(b"\0"):
            break  # trailing padding after the last member, as gzip.decompress accepts
    return b"".join(out)


def decompress(codec: int, data: bytes | memoryview, *, limit: int = DEFAULT_MAX_BATCH_BYTES) -> bytes:
    """Decompress a Kafka payload (``CompressionType.wrapForInput``), at most ``limit`` bytes of output.

    Raises :class:`CompressionError` for a corrupt payload and :class:`DecompressionLimitError` (a
    subclass) as soon as the output would exceed ``limit``.
    """
    try:
        if codec == GZIP:
            return _gzip_decompress(data, limit)
        if codec == SNAPPY:
            return _snappy_decompress(data, limit)
        if codec == LZ4:
            return _lz4_decompress(data, limit)
        if codec == ZSTD:
            return _zstd_decompress(data, limit)
        if codec == NONE:
            return bytes(data)
    except CompressionError:
        raise
    except Exception as exc:  # each library raises its own types; callers need one
        name = CODEC_NAMES.get(codec, codec)
        raise CompressionError(f"{name}: {type(exc).__name__}: {exc}") from exc
    raise CompressionError(f"unknown compression codec {codec}")


# --- compression --------------------------------------------------------------------------------------


def _snappy_xerial(data: bytes) -> bytes:
    import cramjam

    mv = memoryview(data)
    parts = [_XERIAL_HEADER]
    for i in range(0, len(mv), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(mv[i : i + _XERIAL_BLOCK]))
        parts.append(_I32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _lz4_frame(data: bytes, magic: int) -> bytes:
    import lz4.frame

    frame = lz4.frame.compress(
        data,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        block_checksum=False,
        store_size=False,
    )
    if magic == 0:
        # KAFKA-3160: magic-0 writers hashed the frame magic together with FLG/BD; brokers of that era
        # verify the broken value, so reproduce it.
        broken = (xxh32(frame[:6]) >> 8) & 0xFF
        frame = frame[:6] + bytes((broken,)) + frame[7:]
    return frame


def compress(codec: int, data: bytes, *, magic: int = 2) -> bytes:
    """Compress ``data`` as a Kafka producer would for message format ``magic``."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        import gzip

        return gzip.compress(data, compresslevel=6, mtime=0)
    if codec == SNAPPY:
        return _snappy_xerial(data)
    if codec == LZ4:
        if magic not in (0, 1, 2):
            raise CompressionError(f"unknown magic {magic}")
        return _lz4_frame(data, magic)
    if codec == ZSTD:
        if magic < 2:
            # KIP-110: zstd needs message format v2; brokers reject it in older formats.
            raise CompressionError("zstd requires magic 2")
        import zstandard

        return zstandard.ZstdCompressor(level=3).compress(data)
    raise CompressionError(f"unknown compression codec {codec}")
