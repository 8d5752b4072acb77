"""The ``payload`` and ``meta`` columns: JSON values (dicts) in pandas, Arrow's JSON type in Parquet.

A tool result is text when a call succeeded and an object when it failed, so no struct type holds a tape's
payloads; pandas' own ``df.to_parquet`` would try one and fail. A column of this dtype hands Arrow its values as
JSON text marked with Arrow's canonical JSON extension type (``arrow.json``), and ``pd.read_parquet`` gives the
column back as dicts, since the file's pandas metadata names this dtype.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionArray, ExtensionDtype, register_extension_dtype


@register_extension_dtype
class JsonDtype(ExtensionDtype):
    """JSON values (the dicts of a tape line), kept as Python objects."""

    name = "tape_json"
    type = dict  # the scalar type; ``builtins.type`` below names the class of a type
    kind = "O"
    na_value = None

    @classmethod
    def construct_array_type(cls) -> builtins.type[JsonArray]:
        return JsonArray

    def __from_arrow__(self, array: Any) -> JsonArray:
        """Values from an Arrow column of JSON text (``arrow.json`` or plain strings), as Parquet gives it back."""
        import pyarrow as pa

        from bub_nb.tape.frames.arrow import loads

        chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
        texts: list[Any] = []
        for chunk in chunks:
            storage = chunk.storage if isinstance(chunk, pa.ExtensionArray) else chunk
            texts += storage.to_pylist()
        return JsonArray.of([loads(text) if isinstance(text, str) else text for text in texts])


class JsonArray(ExtensionArray):
    """An array of JSON values over a NumPy array of objects, or over their JSON text in Arrow, each value decoded
    when it is first asked for (a frame read natively holds its payloads so: building a dict per row up front
    costs as much as the whole read)."""

    def __init__(self, values: np.ndarray | None, texts: Any = None) -> None:
        self._values = values
        self._texts = texts  # a pyarrow string array of JSON text, while ``_values`` is None

    @classmethod
    def of(cls, values: Sequence[Any]) -> JsonArray:
        """The values as they are (dicts stay the same objects), without NumPy looking inside them."""
        values = values if isinstance(values, list) else list(values)
        # ``fromiter`` stores each value as one object and never asks whether it is a sequence, which
        # assigning the list to an object array's slice does of every row (four times the cost)
        return cls(np.fromiter(values, dtype=object, count=len(values)))

    @classmethod
    def of_text(cls, texts: Any) -> JsonArray:
        """Values held as their JSON text (a pyarrow string array or chunked array), decoded on access."""
        import pyarrow as pa

        if isinstance(texts, pa.ChunkedArray):
            texts = texts.combine_chunks() if texts.num_chunks != 1 else texts.chunk(0)
        return cls(None, texts)

    @property
    def _data(self) -> np.ndarray:
        """Every value, decoded now if it was not yet."""
        if self._values is None:
            from bub_nb.tape.frames.arrow import loads_many

            self._values = np.fromiter(loads_many(self._texts), dtype=object, count=len(self._texts))
            self._texts = None
        return self._values

    @classmethod
    def _from_sequence(cls, scalars: Any, *, dtype: Any = None, copy: bool = False) -> JsonArray:
        return cls.of(list(scalars))

    @classmethod
    def _from_factorized(cls, values: Any, original: JsonArray) -> JsonArray:
        return cls.of(list(values))

    @classmethod
    def _concat_same_type(cls, to_concat: Sequence[JsonArray]) -> JsonArray:
        return cls(np.concatenate([array._data for array in to_concat]) if to_concat else np.empty(0, dtype=object))

    @property
    def dtype(self) -> JsonDtype:
        return JsonDtype()

    @property
    def nbytes(self) -> int:
        return int(self._texts.nbytes if self._values is None else self._values.nbytes)

    def __len__(self) -> int:
        return len(self._texts) if self._values is None else len(self._values)

    def __getitem__(self, item: Any) -> Any:
        if self._values is None:
            from bub_nb.tape.frames.arrow import loads

            if pd.api.types.is_integer(item):
                return loads(self._texts[int(item)].as_py())
            if isinstance(item, slice) and item.step in (None, 1):
                start, stop, _ = item.indices(len(self))
                return type(self)(None, self._texts.slice(start, max(stop - start, 0)))
            item = pd.api.indexers.check_array_indexer(self, item)
            rows = np.arange(len(self))[item]
            return type(self)(None, self._texts.take(rows))
        if pd.api.types.is_integer(item):
            return self._data[item]
        item = pd.api.indexers.check_array_indexer(self, item)
        return type(self)(self._data[item])

    def __setitem__(self, key: Any, value: Any) -> None:
        key = pd.api.indexers.check_array_indexer(self, key)
        if isinstance(value, JsonArray):
            value = value._data
        self._data[key] = value

    def __iter__(self) -> Any:
        return iter(self._data)

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        values = other._data if isinstance(other, JsonArray) else other
        if isinstance(values, np.ndarray | list):
            return np.array([a == b for a, b in zip(self._data, values, strict=True)], dtype=bool)
        return np.array([a == values for a in self._data], dtype=bool)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._data

    def isna(self) -> np.ndarray:
        if self._values is None:
            return self._texts.is_null().to_numpy(zero_copy_only=False)
        return pd.isna(self._data)

    def take(self, indices: Any, *, allow_fill: bool = False, fill_value: Any = None) -> JsonArray:
        from pandas.api.extensions import take

        if self._values is None and not allow_fill:
            rows = np.asarray(indices, dtype=np.int64)
            return type(self)(None, self._texts.take(np.where(rows < 0, rows + len(self), rows)))
        return type(self)(take(self._data, indices, allow_fill=allow_fill, fill_value=fill_value))

    def copy(self) -> JsonArray:
        if self._values is None:
            return type(self)(None, self._texts)  # Arrow arrays do not change
        return type(self)(self._data.copy())

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        if isinstance(dtype, JsonDtype):
            return self.copy() if copy else self
        if pd.api.types.pandas_dtype(dtype) == np.dtype(object):
            return self._data.copy() if copy else self._data
        return super().astype(dtype, copy=copy)

    def _values_for_factorize(self) -> tuple[np.ndarray, Any]:
        from bub_nb.tape.frames.arrow import dumps

        return np.array([dumps(value) for value in self._data], dtype=object), None

    def __arrow_array__(self, type: Any = None) -> Any:
        """The values as Arrow's JSON extension type over JSON text, as ``to_arrow()`` writes them."""
        import pyarrow as pa

        from bub_nb.tape.frames.arrow import json_text

        text = (
            pa.chunked_array([self._texts.cast(pa.large_string())])
            if self._values is None
            else json_text(list(self._data), None)
        )
        json_type = pa.json_(pa.large_string())
        return pa.chunked_array(
            [pa.ExtensionArray.from_storage(json_type, chunk) for chunk in text.chunks], type=json_type
        )


def json_column(values: Sequence[Any]) -> pd.Series:
    """A ``payload`` or ``meta`` column of these values."""
    return pd.Series(JsonArray.of(values), copy=False)


def json_text_column(texts: Any) -> pd.Series:
    """A ``payload`` or ``meta`` column over the values' JSON text (Arrow), each decoded when asked for."""
    return pd.Series(JsonArray.of_text(texts), copy=False)
