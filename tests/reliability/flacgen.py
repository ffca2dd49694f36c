"""Long silent FLAC built frame by frame (CONSTANT subframes): 3 h in ~0.2 MB and < 1 s,
where ffmpeg needs tens of seconds on a busy machine. Valid FLAC: sync, CRC-8 headers, CRC-16
frames; the STREAMINFO length may be left unknown (0) like a streamed encode."""

from __future__ import annotations


def _crc8(data: bytes) -> int:
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def _crc16(data: bytes) -> int:
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def _utf8_number(n: int) -> bytes:
    """FLAC's frame number coding is UTF-8's (surrogatepass: the code points are plain numbers)."""
    return chr(n).encode("utf-8", "surrogatepass") if n < 0x110000 else b""


def silent_flac(seconds: int, declare_length: bool = False) -> bytes:
    """``seconds`` of 8 kHz 16-bit mono silence; ``declare_length``: STREAMINFO says how long."""
    block, rate = 4608, 8000
    frames = seconds * rate // block
    total = frames * block if declare_length else 0
    info = (block.to_bytes(2, "big") * 2 + b"\0" * 6
            + ((rate << 44) | (0 << 41) | (15 << 36) | total).to_bytes(8, "big") + b"\0" * 16)
    out = [b"fLaC", bytes([0x80, 0, 0, len(info)]), info]
    for n in range(frames):
        head = b"\xff\xf8\x54\x08" + _utf8_number(n)
        head += bytes([_crc8(head)])
        body = head + b"\x00\x00\x00"  # CONSTANT subframe, value 0
        out.append(body + _crc16(body).to_bytes(2, "big"))
    return b"".join(out)
