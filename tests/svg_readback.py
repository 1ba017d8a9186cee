"""Reading the labs' SVG charts back in tests: the markup parsed as XML here, not by the code under
test, and a log axis mapped by hand, so each test checks the chart against the engine independently."""

import math
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def parsed(svg: str, words: tuple[str, ...] = ()) -> ET.Element:
    """The chart as XML, once no NaN or inf has reached its markup (`words`: lower-case text of the
    chart's own that holds "inf", such as "infiniband")."""
    text = svg.lower()
    for word in words:
        text = text.replace(word, "")
    assert "nan" not in text and "inf" not in text
    return ET.fromstring(svg.replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1))


def log_px(v: float, lo: float, hi: float, p0: float, p1: float, pad: float = 0.05) -> float:
    """A log axis from lo to hi, widened by `pad` of its span (in decades) at each end."""
    a, b = math.log10(lo), math.log10(hi)
    a, b = a - pad * (b - a), b + pad * (b - a)
    return p0 + (math.log10(v) - a) / (b - a) * (p1 - p0)
