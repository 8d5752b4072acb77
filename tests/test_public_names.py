"""The package's public names: each one listed once, sorted, offered by dir() and tab completion, and importable."""

from __future__ import annotations

import bub_nb


def test_dir_offers_every_public_name_the_lazy_ones_included() -> None:
    names = dir(bub_nb)
    assert set(bub_nb.__all__) <= set(names), sorted(set(bub_nb.__all__) - set(names))
    assert set(bub_nb._HOMES) <= set(bub_nb.__all__)
    assert bub_nb.__all__ == sorted(bub_nb.__all__, key=lambda name: (not name.isupper(), name))


def test_every_public_name_resolves() -> None:
    for name in bub_nb.__all__:
        assert getattr(bub_nb, name) is not None, name
