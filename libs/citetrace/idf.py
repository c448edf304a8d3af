"""Inverse document frequencies of English word stems (how much a word says), for the judgments that
weigh words: the validator's support model and retrieval's relevance and rerank features.

The table (data/idf.json.gz, versioned) was counted over WiCE dev articles, the SciFact corpus and the
sample corpus; a stem it does not know gets the highest IDF (rare = informative). Stems are
citetrace.textnorm.stem of the folded word."""

from __future__ import annotations

import functools
import gzip
import json
import math
from pathlib import Path

IDF_FILE = Path(__file__).resolve().parent / "data" / "idf.json.gz"


class IdfTable:
    def __init__(self, path: Path = IDF_FILE) -> None:
        data = json.loads(gzip.decompress(Path(path).read_bytes()).decode("utf-8"))
        self.documents = int(data["documents"])
        self.df: dict[str, int] = data["df"]
        self.version = data["version"]
        self.max_idf = math.log((self.documents + 1) / 0.5)

    def idf(self, stemmed: str) -> float:
        df = self.df.get(stemmed)
        return self.max_idf if df is None else math.log((self.documents + 1) / (df + 0.5))


@functools.lru_cache(maxsize=1)
def shipped() -> IdfTable:
    return IdfTable()
