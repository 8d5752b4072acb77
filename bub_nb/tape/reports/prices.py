"""Prices per model, as the user gives them, and what a turn's tokens cost: never looked up on the network.

A price table maps a model, as its ``run`` events name it, to what a million tokens cost::

    {"gpt-4o-mini": {"input": 0.15, "output": 0.60}, "offline": {"input": 0, "output": 0}}

The unit is whatever the user prices in (dollars, euros, credits). A model the table does not name
has tokens and no cost (``None``). The table in use is the one given to :func:`set_prices` (the
magics' ``prices`` trait calls it), else the JSON file ``BUB_PRICES`` names, else none.
"""

from __future__ import annotations

import math
import os
import reprlib
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from bub_nb.errors import PriceError

PRICES_VARIABLE = "BUB_PRICES"
SIDES = ("input", "output")
PER_TOKENS = 1_000_000
OPENAI_PREFIX = "openai:"

Prices = dict[str, dict[str, float]]

_lock = threading.Lock()
_given: Prices | None = None
_file_cache: tuple[str, float, Prices] | None = None


def check_prices(table: object, *, where: str = "The price table") -> Prices:
    """``table`` as a clean price table, or a one-line :class:`PriceError` naming what is wrong."""
    if not isinstance(table, Mapping):
        raise PriceError(
            f'{where} must map a model to its prices, like {{"gpt-4o-mini": {{"input": 0.15, "output": 0.6}}}}; '
            f"got {table!r}"
        )
    clean: Prices = {}
    for model, price in table.items():
        if not isinstance(model, str) or not model.strip():
            raise PriceError(f"{where} names model {model!r}; a model is its name as text, e.g. 'gpt-4o-mini'")
        if not isinstance(price, Mapping) or set(price) != set(SIDES):
            raise PriceError(
                f"{where} gives {model!r} the price {price!r}; give exactly 'input' and 'output', "
                "each per million tokens"
            )
        sides: dict[str, float] = {}
        for side in SIDES:
            number = _price(price[side])
            if number is None:
                raise PriceError(
                    f"{where} gives {model!r} the {side} price {reprlib.repr(price[side])}; a price is a finite "
                    "number of at least 0 per million tokens"
                )
            sides[side] = number
        clean[model] = sides
    return clean


def _price(value: object) -> float | None:
    """A price as a float, or None when it is no finite number of at least 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        return None
    return number if math.isfinite(number) and number >= 0 else None


def set_prices(table: Mapping[str, Mapping[str, float]] | None) -> Prices | None:
    """Use ``table`` for every cost from now on (``None`` goes back to ``BUB_PRICES``); it is checked first."""
    global _given
    clean = None if table is None else check_prices(table)
    with _lock:
        _given = clean
    return clean


def current_prices() -> Prices:
    """The table in use: the one given to :func:`set_prices`, else ``BUB_PRICES``'s file, else an empty one."""
    with _lock:
        given = _given
    if given is not None:
        return given
    path = os.environ.get(PRICES_VARIABLE, "").strip()
    return _prices_file(path) if path else {}


def _prices_file(path: str) -> Prices:
    global _file_cache
    file = Path(path).expanduser()
    try:
        stamp = file.stat().st_mtime
        cached = _file_cache
        if cached is not None and cached[:2] == (path, stamp):
            return cached[2]
        raw = file.read_bytes()
    except OSError as exc:
        raise PriceError(f"{PRICES_VARIABLE} names {path!r}, which cannot be read: {exc.strerror or exc}") from None
    try:
        loaded: Any = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise PriceError(f"{PRICES_VARIABLE} names {path!r}, which is not JSON: {exc}") from None
    table = check_prices(loaded, where=f"The price file {path!r}")
    _file_cache = (path, stamp, table)
    return table


def price_of(model: object, prices: Mapping[str, Mapping[str, float]]) -> Mapping[str, float] | None:
    """The price of ``model``: by its name, or by the name without ``openai:``; ``None`` when not priced."""
    if not isinstance(model, str):
        return None
    found = prices.get(model)
    if found is None and model.startswith(OPENAI_PREFIX):
        found = prices.get(model[len(OPENAI_PREFIX) :])
    return found


def cost_of(
    model: object, tokens_in: int | None, tokens_out: int | None, prices: Mapping[str, Mapping[str, float]]
) -> float | None:
    """What a run's tokens cost at ``prices``; ``None`` for a model without a price."""
    price = price_of(model, prices)
    if price is None:
        return None
    return ((tokens_in or 0) * price["input"] + (tokens_out or 0) * price["output"]) / PER_TOKENS


def format_cost(cost: float) -> str:
    """A cost to show: four significant digits, small amounts included (``0.0001234``)."""
    return f"{cost:.4g}" if cost else "0"


def priced_cost(model: object, tokens_in: int | None, tokens_out: int | None) -> float | None:
    """What the tokens cost at the table in use, for a line that shows a cost beside tokens (a footer, a gauge);
    ``None`` for a model without a price, and when the table in use cannot be read (``runs()`` says why)."""
    try:
        prices = current_prices()
    except PriceError:
        return None
    return cost_of(model, tokens_in, tokens_out, prices)
