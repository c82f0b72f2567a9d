"""Corruptions of a valid encoding, for tests that compare two readers on valid and damaged bytes alike."""

from __future__ import annotations

from hypothesis import strategies as st


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` as it is, cut short, with bytes overwritten (a length, a version, anything), or with bytes
    appended."""
    how = draw(st.sampled_from(["as is", "cut", "overwrite", "append", "overwrite and cut"]))
    out = bytearray(data)
    if how in ("overwrite", "overwrite and cut") and out:
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(out) - 1))
            out[at] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, draw(st.integers(0, 255))]))
    if how in ("cut", "overwrite and cut"):
        del out[draw(st.integers(0, len(out))) :]
    if how == "append":
        out += draw(st.binary(min_size=1, max_size=8))
    return bytes(out)
