"""The widgets' palette: one colour per concept, apart for colour-blind readers, listed in docs/widgets.md; sizes
from JupyterLab's variables, nothing under 13 px, no faded text."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from colorspacious import cspace_convert

from bub_nb.notebook.widgets._gauge import PART_COLORS
from bub_nb.notebook.widgets._style import CSS, KIND_COLORS, PALETTE, ink
from bub_nb.notebook.widgets._timeline_bars import COLORS as TIMELINE_COLORS
from bub_nb.notebook.widgets.context_diff import _DIFF_CSS
from bub_nb.notebook.widgets.lanes import COLORS as LANE_COLORS

DOC = Path(__file__).resolve().parents[2] / "docs" / "widgets.md"
#: CAM02-UCS distance two concepts keep at least, seen with full deuteranopia (about 2 is "just noticeable").
APART = 12.0


def seen(color: str, deficiency: str | None = None) -> np.ndarray:
    rgb = np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)]) / 255
    if deficiency is not None:
        space = {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}
        rgb = np.clip(cspace_convert(rgb, space, "sRGB1"), 0, 1)
    return np.asarray(cspace_convert(rgb, "sRGB1", "CAM02-UCS"))


def closest(deficiency: str | None) -> tuple[float, str, str]:
    return min(
        (float(np.linalg.norm(seen(a.color, deficiency) - seen(b.color, deficiency))), x, y)
        for (x, a), (y, b) in itertools.combinations(PALETTE.items(), 2)
    )


@pytest.mark.parametrize("deficiency", [None, "deuteranomaly", "protanomaly"])
def test_every_two_concepts_stay_apart_for_colour_blind_readers(deficiency: str | None) -> None:
    distance, a, b = closest(deficiency)
    assert distance >= APART, f"{a} and {b} are {distance:.1f} apart seen with {deficiency or 'normal vision'}"


def test_a_metric_that_calls_colours_apart_is_tried_on_two_that_are_not() -> None:
    """Red and green, the pair the diff strips used to tell apart, collapse under the same simulation."""
    red, green = seen("#e15759", "deuteranomaly"), seen("#59a14f", "deuteranomaly")
    assert float(np.linalg.norm(red - green)) < APART


def test_every_widget_draws_a_concept_in_the_palettes_colour_and_no_colour_means_two_things() -> None:
    colours = {concept.color for concept in PALETTE.values()}
    used = {*KIND_COLORS.values(), *PART_COLORS.values(), *TIMELINE_COLORS.values(), *LANE_COLORS.values()}
    assert used <= colours
    assert len(colours) == len(PALETTE)
    # A theme variable's fallback (JupyterLab's brand colour for the window's ring) is the theme's, not ours.
    ours = re.sub(r"var\(--jp-[\w-]+,\s*#[0-9a-fA-F]{6}\)", "", CSS + _DIFF_CSS)
    hexes = set(re.findall(r"#[0-9a-fA-F]{6}\b", ours))
    assert {h.lower() for h in hexes} <= colours


def test_text_on_a_colour_is_the_ink_that_contrasts_with_it() -> None:
    def luminance(color: str) -> float:
        def channel(value: float) -> float:
            return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4

        r, g, b = (channel(int(color[i : i + 2], 16) / 255) for i in (1, 3, 5))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    for concept in PALETTE.values():
        light, dark = luminance(concept.color) + 0.05, 0.05
        contrast = light / dark if ink(concept.color) == "#000" else 1.05 / light
        assert contrast >= 4.5, f"{concept.label}: {ink(concept.color)} on {concept.color} is {contrast:.1f}:1"


def test_docs_widgets_lists_every_concept_with_its_colour() -> None:
    page = DOC.read_text(encoding="utf-8")
    for concept in PALETTE.values():
        assert re.search(rf"\|[^|\n]*`{concept.color}`[^|\n]*\|\s*{re.escape(concept.label)}\s*\|", page), concept


def test_text_sizes_come_from_jupyterlab_and_none_is_fixed_under_13_px_or_faded() -> None:
    css = CSS + _DIFF_CSS
    fixed = [int(size) for size in re.findall(r"font(?:-size)?:[^;}]*?\b(\d+)px", css)]
    assert all(size >= 13 for size in fixed), fixed  # only as fallbacks of the variables: 13 and 14
    assert "var(--jp-content-font-size1" in css and "var(--jp-code-font-size" in css
    assert "opacity" not in css
