"""read's image path: the four formats by magic bytes, the 3,750,000-byte cap, None for the rest."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

import pytest

from cox.actors.tools.images import MAX_IMAGE_BYTES, read_image, sniff_image


def tiny_png() -> bytes:
    """A real 1x1 PNG, built by hand so the test needs no image library."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


HEADS = {
    "image/png": b"\x89PNG\r\n\x1a\n" + b"\0" * 8,
    "image/jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
    "image/gif": b"GIF89a\x01\x00\x01\x00",
    "image/webp": b"RIFF\x24\x00\x00\x00WEBPVP8 ",
}


@pytest.mark.parametrize("media_type", sorted(HEADS))
def test_each_format_is_sniffed_by_magic_bytes_not_extension(tmp_path: Path, media_type: str) -> None:
    f = tmp_path / "picture.txt"  # the extension lies; the bytes decide
    f.write_bytes(HEADS[media_type] + b"rest")
    res = read_image(f)
    assert res is not None and res.ok
    assert res.images == [{"media_type": media_type, "data": base64.b64encode(f.read_bytes()).decode()}]
    assert res.visible.startswith(f"{media_type}, ")


def test_gif87a_and_a_real_png(tmp_path: Path) -> None:
    assert sniff_image(b"GIF87a....") == "image/gif"
    png = tmp_path / "dot.png"
    png.write_bytes(tiny_png())
    res = read_image(png)
    assert res is not None and res.meta["media_type"] == "image/png"
    assert base64.b64decode(res.images[0]["data"]) == png.read_bytes()  # type: ignore[index]


def test_visible_is_media_type_and_size(tmp_path: Path) -> None:
    f = tmp_path / "big.png"
    f.write_bytes(HEADS["image/png"] + b"x" * (12 * 1024 - 16))
    res = read_image(f)
    assert res is not None and res.visible == "image/png, 12 KiB"
    assert res.meta["bytes"] == 12 * 1024


def test_not_an_image_returns_none(tmp_path: Path) -> None:
    for name, data in {"a.png": b"just text", "b.bin": b"\0\1\2\3", "empty.gif": b"", "riff.wav": b"RIFF\0\0\0\0WAVEfmt "}.items():
        (tmp_path / name).write_bytes(data)
        assert read_image(tmp_path / name) is None, name
    assert read_image(tmp_path / "missing.png") is None


def test_at_the_cap_is_fine_and_over_it_is_too_large(tmp_path: Path) -> None:
    ok = tmp_path / "ok.jpg"
    ok.write_bytes(HEADS["image/jpeg"] + b"x" * (MAX_IMAGE_BYTES - len(HEADS["image/jpeg"])))
    res = read_image(ok)
    assert res is not None and res.ok and res.meta["bytes"] == MAX_IMAGE_BYTES
    big = tmp_path / "big.jpg"
    big.write_bytes(HEADS["image/jpeg"] + b"x" * (MAX_IMAGE_BYTES + 1 - len(HEADS["image/jpeg"])))
    res = read_image(big)
    assert res is not None and not res.ok
    assert res.visible.startswith("too_large:")
    assert "3,750,001 bytes" in res.visible and res.images is None
