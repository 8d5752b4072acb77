"""A tiny llama-architecture GGUF with random weights, written with the ``gguf`` package, for llama.cpp's servers.

The model knows nothing, but it is a real model to a real server: its tokenizer, chat template, context
window and sampling all run. With plain random weights the end-of-text token almost never comes, so an
answer would run to ``max_tokens`` or to the end of the window; here every token embedding carries a
constant first component that the output layer turns into a fixed logit ``ends`` for ``</s>`` (and a very
low one for tokens no text should hold: control tokens and bytes that are not ASCII), so an answer ends
after about ``vocabulary / e**ends`` tokens. ``ends=0`` makes answers that practically never end.
"""

from __future__ import annotations

import math
from pathlib import Path

_TEXT = (
    "the of and to in is you that it he was for on are as with his they at be this have from or one had by "
    "word but not what all were we when your can said there use an each which she do how their if will up "
    "other about out many then them these so some her would make like him into time has look two more write "
    "go see number no way could people my than first water been call who oil its now find long down day did "
    "get come made may part note tape anchor cell model prompt turn view summary handoff"
)
WORDS = tuple(_TEXT.split(" "))
TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
_NORMAL, _UNKNOWN, _CONTROL, _BYTE = 1, 2, 3, 6


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """Pieces, scores and types of a small SentencePiece vocabulary: specials, 256 bytes, ASCII, word prefixes.

    Every text tokenizes (bytes stand in for what no piece holds); a word of the list is one token, other
    text about one token per character, so counts run several times over a 4-characters-a-token estimate.
    """
    pieces, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [_UNKNOWN, _CONTROL, _CONTROL]
    for byte in range(256):
        pieces.append(f"<0x{byte:02X}>")
        scores.append(0.0)
        types.append(_BYTE)
    seen = set(pieces)
    singles = ["\u2581", *(chr(code) for code in range(33, 127))]
    prefixes = [f"\u2581{word}"[:end] for word in WORDS for end in range(2, len(word) + 2)]
    for piece in (*singles, *prefixes):
        if piece not in seen:
            seen.add(piece)
            pieces.append(piece)
            scores.append(float(len(piece)))  # longer pieces merge first
            types.append(_NORMAL)
    return pieces, scores, types


def write_tiny_gguf(
    path: str | Path,
    *,
    ends: float = 1.5,
    embedding: int = 64,
    layers: int = 2,
    heads: int = 4,
    context_length: int = 4096,
    seed: int = 0,
) -> Path:
    """Write the model to ``path`` (about 0.5 MB, float32) and return the path."""
    import gguf
    import numpy as np

    path = Path(path)
    pieces, scores, types = vocabulary()
    vocab = len(pieces)
    rng = np.random.default_rng(seed)

    def weights(*shape: int, scale: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("bub-nb-tiny")
    writer.add_context_length(context_length)
    writer.add_embedding_length(embedding)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(embedding * 2)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(embedding // heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(pieces)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_chat_template(TEMPLATE)

    # The first component is a constant the blocks barely change (their weights are small), so after the
    # final norm it is about sqrt(embedding) / (1 + embedding * 0.3**2) ** 0.5 for every position.
    embeddings = weights(vocab, embedding, scale=0.3)
    embeddings[:, 0] = 1.0
    writer.add_tensor("token_embd.weight", embeddings)
    for block in range(layers):
        prefix = f"blk.{block}"
        writer.add_tensor(f"{prefix}.attn_norm.weight", np.ones(embedding, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{prefix}.{name}.weight", weights(embedding, embedding))
        writer.add_tensor(f"{prefix}.ffn_norm.weight", np.ones(embedding, dtype=np.float32))
        writer.add_tensor(f"{prefix}.ffn_gate.weight", weights(embedding * 2, embedding))
        writer.add_tensor(f"{prefix}.ffn_up.weight", weights(embedding * 2, embedding))
        writer.add_tensor(f"{prefix}.ffn_down.weight", weights(embedding, embedding * 2))
    writer.add_tensor("output_norm.weight", np.ones(embedding, dtype=np.float32))
    constant = math.sqrt(embedding / (1 + (embedding - 1) * 0.09))
    output = weights(vocab, embedding, scale=0.05)
    output[:, 0] = 0.0
    output[2, 0] = ends / constant  # </s>: a logit of about ``ends`` everywhere
    never = [index for index, kind in enumerate(types) if kind in (_UNKNOWN, _CONTROL) and index != 2]
    never += [index for index, piece in enumerate(pieces) if types[index] == _BYTE and int(piece[3:5], 16) > 126]
    never += [index for index, piece in enumerate(pieces) if types[index] == _BYTE and int(piece[3:5], 16) < 32]
    output[never, 0] = -30.0 / constant
    writer.add_tensor("output.weight", output)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
