"""Checks a turn passes before its first entry is written: a wrong write is permanent, so refuse first.

A refusal raises a :class:`~bub_nb.errors.BubNbError` and leaves the tape's entry count unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from bub_nb.agent.commands import check_command, is_command
from bub_nb.agent.models.base import context_window_of
from bub_nb.agent.models.calibration import estimate_request
from bub_nb.agent.tools import builtin_registry
from bub_nb.context.request import PROMPT_PLACEHOLDER, NextRequest, RepeatedPrefix, next_request, repeated_prefix
from bub_nb.context.strategies import NamedAnchor
from bub_nb.context.tokens import count_messages_tokens
from bub_nb.context.turns import view_of_turn
from bub_nb.context.view import as_strategy
from bub_nb.errors import BubNbError, BudgetError, ContextError, ContextLengthError, PromptTooLongError
from bub_nb.memory.cache import memory_of

if TYPE_CHECKING:
    from bub_nb.agent.models import Model
    from bub_nb.tape import Tape


class TurnSubject(Protocol):
    """What the checks read of the agent about to run a turn (:class:`~bub_nb.agent.Agent` is one)."""

    tape: Tape
    model: Model
    context: Any

    def system_prompt(self, prompt: str = "") -> str: ...

    def view(self) -> Any: ...


def check_turn(agent: TurnSubject, prompt: object, *, commands: bool = True) -> None:
    """Everything a turn needs before it writes: a prompt, a command that parses, a view, a prompt that fits.

    A mode naming an anchor the tape does not hold is refused here, before the system prompt and
    the user message are on the tape.
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise BubNbError(f"Prompt {prompt!r} is empty; write something for the model to answer")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: the tape, UTF-8 JSON Lines, cannot hold it
        raise BubNbError(
            f"Prompt {prompt!r} holds {prompt[exc.start]!r} at {exc.start}, which is not a character UTF-8 "
            "can store; nothing was written"
        ) from None
    if commands and is_command(prompt):
        check_command(prompt, builtin_registry())
        return
    check_mode(agent)
    check_prompt_fits(agent, prompt)
    check_budget(agent, prompt)


def check_mode(agent: TurnSubject) -> None:
    """A view mode that names an anchor must name one the tape holds (an :class:`AnchorNotFoundError`).

    Text is read as the magics read it, so a mode word (``full``, ``phases``) is not taken for an anchor name.
    """
    mode = as_strategy(agent.context) if isinstance(agent.context, str) else agent.context
    if isinstance(mode, NamedAnchor):
        agent.tape.find_anchor(mode.name)


def check_prompt_fits(agent: TurnSubject, prompt: str) -> None:
    """Refuse a prompt that alone, with the system prompt, is over the model's known context window.

    No handoff can help such a prompt (a new phase still has to send it), so it is refused
    before writing rather than recorded, retried after an ``auto_handoff`` anchor, and failed.
    """
    window = context_window_of(agent.model)
    if window is None:
        return
    messages = [{"role": "system", "content": agent.system_prompt(prompt)}, {"role": "user", "content": prompt}]
    tokens = estimate_request(agent.model, messages)
    if tokens > window:
        raise ContextLengthError(
            f"The prompt alone is ≈ {tokens} tokens with the system prompt, over the {window}-token context "
            f"window of {agent.model.name!r}; nothing was written: shorten it or use a model with a larger window"
        )


def check_recorded_prompt_fits(agent: TurnSubject, prompt: str, prompt_id: int | None) -> None:
    """:func:`check_prompt_fits` once the prompt is on the tape (the endpoint told the window only on refusing it).

    The error says what the tape now holds: the prompt, kept but left out of later views (so the next turn
    does not overflow on it), and no handoff. Raises :class:`~bub_nb.errors.PromptTooLongError`.
    """
    try:
        check_prompt_fits(agent, prompt)
    except ContextLengthError as exc:
        tokens = str(exc).partition("; nothing was written")[0]
        where = f" (#{prompt_id})" if prompt_id is not None else ""
        raise PromptTooLongError(
            f"{tokens}; the prompt{where} and this error are kept on the tape, the prompt left out of later "
            "views, and no handoff was written: shorten it or use a model with a larger window"
        ) from None


def prompt_estimate(agent: TurnSubject, prompt: str) -> int:
    """The tokens the turn's first request would send: the system prompt, the view and the prompt (writes nothing)."""
    view = agent.view()
    messages = [
        {"role": "system", "content": agent.system_prompt(prompt)},
        *view.messages,
        {"role": "user", "content": prompt},
    ]
    return count_messages_tokens(messages)


def request_preview(agent: TurnSubject, prompt: str = PROMPT_PLACEHOLDER) -> NextRequest:
    """The whole request the agent's next turn would send for ``prompt``, in parts, against its model's window.

    Writes nothing: what the turn writes before its first request (``session/start`` on a tape without an anchor,
    the memory zone, the system prompt and the prompt) goes to a fork that is dropped, and the view is built there,
    so it is the view the turn will send in any mode (a window counts the prompt among its messages).
    """
    tape = agent.tape
    with tape.fork(merge_back=False):
        tape.ensure_bootstrap_anchor()
        memory_of(tape, ensure=True)
        system = agent.system_prompt(prompt)
        tape.append_system(system)
        asked = tape.append_message({"role": "user", "content": prompt})
        view = agent.view()
    if view.sources and view.sources[-1] == asked.id:  # the prompt is a part of its own
        view = replace(view, messages=view.messages[:-1], tokens=view.tokens[:-1], sources=view.sources[:-1])
    tools = getattr(agent, "tools", None)
    request = next_request(
        view,
        system,
        tools.schemas() if tools is not None else [],
        prompt=prompt,
        window=context_window_of(agent.model),
        model=agent.model.name,
        tools_in_window=bool(getattr(agent.model, "counts_tool_schemas", True)),
    )
    return replace(request, repeated=_repeated_of_last_turn(tape, request))


def _repeated_of_last_turn(tape: Tape, request: NextRequest) -> RepeatedPrefix | None:
    """What ``request`` repeats of the tape's last turn's last request; ``None`` when no turn can be rebuilt."""
    try:
        last = view_of_turn(tape, -1)
    except ContextError:  # no turn yet, or one that recorded no view
        return None
    return repeated_prefix(last.messages, request.messages, f"turn #{last.run_entry_id}")


def check_budget(agent: TurnSubject, prompt: str) -> None:
    """Refuse a turn whose estimated first request is over the agent's ``budget`` of tokens, if it has one."""
    budget = getattr(agent, "budget", None)
    if budget is None:
        return
    tokens = prompt_estimate(agent, prompt)
    if tokens > budget:
        raise BudgetError(
            f"The prompt would be ≈ {tokens} tokens, over the budget of {budget}; nothing was written: "
            "hand off (%handoff NAME summary=..., or tape.handoff in Python) so the view starts smaller, "
            "or raise the budget"
        )
