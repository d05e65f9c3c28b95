"""The corpus of selectors, as data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

CORPUS = Path(__file__).resolve().parent / "corpus.yaml"


@dataclass(frozen=True)
class CorpusSelector:
    group: str  # which form it exercises (generate.py), e.g. "quantity", "invalid"
    expression: str


def load_corpus(path: Path = CORPUS) -> list[CorpusSelector]:
    document = yaml.safe_load(path.read_text())
    return [CorpusSelector(e["group"], e["expression"]) for e in document["selectors"]]
