"""`python -m benchmarks [clustering|incremental|nightly|embeddings|locomo-retention|screening|distill|fleet|gateway|
current-facts|current-facts-locomo|abstention|abstention-fit|retention-probes|transcripts|read-start|read-cpu|
same-statement|summary-faults|dissent-families|statement-pairs|version-pairs|versioner|version-families|
named-questions|coding-lines|hooks|journal-lines|import-journals|recall|all] [options]` — results are appended to
benchmarks/results/runs/<date>.md with the date, the machine, the BLAS kernel and the OPENBLAS_* variables."""

from __future__ import annotations

import sys

NAMES = (
    "clustering",
    "incremental",
    "nightly",
    "embeddings",
    "locomo-retention",
    "locomo-e2e",
    "screening",
    "distill",
    "search",
    "search-locomo",
    "context",
    "read-path",
    "questions",
    "topics",
    "fleet",
    "first-call",
    "read-start",
    "read-cpu",
    "gateway",
    "current-facts",
    "abstention",
    "abstention-fit",
    "retention-probes",
    "current-facts-locomo",
    "transcripts",
    "same-statement",
    "summary-faults",
    "dissent-families",
    "statement-pairs",
    "version-pairs",
    "versioner",
    "version-families",
    "named-questions",
    "coding-lines",
    "hooks",
    "journal-lines",
    "import-journals",
    "recall",
)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        print("each benchmark takes --help for its options")
        return 0
    name, rest = argv[0], argv[1:]
    if name == "all":
        for each in NAMES:
            main([each])
        return 0
    if name not in NAMES:
        print(f"unknown benchmark {name!r}; choose from {', '.join(NAMES)} or all", file=sys.stderr)
        return 2
    module = __import__(f"benchmarks.{name.replace('-', '_')}", fromlist=["main"])
    module.main(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
