"""Rendering pictures for tests: a PNG reader, and SVG pages screenshotted by
a real browser (headless Chromium).

``chromium_or_skip()`` finds the browser, or skips the test with the reason;
where ``STRIDEWEAVE_REQUIRE_BROWSER`` is set (CI), a missing browser fails
the test instead. ``STRIDEWEAVE_CHROMIUM`` may name the executable.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

CANDIDATES = ("chromium", "chromium-browser", "chromium-headless-shell", "headless_shell")


def chromium_or_skip() -> str:
    named = os.environ.get("STRIDEWEAVE_CHROMIUM")
    found = (
        shutil.which(named) if named else next(filter(None, map(shutil.which, CANDIDATES)), None)
    )
    if found:
        return found
    reason = (
        f"STRIDEWEAVE_CHROMIUM names {named!r}, which is not an executable"
        if named
        else f"no headless Chromium found (looked for {', '.join(CANDIDATES)} on PATH; "
        "on Debian: apt-get install chromium)"
    )
    if os.environ.get("STRIDEWEAVE_REQUIRE_BROWSER"):
        pytest.fail(f"STRIDEWEAVE_REQUIRE_BROWSER is set but there is {reason}")
    pytest.skip(reason)


def screenshot_svg(browser: str, svg: str, width: int, height: int, folder: Path) -> Path:
    """The browser's screenshot of a page showing svg at its top left, at
    one device pixel per CSS pixel."""
    page = folder / "picture.html"
    page.write_text(
        "<!DOCTYPE html><html><head><style>html,body{margin:0;padding:0;background:#fff}"
        f"svg{{display:block}}</style></head><body>{svg}</body></html>",
        encoding="utf-8",
    )
    shot = folder / "picture.png"
    # A sanitizer runtime preloaded for the test process is not the browser's.
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    run = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--force-color-profile=srgb",
            f"--user-data-dir={folder / 'profile'}",
            f"--window-size={width},{height}",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert run.returncode == 0 and shot.exists(), (
        f"{browser} made no screenshot (exit {run.returncode}): {run.stderr[-2000:]}"
    )
    return shot


def read_png(path: Path) -> list[list[tuple[int, ...]]]:
    """The pixel rows of a non-interlaced 8-bit RGB or RGBA PNG, each pixel
    an (r, g, b) or (r, g, b, a) tuple."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, chunks, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks += body
        pos += 12 + length
    assert header is not None, f"{path} has no IHDR chunk"
    width, height, depth, colour, interlace = header[0], header[1], header[2], header[3], header[6]
    assert depth == 8 and colour in (2, 6) and interlace == 0, (
        f"{path}: depth {depth}, colour type {colour}, interlace {interlace} are not read here"
    )
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(chunks), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp : x * bpp + bpp]) for x in range(width)])
        prev = line
    return rows


def hex_rgb(colour: str) -> tuple[int, int, int]:
    return (int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16))
