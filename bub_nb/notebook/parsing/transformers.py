"""Cells IPython would misread, rewritten into ``%bub`` before it reads them: comma cells and ``%bub`` questions.

**Comma cells.** A cell whose first non-blank character is ``,`` is a bub_nb command, in any cell while the
extension is loaded. IPython would otherwise read ``,handoff name=x`` as autoquote (``handoff("name=x")``). A
cleanup transformer runs before that and turns the cell into ``%%bub`` with the same text, so a comma cell behaves
exactly as it does under ``%%bub``.

**Questions.** A ``%bub`` line that ends in ``?`` is a question for the model, not a request for help. IPython reads
a trailing ``?`` or ``??`` as its help syntax (``obj?``) and would show a docstring instead of running ``%bub what
is a tape?``. A token transformer runs just before IPython's own (``HelpEnd``) and turns such a line into the
``%bub`` call IPython makes for any magic line, question mark included. ``%bub?`` and ``%bub??`` alone, with nothing
to ask, still show the magic's help.
"""

from __future__ import annotations

import tokenize
from typing import Any

from IPython.core.inputtransformer2 import EscapedCommand, HelpEnd

from bub_nb.agent.commands import PREFIX

MAGIC = "bub"


def comma_cell(lines: list[str]) -> list[str]:
    """IPython's cleanup transformer: a comma cell becomes a ``%%bub`` cell, any other cell stays as it is."""
    first = next((line for line in lines if line.strip()), "")
    if not first.lstrip().startswith(PREFIX):
        return lines
    return ["%%bub\n", *lines]


class BubQuestion(EscapedCommand):
    """IPython's transform of an escaped ``%bub`` line, found only where the line ends in ``?``."""

    priority = HelpEnd.priority - 1  # IPython runs the candidate with the lowest priority first

    @classmethod
    def find(cls, tokens_by_line: list[list[tokenize.TokenInfo]]) -> BubQuestion | None:
        """The first logical line ``%bub WORDS?`` (or ``??``) of the cell, with something asked before the ``?``."""
        for line in tokens_by_line:
            tokens = [token for token in line if token.type not in (tokenize.INDENT, tokenize.DEDENT)]
            if len(tokens) < 4 or tokens[0].string != "%" or tokens[1].string != MAGIC:
                continue
            if tokens[1].start != tokens[0].end:  # "% bub" is Python's modulo, not a magic
                continue
            body = tokens[2:-1]  # what follows the magic's name, without the NEWLINE
            while body and body[-1].string == "?":
                body = body[:-1]
            if body and len(body) < len(tokens) - 3:
                return cls(tokens[0].start)
        return None


def install(shell: Any) -> None:
    """Register both transformers with the shell that runs the cells."""
    if comma_cell not in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.append(comma_cell)
    transformers = shell.input_transformer_manager.token_transformers
    if BubQuestion not in transformers:
        transformers.append(BubQuestion)


def uninstall(shell: Any) -> None:
    while comma_cell in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.remove(comma_cell)
    transformers = shell.input_transformer_manager.token_transformers
    while BubQuestion in transformers:
        transformers.remove(BubQuestion)
