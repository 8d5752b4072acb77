"""Token estimates that work offline.

When ``tiktoken`` is installed *and* its encoding is already cached on this machine, counts are
exact for OpenAI's tokenizers. Nothing is ever downloaded: without a cached encoding the
estimate is the documented heuristic below, which tracks OpenAI tokenizers within ~15% on
English prose and code.

Heuristic: ``ceil(ascii_chars / 4) + non_ascii_chars`` per text (CJK and other non-Latin
scripts are close to one token per character), plus 4 tokens of framing per message and
3 for the reply priming, as OpenAI documents for chat formatting.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from typing import Any

import orjson

MESSAGE_OVERHEAD = 4
REPLY_PRIMING = 3
_ENCODING = os.environ.get("BUB_TIKTOKEN_ENCODING", "o200k_base")


def heuristic_tokens(text: str) -> int:
    """The offline estimate for one text (see the module docstring)."""
    if text.isascii():
        return (len(text) + 3) // 4
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    return (len(text) - non_ascii + 3) // 4 + non_ascii


@functools.cache
def _tiktoken_counter() -> Callable[[str], int] | None:
    """Return an exact counter when tiktoken and a cached encoding are present, else None."""
    if os.environ.get("BUB_TOKENIZER", "").lower() == "heuristic":
        return None
    try:
        import tiktoken
        import tiktoken.load as tiktoken_load
    except ImportError:
        return None

    def refuse_download(blobpath: str) -> bytes:
        raise OSError(f"not downloading {blobpath}")

    # tiktoken fetches encodings it has not cached; forbid that so counting never touches the network.
    original = tiktoken_load.read_file
    tiktoken_load.read_file = refuse_download
    try:
        encoding = tiktoken.get_encoding(_ENCODING)
    except Exception:
        return None
    finally:
        tiktoken_load.read_file = original
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def tokenizer_name() -> str:
    """``tiktoken:<encoding>`` when counts are exact, else ``heuristic``."""
    return f"tiktoken:{_ENCODING}" if _tiktoken_counter() is not None else "heuristic"


def count_text_tokens(text: str) -> int:
    counter = _tiktoken_counter()
    return counter(text) if counter is not None else heuristic_tokens(text)


def _message_text(message: dict[str, Any]) -> str:
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):  # multimodal parts: count the text ones
        parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(str(function.get("name", "")))
        parts.append(str(function.get("arguments", "")))
    if message.get("name"):
        parts.append(str(message["name"]))
    return "\n".join(parts)


def count_message_tokens(message: dict[str, Any]) -> int:
    """Tokens one chat message costs in a prompt, framing included."""
    return MESSAGE_OVERHEAD + count_text_tokens(_message_text(message))


def count_messages_tokens(messages: Iterable[dict[str, Any]]) -> int:
    """Tokens a whole prompt costs: every message plus the reply priming."""
    return REPLY_PRIMING + sum(count_message_tokens(m) for m in messages)


def count_tools_tokens(tools: Iterable[dict[str, Any]] | None) -> int:
    """A rough cost of tool schemas, which endpoints add to the prompt."""
    return sum(count_text_tokens(orjson.dumps(tool).decode()) for tool in tools or ())
