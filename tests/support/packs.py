"""Small level packs written at test time."""

from __future__ import annotations

import json
from pathlib import Path


def make_pack(root: Path) -> Path:
    """Write a small onestroke pack (JSON list, .stroke, a duplicate, an invalid level) under root/pack."""
    pack = root / "pack"
    pack.mkdir()
    (pack / "levels.json").write_text(
        json.dumps(
            [
                {
                    "kind": "onestroke",
                    "map": ["111111", "101101", "111111", "101101", "111111", "000000"],
                    "start": 14,
                },
                {"kind": "onestroke", "grid": ["S...", "....", "...."]},
                {"kind": "onestroke", "grid": [".S."]},
                {"kind": "onestroke", "grid": ["S..", "x.."]},
            ]
        )
    )
    (pack / "more.stroke").write_text("S..\n.#.\n...\n\n..S\n...\n")
    (pack / "again.json").write_text(json.dumps({"kind": "onestroke", "grid": ["S...", "....", "...."]}))
    return pack
