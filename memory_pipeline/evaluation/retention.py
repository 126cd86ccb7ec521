"""Retention of a branch's knowledge against main's, on LoCoMo-style questions (`reconstruct --questions FILE`).

Each side's knowledge is its bullets (`- …` lines of knowledge/**/*.md: journals and MEMORY.md). Every question
retrieves its `K` nearest bullets by the deterministic `hashing-bow-256` embedding (lexical, no model to load,
the same on both sides) and is scored with the benchmarks' answer support (`evaluation.locomo`: ≥ 2/3 of the gold
answer's content words in the retrieved text) — the project's one definition, not a second one. Headline
categories 1–4, like the benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_pipeline.embedding.hashing import hashing_embed
from memory_pipeline.errors import UserError
from memory_pipeline.evaluation import locomo as scoring

K = 10


class RetentionError(UserError):
    """The questions file is not LoCoMo-shaped, or has no question to score."""


@dataclass(frozen=True)
class Retention:
    main: float | None  # support@K over the scorable questions
    branch: float | None
    questions: int  # scorable questions of categories 1–4

    def line(self) -> str:
        def pct(x: float | None) -> str:
            return "n/a" if x is None else f"{100 * x:.1f} %"

        return f"retention (answer support@{K}, {self.questions} question(s)): main {pct(self.main)}, " \
               f"branch {pct(self.branch)}"  # fmt: skip


def bullets(home: Path) -> list[tuple[str, str]]:
    """(id, text) of each `- ` line of the knowledge's Markdown files, in path order."""
    out = []
    for path in sorted((home / "knowledge").rglob("*.md")):
        rel = path.relative_to(home).as_posix()
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("- ") and line.strip()[2:].strip():
                out.append((f"{rel}:{i}", line.strip()[2:].strip()))
    return out


def support(home: Path, questions: list[Any]) -> float | None:
    import numpy as np

    found = bullets(home)
    memories = scoring.MemorySet(
        ids=[i for i, _ in found],
        texts=[t for _, t in found],
        vectors=hashing_embed([t for _, t in found]) if found else np.zeros((0, 256), dtype=np.float32),
        lineage={},
    )
    rows = scoring.score_questions(questions, hashing_embed([q.question for q in questions]), memories, (K,))
    mean, _ = scoring.mean_score(rows, f"support@{K}", scoring.HEADLINE_CATEGORIES)
    return None if mean is None else float(mean)


def compare(main_home: Path, branch_home: Path, questions_file: Path) -> Retention:
    """Answer support@K of main's knowledge and the branch's, on the file's questions."""
    try:
        conversations = scoring.load_locomo(questions_file)
    except (ValueError, FileNotFoundError) as exc:
        raise RetentionError(f"--questions: {exc}") from None
    questions = [q for c in conversations for q in c.questions if q.category in scoring.HEADLINE_CATEGORIES]
    if not questions:
        raise RetentionError(f"--questions: {questions_file} has no question of categories 1-4")
    scorable = sum(1 for q in questions if scoring.answer_terms(q.answer))
    return Retention(support(main_home, questions), support(branch_home, questions), scorable)
