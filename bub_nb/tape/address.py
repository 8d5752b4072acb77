"""``tape://`` addresses for entries and anchors."""

from __future__ import annotations

from dataclasses import dataclass

from bub_nb.errors import TapeAddressError

SCHEME = "tape://"


@dataclass(frozen=True, slots=True)
class TapeAddress:
    """``tape://<tape>/entry/<id>`` or ``tape://<tape>/anchor/<name>`` (names may contain ``/``)."""

    tape: str
    kind: str
    target: str

    @classmethod
    def parse(cls, address: str) -> TapeAddress:
        if not isinstance(address, str) or not address.startswith(SCHEME):
            raise TapeAddressError(f"Address {address!r} does not start with {SCHEME!r}")
        tape, _, rest = address[len(SCHEME) :].partition("/")
        kind, _, target = rest.partition("/")
        if not tape or kind not in ("entry", "anchor") or not target:
            raise TapeAddressError(
                f"Address {address!r} is not tape://<tape>/entry/<id> or tape://<tape>/anchor/<name>"
            )
        if kind == "entry" and not target.isdigit():
            raise TapeAddressError(f"Address {address!r} names entry {target!r}, which is not an id")
        return cls(tape, kind, target)

    def __str__(self) -> str:
        return f"{SCHEME}{self.tape}/{self.kind}/{self.target}"


def entry_address(tape: str, entry_id: int) -> str:
    return str(TapeAddress(tape, "entry", str(entry_id)))


def anchor_address(tape: str, name: str) -> str:
    return str(TapeAddress(tape, "anchor", name))
