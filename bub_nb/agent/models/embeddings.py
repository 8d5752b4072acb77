"""Recall ranked by embeddings: the cosine similarity of a prompt and each entry, from an endpoint's ``/v1/embeddings``.

:class:`Embeddings` is an :class:`~bub_nb.context.recall.EntryRanker` for the ``recall`` modes. It asks the real
``openai`` client (``embeddings.create``, in batches) for the vectors of the entries it has not seen and of the
prompt, keeping each entry's vector (:class:`~bub_nb.agent.models.vectors.VectorCache`). When the endpoint fails
(no such model, no ``/v1/embeddings``, not reachable) the turn is ranked by BM25 instead and one line says so, once
until the endpoint answers again.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from bub_nb.agent.models.vectors import Vector, VectorCache, text_digest, unit
from bub_nb.context.recall import BM25, ENTRY_CHARS, Ranker, Recall, ranker_label
from bub_nb.context.view import as_strategy
from bub_nb.errors import ContextError, ModelConfigError

if TYPE_CHECKING:
    import openai

    from bub_nb.tape.entries import TapeEntry

EMBEDDING_MODEL_VARIABLE: Final = "BUB_NB_EMBEDDING_MODEL"
"""Where ``Agent(embedding_model=None)`` and ``BubMagics.embedding_model`` read the embedding model by default."""
BATCH: Final = 64
"""Texts per ``embeddings.create`` request."""
PROMPTS_KEPT: Final = 16
"""Prompt vectors kept: every step of a turn rebuilds its view, and embeds its prompt only the first time."""
_KEYS: Final = ("BUB_API_KEY", "OPENAI_API_KEY")
_BASES: Final = ("BUB_API_BASE", "OPENAI_BASE_URL")
_LOCAL_KEY: Final = "no-key-needed-for-a-local-server"


class Embeddings:
    """Ranks entries by the cosine similarity of their vectors to the prompt's, made by ``model`` at ``base_url``.

    ``cache`` keeps each entry's vector (in memory by default); ``fallback`` ranks when the endpoint fails.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 1,
        batch: int = BATCH,
        cache: VectorCache | None = None,
        fallback: Ranker = BM25,
    ) -> None:
        if not model.strip():
            raise ModelConfigError("An embedding model needs a name, for example 'text-embedding-3-small'")
        self.model = model.strip()
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.batch = max(1, batch)
        self.cache = cache if cache is not None else VectorCache()
        self.fallback = fallback
        self.requests = 0
        """``embeddings.create`` calls made so far (each of up to ``batch`` texts)."""
        self._api_key = api_key or _LOCAL_KEY
        self._client: openai.OpenAI | None = None
        self._failing: str | None = None  # the failure already said, until the endpoint answers again
        self._prompts: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Embeddings({self.model!r}, base_url={self.base_url!r})"

    @property
    def label(self) -> str:
        return f"embeddings {self.model}"

    # -- ranking ---------------------------------------------------------------------------------

    def rank(
        self, query: str, tape: str, entries: Sequence[TapeEntry], texts: Sequence[str]
    ) -> tuple[list[float], str]:
        """The similarity of each entry to ``query``, and what ranked them (BM25 when the endpoint failed)."""
        import openai

        try:
            vectors = self.entry_vectors(tape, entries, texts)
            prompt = self.prompt_vector(query)
        except openai.OpenAIError as exc:
            self._say_failure(exc)
            return self.fallback.scores(query, texts), f"{ranker_label(self.fallback)} (embeddings failed)"
        self._failing = None
        return [float(prompt @ vector) for vector in vectors], self.label

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        """:class:`~bub_nb.context.recall.Ranker`'s form: texts without entries, embedded every time."""
        import openai

        try:
            *vectors, prompt = self.embed([*texts, query])
        except openai.OpenAIError as exc:
            self._say_failure(exc)
            return self.fallback.scores(query, texts)
        self._failing = None
        return [float(prompt @ vector) for vector in vectors]

    def entry_vectors(self, tape: str, entries: Sequence[TapeEntry], texts: Sequence[str]) -> list[Vector]:
        """The vector of each entry of ``tape``: kept ones as they are, the others made now and kept."""
        shown = [_as_embedded(text) for text in texts]
        digests = [text_digest(text) for text in shown]
        kept = self.cache.get(
            self.model, tape, ((entry.id, digest) for entry, digest in zip(entries, digests, strict=True))
        )
        missing = [index for index, entry in enumerate(entries) if entry.id not in kept]
        if missing:
            made = self.embed([shown[index] for index in missing])
            fresh = [(entries[index].id, digests[index], vector) for index, vector in zip(missing, made, strict=True)]
            self.cache.put(self.model, tape, fresh)
            kept.update((entry, vector) for entry, _, vector in fresh)
        self.cache.keep_only(self.model, tape, (entry.id for entry in entries))
        return [kept[entry.id] for entry in entries]

    def prompt_vector(self, query: str) -> Vector:
        """The vector of a prompt, made once for the last :data:`PROMPTS_KEPT` prompts."""
        with self._lock:
            kept = self._prompts.get(query)
            if kept is not None:
                self._prompts.move_to_end(query)
                return kept
        (made,) = self.embed([query])
        with self._lock:
            self._prompts[query] = made
            while len(self._prompts) > PROMPTS_KEPT:
                self._prompts.popitem(last=False)
        return made

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """The unit vectors of ``texts``, asked for in batches of ``batch``."""
        client = self._openai()
        vectors: list[Vector] = []
        for start in range(0, len(texts), self.batch):
            chunk = [text if text.strip() else " " for text in texts[start : start + self.batch]]
            answer = client.embeddings.create(model=self.model, input=chunk, encoding_format="float")
            self.requests += 1
            ordered = sorted(answer.data, key=lambda item: item.index)
            if len(ordered) != len(chunk):
                import openai

                raise openai.OpenAIError(f"{len(ordered)} vectors came back for {len(chunk)} texts")
            vectors.extend(unit(item.embedding) for item in ordered)
        return vectors

    # -- the endpoint ----------------------------------------------------------------------------

    def _openai(self) -> openai.OpenAI:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    api_key=self._api_key, base_url=self.base_url, timeout=self.timeout, max_retries=self.max_retries
                )
            return self._client

    def _say_failure(self, exc: Exception) -> None:
        line = _one_line(exc)
        if self._failing is None:
            where = self.base_url or "the OpenAI API"
            print(
                f"Warning: recall ranked by BM25: embedding model {self.model!r} at {where} failed: {line}",
                file=sys.stderr,
            )
        self._failing = line


def _as_embedded(text: str) -> str:
    """An entry's text as it is embedded: as much as a recalled entry shows of it."""
    return text if len(text) <= ENTRY_CHARS else text[:ENTRY_CHARS]


def _one_line(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
    text = str(message or exc).strip().splitlines()[0] if str(message or exc).strip() else type(exc).__name__
    return f"HTTP {status}: {text}" if status else text


# -- which ranker an agent uses --------------------------------------------------------------------------------

_rankers: dict[tuple[str, str | None], Embeddings] = {}
_rankers_lock = threading.Lock()


def embedding_setting() -> str | None:
    """The embedding model ``$BUB_NB_EMBEDDING_MODEL`` names, when it is set."""
    return os.environ.get(EMBEDDING_MODEL_VARIABLE, "").strip() or None


def embedding_ranker(spec: str | Ranker | Any | None, model: Any = None) -> Ranker | Embeddings | None:
    """The ranker recall uses for ``spec``: a ranker object as it is, a model name (``text-embedding-3-small``,
    ``openai:<name>``) as :class:`Embeddings` at ``model``'s endpoint (an OpenAI-compatible chat model's), else at
    ``$BUB_API_BASE`` / ``$OPENAI_BASE_URL``; ``None`` when no embedding model is set (recall stays BM25).

    One :class:`Embeddings` per endpoint and name, so its kept vectors serve every agent of the process."""
    if spec is None or (isinstance(spec, str) and not spec.strip()):
        return None
    if not isinstance(spec, str):
        if callable(getattr(spec, "scores", None)) or callable(getattr(spec, "rank", None)):
            return spec
        raise ModelConfigError(f"Cannot rank recall with {spec!r}: give an embedding model's name or a ranker")
    name = spec.strip()
    name = name.removeprefix("openai:").strip() or name
    base_url = getattr(model, "base_url", None) if getattr(model, "name", "").startswith("openai:") else None
    api_key = getattr(model, "_api_key", None) if base_url is not None else None
    if base_url is None:
        base_url = next((value for key in _BASES if (value := os.environ.get(key, "").strip())), None)
        api_key = next((value for key in _KEYS if (value := os.environ.get(key, "").strip())), None)
    with _rankers_lock:
        found = _rankers.get((name, base_url))
        if found is None:
            found = _rankers[(name, base_url)] = Embeddings(name, base_url=base_url, api_key=api_key)
        return found


def ranked_by(context: Any, ranker: Any) -> Any:
    """``context`` ranking its recall with ``ranker`` when it is a recall mode and a ranker is given; else as it is."""
    if ranker is None:
        return context
    try:
        strategy = as_strategy(context)
    except ContextError:
        return context  # the preflight says what is wrong with the mode, before the turn writes
    return replace(strategy, ranker=ranker) if isinstance(strategy, Recall) else context
