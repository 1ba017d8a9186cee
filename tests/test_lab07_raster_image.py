"""Lab 07's large timelines as images: charts.palette_png writes timeline_raster's grid as a
palette PNG, decoded here by hand (zlib and the PNG chunk layout, not the code under test), and
labs.core.timeline_svg places it where the raster's bins lie on the time axis (test_lab07_svg)."""

import base64
import struct
import zlib

import numpy as np
import pytest

from labs.core import charts
from labs.core.engine.pipeline import OpCosts, timeline


def decode_png(uri: str) -> tuple[np.ndarray, list[str]]:
    """(the grid of palette indices, the palette as "#rrggbb") of an 8-bit palette PNG data URI
    whose lines use filter type 0."""
    head, data = uri.split(",", 1)
    assert head == "data:image/png;base64"
    png = base64.b64decode(data)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks = 8, {}
    while at < len(png):
        (n,), kind = struct.unpack(">I", png[at:at + 4]), png[at + 4:at + 8]
        body, crc = png[at + 8:at + 8 + n], struct.unpack(">I", png[at + 8 + n:at + 12 + n])[0]
        assert zlib.crc32(kind + body) == crc
        chunks[kind] = chunks.get(kind, b"") + body
        at += 12 + n
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, color, interlace) == (8, 3, 0) and b"IEND" in chunks
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), dtype=np.uint8).reshape(height, width + 1)
    assert (raw[:, 0] == 0).all()  # filter type none on every line
    palette = [f"#{chunks[b'PLTE'][i:i + 3].hex()}" for i in range(0, len(chunks[b"PLTE"]), 3)]
    return raw[:, 1:], palette


@pytest.mark.parametrize("p, m, schedule, v, costs", [(64, 256, "1f1b", 1, OpCosts()), (64, 256, "interleaved", 2, OpCosts()),
                                                      (32, 128, "zb-h2", 1, OpCosts(1.0, 1.3, 0.7)), (64, 64, "interleaved", 4, OpCosts(1.0, 2.0, 0.5))])
def test_the_image_is_the_raster(p, m, schedule, v, costs):
    t = timeline(p, m, schedule, v, costs)
    z, _ = charts.timeline_raster(t)
    pixels, palette = decode_png(charts.palette_png(z, charts.TIMELINE_IMAGE_COLORS))
    assert pixels.shape == z.shape == (p, z.shape[1]) and np.array_equal(pixels, z)
    assert [c.lower() for c in palette] == [c.lower() for c in (charts.IDLE_COLOR, charts.OP_COLORS["F"], charts.OP_COLORS["B"], charts.OP_COLORS["W"])]
    # every op kind the timeline runs shows, and idle shows as much as the timeline idles
    assert set(np.unique(pixels)) == {0} | {1 + "FBW".index(o) for o in set(t.op)}
    print(f"{schedule} p={p} m={m}: idle pixels {(pixels == 0).mean():.4f}, idle time {t.bubble_fraction('total'):.4f}")
    assert (pixels == 0).mean() == pytest.approx(t.bubble_fraction("total"), abs=2e-3)
    assert len(charts.palette_png(z, charts.TIMELINE_IMAGE_COLORS)) < 20_000  # a few kB, not the raster's bytes
