"""The vector side reads the query without the store's common names: a speaker named in every memory no
longer pulls short chit-chat that merely names them above the memory that answers."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from memory_pipeline.search import build_index, search
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.search.scoring import idf_share, load_ranking, vector_query
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.search.conftest import minilm

CHAT = [
    "Caroline: Cool! What did it look like?",
    "Caroline: Wow, that's great!",
    "Caroline: Thanks, Mel! Love it.",
    "Caroline: Haha, totally. See you soon!",
    "Melanie: Hey Caroline, how was your week?",
    "Melanie: That sounds lovely.",
    "Caroline: I finished a painting of a sunset over the ocean, all orange and pink.",
    "Melanie: We went camping at the lake with the kids and roasted marshmallows.",
    "Melanie: The kids loved the dinosaur exhibit at the museum.",
    "Caroline: The adoption agency interview is next month.",
    "Melanie: I signed up for pottery classes on Tuesdays.",
    "Caroline: Oscar, my guinea pig, hates carrots.",
]


def test_idf_share_inverts_bm25_idf() -> None:
    for n, df in ((100, 30), (1000, 1), (50, 50), (7, 3)):
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        assert idf_share(idf, n) == pytest.approx(df / n, abs=1e-9)


def test_common_names_leave_the_vector_query_rare_ones_stay() -> None:
    share = {"Caroline": 0.6, "Melanie": 0.5, "Oscar": 0.01}.get

    def of(word: str) -> float:
        return share(word) or 0.0

    assert vector_query("What did Caroline paint?", of, 0.2) == "What did paint?"
    assert vector_query("What is Caroline's identity?", of, 0.2) == "What is identity?"
    assert vector_query("What does Oscar hate?", of, 0.2) == "What does Oscar hate?"
    assert vector_query("Caroline Melanie", of, 0.2) == "Caroline Melanie"  # nothing else left: the whole query
    assert vector_query("What did Caroline paint?", of, 0.0) == "What did Caroline paint?"  # off


def test_search_embeds_the_query_without_the_speakers_and_ranks_the_answer_first(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    home.mkdir()
    rows = [{"id": f"t-{i:02d}", "content": text, "created_at": f"2023-05-{i + 1:02d}T10:00:00"}
            for i, text in enumerate(CHAT)]  # fmt: skip
    (tmp_path / "chat.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    import_jsonl(MemoryStore(home / "memory.duckdb"), tmp_path / "chat.jsonl")
    encode, model = minilm()
    build_index(home, encode, model)
    seen: list[str] = []

    def spy(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return encode(texts)

    clear_cache()
    on, off = (load_ranking().with_(vector_query_common=share, background_gate=0.0) for share in (0.2, 0.0))
    question = "What does Caroline's pet dislike?"
    before = search(question, 3, home=home, embedder=(spy, model), ranking=off, floor=0.0)
    assert seen[-1] == question
    assert before[0].id == "t-00", [(h.id, h.text) for h in before]  # chit-chat that only names her wins
    after = search(question, 3, home=home, embedder=(spy, model), ranking=on, floor=0.0)
    assert seen[-1] == "What does pet dislike?"
    assert after[0].id == "t-11", [(h.id, h.text) for h in after]  # the guinea pig that hates carrots
    vector = {h.id: h.parts["vector"] for h in search("What did Caroline paint?", 12, home=home,
                                                       embedder=(spy, model), ranking=on, floor=0.0)}  # fmt: skip
    assert vector["t-06"] > vector["t-00"]  # the painting, not "Cool! What did it look like?"
    clear_cache()
