"""Running code in a namespace as a cell would: printed text shown and kept, the last expression's value,
the exception, and the figures it drew, all in one outcome."""

from __future__ import annotations

import ast
import contextlib
import itertools
import linecache
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from bub_nb.agent.kernel_tools.limits import Limits, safe_repr, shorten

_COUNTER = itertools.count(1)
TRACEBACK_CHARS = 3000


@dataclass(frozen=True, slots=True)
class Execution:
    """What running one piece of code gave; ``text()`` is what the model reads."""

    code: str
    stdout: str
    stderr: str
    result: str | None
    error: str | None
    figures: tuple[str, ...]
    seconds: float

    def text(self, limits: Limits | None = None) -> str:
        limits = limits or Limits()
        status = "failed" if self.error else "ran"
        parts = [f"The code {status} in {self.seconds:.2f} s."]
        for title, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            if text:
                parts.append(f"{title}:\n{shorten(text.rstrip(), limits.chars * 2)}")
        if self.result is not None:
            parts.append(f"result: {self.result}")
        if self.error:
            parts.append(f"exception:\n{self.error}")
        parts += [f"figure shown in the cell: {figure}" for figure in self.figures]
        if len(parts) == 1:
            parts.append("It printed nothing and its last line has no value.")
        return "\n".join(parts)


class _Tee:
    """A stream that writes through to the cell's stream and keeps a copy."""

    def __init__(self, through: TextIO | None) -> None:
        self.through = through
        self.kept: list[str] = []

    def write(self, text: str) -> int:
        self.kept.append(text)
        if self.through is not None:
            self.through.write(text)
        return len(text)

    def flush(self) -> None:
        if self.through is not None:
            self.through.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.through, name)


def execute(
    code: str,
    namespace: dict[str, Any],
    *,
    transform: Callable[[str], str] | None = None,
    show: Callable[[Any], None] | None = None,
    limits: Limits | None = None,
) -> Execution:
    """Run ``code`` in ``namespace`` on this thread; a ``KeyboardInterrupt`` goes on, any other exception is kept.

    ``transform`` turns notebook syntax into Python (IPython's ``%magic`` and ``!shell`` lines);
    ``show`` displays each figure left open, which is then described and closed.
    """
    limits = limits or Limits()
    filename = f"<python.run {next(_COUNTER)}>"
    source = transform(code) if transform is not None else code
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    out, err = _Tee(sys.stdout), _Tee(sys.stderr)
    result: str | None = None
    error: str | None = None
    started = time.perf_counter()
    before = _open_figures()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # type: ignore[type-var]
        try:
            tree = ast.parse(source, filename)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            assert last is None or isinstance(last, ast.Expr)
            exec(compile(tree, filename, "exec"), namespace)  # the user approved this code, or allowed it always
            if last is not None:
                value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
                if value is not None:
                    result = safe_repr(value, limits)
        except Exception as exc:
            error = _traceback(exc, filename)
    seconds = time.perf_counter() - started
    figures = tuple(_figures(before, show))
    return Execution(code, "".join(out.kept), "".join(err.kept), result, error, figures, seconds)


def _traceback(exc: BaseException, filename: str) -> str:
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if frame.filename.startswith("<python.run")]
    lines = traceback.format_list(frames) + traceback.format_exception_only(type(exc), exc)
    text = "Traceback (most recent call last):\n" + "".join(lines) if frames else "".join(lines)
    return shorten(text.rstrip(), TRACEBACK_CHARS)


def _open_figures() -> set[int]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    return set(pyplot.get_fignums()) if pyplot is not None else set()


def _figures(before: set[int], show: Callable[[Any], None] | None) -> list[str]:
    """Describe (and show, then close) the figures open after the code ran; none when matplotlib is not in use."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    described = []
    for number in pyplot.get_fignums():
        if number in before:
            continue  # open before the code ran: not its figure
        figure = pyplot.figure(number)
        described.append(describe_figure(figure))
        if show is not None:
            show(figure)
        pyplot.close(figure)
    return described


def describe_figure(figure: Any) -> str:
    """A figure in one line: its size, and per axes the title, labels and what is drawn."""
    width, height = (round(inches * figure.dpi) for inches in figure.get_size_inches())
    axes = []
    for ax in figure.get_axes():
        drawn = [
            f"{len(items)} {label}"
            for label, items in (
                ("lines", ax.get_lines()),
                ("collections", ax.collections),
                ("patches", ax.patches),
                ("images", ax.images),
            )
            if len(items)
        ]
        words = [f"title {ax.get_title()!r}" if ax.get_title() else "no title"]
        words += [f"x {ax.get_xlabel()!r}"] if ax.get_xlabel() else []
        words += [f"y {ax.get_ylabel()!r}"] if ax.get_ylabel() else []
        legend = ax.get_legend()
        if legend is not None:
            words.append("legend " + ", ".join(repr(text.get_text()) for text in legend.get_texts()))
        axes.append(f"[{'; '.join(words)}; {', '.join(drawn) or 'nothing drawn'}]")
    return f"{width}×{height} px figure with {len(axes)} axes " + " ".join(axes)
