"""Token vocabularies with the course's three special ids (chapter 8).

Every vocabulary starts with the same specials, so ``PAD_ID``, ``BOS_ID`` and
``EOS_ID`` hold for the source and the target side of every task.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

PAD = "<pad>"
BOS = "<bos>"
EOS = "<eos>"
PAD_ID = 0  # padding: never attended to, never scored
BOS_ID = 1  # begin of sequence: the decoder's first input
EOS_ID = 2  # end of sequence: the decoder stops after producing it
SPECIALS = (PAD, BOS, EOS)


class Vocab:
    """A fixed mapping between tokens (strings) and integer ids; no unknown token.

    Args:
        tokens: the ordinary tokens; duplicates are dropped, first occurrence wins.

    Example:
        >>> v = Vocab(["a", "b"])
        >>> v.encode(["b", "a"], eos=True)
        [4, 3, 2]
        >>> v.decode([1, 4, 3, 2, 3])
        ['b', 'a']
    """

    def __init__(self, tokens: Iterable[str]) -> None:
        self.itos: list[str] = list(SPECIALS)
        self.stoi: dict[str, int] = {tok: i for i, tok in enumerate(self.itos)}
        for tok in tokens:
            if tok not in self.stoi:
                self.stoi[tok] = len(self.itos)
                self.itos.append(tok)

    pad_id = PAD_ID
    bos_id = BOS_ID
    eos_id = EOS_ID

    def __len__(self) -> int:
        return len(self.itos)

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens: {' '.join(self.itos[:12])}{' ...' if len(self) > 12 else ''})"

    def encode(self, tokens: Iterable[str], *, bos: bool = False, eos: bool = False) -> list[int]:
        """Token strings -> ids, optionally wrapped in BOS ... EOS."""
        try:
            ids = [self.stoi[tok] for tok in tokens]
        except KeyError as err:
            raise KeyError(f"token {err.args[0]!r} is not in this vocabulary ({self!r})") from None
        return ([BOS_ID] if bos else []) + ids + ([EOS_ID] if eos else [])

    def decode(self, ids: Sequence[int] | Iterable[int]) -> list[str]:
        """Ids -> token strings, stopping at the first EOS and skipping PAD and BOS.

        Accepts a list of ints or a 1-D tensor.
        """
        out = []
        for i in ids:
            i = int(i)
            if i == EOS_ID:
                break
            if i in (PAD_ID, BOS_ID):
                continue
            out.append(self.itos[i])
        return out
