"""The design seeds, read in place for the tests that check a prompt word for word against them: the nearest
`shared/seeds/` folder above the checkout (none on a machine that has no copy: those tests skip)."""

from pathlib import Path


def seed_files(pattern: str) -> list[Path]:
    for above in Path(__file__).resolve().parents[1:]:
        folder = above / "shared" / "seeds"
        if folder.is_dir():
            return sorted(folder.glob(pattern))
    return []
