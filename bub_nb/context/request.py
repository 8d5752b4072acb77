"""The whole request the next turn sends: system prompt, memory block, view, prompt and tools, each with its tokens.

A view is only part of what a model receives. The next request also carries the system prompt (with the
``<memory>`` block inside it), the prompt being typed and the tool schemas, and the endpoint counts the reply
priming too. :func:`next_request` splits that request into parts whose tokens add up to exactly what the
request counts: :func:`~bub_nb.context.tokens.count_messages_tokens` of its messages (the reply priming
included, once) plus :func:`~bub_nb.context.tokens.count_tools_tokens` of its tools.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from bub_nb.context.display import message_preview
from bub_nb.context.messages import Message
from bub_nb.context.tokens import REPLY_PRIMING, count_message_tokens, count_text_tokens, count_tools_tokens
from bub_nb.context.view import View
from bub_nb.tape.reports.prices import format_cost, priced_cost

PROMPT_PLACEHOLDER: Final = "(the prompt you type next)"
PARTS: Final = ("system prompt", "memory block", "view", "prompt", "reply priming", "tool schemas")
_MEMORY_BLOCK: Final = re.compile(r"<memory>\n.*?\n</memory>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class RequestPart:
    """One part of a request: its name (one of :data:`PARTS`), its tokens and one line saying what it holds."""

    name: str
    tokens: int
    detail: str


@dataclass(frozen=True, slots=True)
class RepeatedPrefix:
    """How much of a request repeats the start of the previous one: what an endpoint's prompt cache can reuse.

    ``messages`` and ``tokens`` are the leading messages the two requests share, whole and in order, and their
    tokens by the project's counter; ``previous_tokens`` is the previous request's own count (its messages, the
    reply priming left out) and ``previous`` names it (``turn #12``). A cache works on tokens, so an endpoint may
    reuse a few more, from the start of the first message that differs.
    """

    messages: int
    tokens: int
    previous_tokens: int
    previous: str

    @property
    def share(self) -> float:
        """The repeated tokens as a share of the previous request (0 when it had none)."""
        return self.tokens / self.previous_tokens if self.previous_tokens else 0.0


def repeated_prefix(previous: Sequence[Message], messages: Sequence[Message], name: str = "") -> RepeatedPrefix:
    """The leading messages ``messages`` shares with ``previous``, and their tokens (see :class:`RepeatedPrefix`)."""
    shared = 0
    for before, now in zip(previous, messages, strict=False):
        if before != now:
            break
        shared += 1
    return RepeatedPrefix(
        shared,
        sum(count_message_tokens(message) for message in messages[:shared]),
        sum(count_message_tokens(message) for message in previous),
        name,
    )


@dataclass(frozen=True, slots=True)
class NextRequest:
    """The request the next turn would send, in parts, against the model's context window (``None``: unknown)."""

    parts: tuple[RequestPart, ...]
    messages: tuple[Message, ...]
    tools: tuple[Mapping[str, Any], ...]
    view: View
    window: int | None = None
    model: str = ""
    tools_in_window: bool = True
    """Whether the model counts the tool schemas against its window (an endpoint does; the offline model does not)."""
    repeated: RepeatedPrefix | None = None
    """What the request repeats of the last turn's last request (``None``: no recorded turn to compare with)."""

    @property
    def total_tokens(self) -> int:
        """The tokens of the whole request: the parts' sum, which is what the request itself counts."""
        return sum(part.tokens for part in self.parts)

    @property
    def window_tokens(self) -> int:
        """The tokens the model measures against its window: the total, less the tool schemas if it leaves them out."""
        return self.total_tokens - (0 if self.tools_in_window else self.tokens_of("tool schemas"))

    @property
    def room(self) -> int | None:
        """Tokens the window has left for the answer (negative when the request does not fit)."""
        return None if self.window is None else self.window - self.window_tokens

    @property
    def cost(self) -> float | None:
        """What the whole request's tokens would cost as input at the model's price (``None``: no price set)."""
        return priced_cost(self.model, self.total_tokens, 0)

    def tokens_of(self, name: str) -> int:
        """The tokens of the part called ``name`` (see :data:`PARTS`)."""
        return next(part.tokens for part in self.parts if part.name == name)

    def to_text(self) -> str:
        return "\n".join(request_lines(self))

    def __str__(self) -> str:
        return self.to_text()


def next_request(
    view: View,
    system_prompt: str,
    tools: Iterable[Mapping[str, Any]] = (),
    *,
    prompt: str = PROMPT_PLACEHOLDER,
    window: int | None = None,
    model: str = "",
    tools_in_window: bool = True,
) -> NextRequest:
    """The request of ``system_prompt``, then ``view``'s messages, then ``prompt`` as the user's, sent with ``tools``.

    The memory block is counted out of the system prompt it sits in; the reply priming is a part of its own,
    so the parts add up to the request's count.
    """
    system: Message = {"role": "system", "content": system_prompt}
    user: Message = {"role": "user", "content": prompt}
    schemas = tuple(tools)
    block = _MEMORY_BLOCK.search(system_prompt)
    memory = count_text_tokens(block.group(0)) if block else 0
    names = [str((schema.get("function") or {}).get("name", "?")) for schema in schemas]
    start = f"from anchor {view.anchor.name} (#{view.anchor.id})" if view.anchor is not None else "from the first entry"
    parts = (
        RequestPart("system prompt", count_message_tokens(system) - memory, _first_line(system_prompt)),
        RequestPart("memory block", memory, _memory_detail(block.group(0) if block else "")),
        RequestPart("view", sum(view.tokens), f"[{view.mode}] {start}: {len(view.messages)} messages"),
        RequestPart("prompt", count_message_tokens(user), message_preview(user, 60)),
        RequestPart("reply priming", REPLY_PRIMING, "what every chat request adds for the answer to start"),
        RequestPart("tool schemas", count_tools_tokens(dict(schema) for schema in schemas), _tools_detail(names)),
    )
    return NextRequest(parts, (system, *view.messages, user), schemas, view, window, model, tools_in_window)


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(empty)"
    return line if len(line) <= 60 else line[:59] + "…"


def _memory_detail(block: str) -> str:
    inner = " ".join(block.removeprefix("<memory>").removesuffix("</memory>").split())
    if not block:
        return "(no <memory> block)"
    return inner if len(inner) <= 60 else inner[:59] + "…"


def _tools_detail(names: list[str]) -> str:
    if not names:
        return "(no tools)"
    listed = ", ".join(names[:6]) + (f", … {len(names) - 6} more" if len(names) > 6 else "")
    return f"{len(names)} tools: {listed}"


def gauge_text(used: int, window: int | None, width: int = 40) -> str:
    """``[#######.....] 312 / 800 tokens (39%)``: a window gauge for terminals; without a window, the count."""
    if window is None:
        return f"{used} tokens (window unknown)"
    filled = min(width, round(width * used / window)) if window else width
    over = " OVER THE WINDOW" if used > window else ""
    return f"[{'#' * filled}{'.' * (width - filled)}] {used} / {window} tokens ({round(100 * used / window)}%){over}"


def request_lines(request: NextRequest) -> list[str]:
    """The request as text: a gauge, one line per part, the total the gauge draws, then any part the model does not
    count against its window and the whole request."""
    model = f" to {request.model}" if request.model else ""
    who = request.model or "this model"
    outside = [] if request.tools_in_window else [p for p in request.parts if p.name == "tool schemas"]
    lines = [f"The next request{model}", gauge_text(request.window_tokens, request.window)]
    for part in request.parts:
        if part not in outside:
            lines.append(f"  {part.name:<14} {part.tokens:>6}  {part.detail}")
    if outside:
        lines.append(f"  {'counted':<14} {request.window_tokens:>6}  what {who} counts against its window: the gauge")
    else:
        lines.append(f"  {'total':<14} {request.total_tokens:>6}  the whole request (the parts add up to it)")
    if request.room is not None:
        lines.append(
            f"  {'room left':<14} {request.room:>6}  for the answer"
            if request.room >= 0
            else f"  {'over by':<14} {-request.room:>6}  the next turn overflows: a handoff is written first"
        )
    for part in outside:
        lines.append(
            f"  {part.name:<14} {part.tokens:>6}  {part.detail}; sent too, but {who} does not count them "
            "against its window"
        )
    if outside:
        lines.append(f"  {'whole request':<14} {request.total_tokens:>6}  every part above, as sent")
    if request.cost is not None:
        lines.append(f"  {'input cost':<14} {format_cost(request.cost):>6}  the whole request at {who}'s input price")
    if request.repeated is not None:
        lines.append(f"  {'repeated':<14} {request.repeated.tokens:>6}  {repeated_detail(request.repeated)}")
    if request.view.recalled:
        lines.append(f"  recalled for the prompt, in the view: {recalled_detail(request.view)}")
    return lines


def recalled_detail(view: View) -> str:
    """The entries a recall mode brought into ``view``, each with its score, and what ranked them."""
    found = ", ".join(f"#{entry} (score {score:.2f})" for entry, score in view.recalled)
    return found + (f", ranked by {view.recalled_by}" if view.recalled_by else "")


def repeated_detail(repeated: RepeatedPrefix) -> str:
    """One line on what a request repeats of the previous one, as its request lines and widget say it."""
    if not repeated.messages:
        return f"nothing of {repeated.previous}'s request is repeated: a new prefix, no prompt cache to reuse"
    return (
        f"the first {repeated.messages} messages of {repeated.previous}'s request, sent again in order: "
        f"{round(100 * repeated.share)}% of its {repeated.previous_tokens}, what a prompt cache can reuse"
    )
