"""Summaries and insight extraction through Claude (the shared `llm` resource's AnthropicDistiller: its rate
limiter, retries, cost cap and usage ledger), with prompts built from seed 003's format rules.

The model only proposes. A summary must come back in the seed's shape (3–5 key-event bullets, decisions,
insights) with nothing the pollution filter forbids; insight entries go through exactly the governance the
offline extractor's do (schema, pollution filter, duplicates, limits — in the engine). Anything else — an
API error, the cost cap, a reply that is not the JSON asked for, a reply cut at max_tokens — raises
`LLMExtractionFailed`, and the engine falls back to the offline extractor for that file, reason reported.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_pipeline.compaction import extract
from memory_pipeline.compaction.governance import MAX_TITLE_CHARS, SemanticEntry, forbidden_content
from memory_pipeline.distillation.distill import DistillationRejected, parse_json_object
from memory_pipeline.resources import EngineConfig, LLMResource

_NEVER = (
    "Never include governance rules, execution tier definitions, approval logs, debug notes or log lines, cron "
    "logs or cron expressions, diffs or diff previews, code, commands or tool output."
)
_STYLE = (
    "Write plain declarative sentences in the third person: no quotes of dialogue, no speaker prefixes, no "
    "first or second person (I, me, my, you, your), no questions or exclamations."
)

SUMMARY_SYSTEM_PROMPT = f"""You are the memory compactor of an AI agent. You turn one working-memory note \
(0-7 days old) into an episodic summary: a structured event summary that replaces the note in memory while \
the raw note is archived.

Read the note and extract its key events, decisions and outcomes. Use only facts stated in the note.
- "summary": 3 to 5 bullets of key events (fewer only when the note holds fewer than 3 events), one \
sentence each, at most 280 characters.
- "decisions": the decisions made, one sentence each (an empty list when none were made), at most 5.
- "insights": principles worth retaining beyond this episode, one general sentence each (an empty list \
when there are none), at most 5.
{_STYLE}
{_NEVER}

Answer with one JSON object and nothing else:
{{"summary": ["..."], "decisions": ["..."], "insights": ["..."]}}"""

INSIGHT_SYSTEM_PROMPT = f"""You are the memory compactor of an AI agent. From one episodic summary (older than \
30 days) you extract durable insights to append to semantic memory. Semantic memory is durable system \
knowledge only: what permanently changed or was learned, not what happened.

Each insight follows the semantic entry schema:
- "title": a short descriptive heading, at most 8 words and {MAX_TITLE_CHARS} characters
- "context": a brief description of the situation it came from, one sentence
- "durable_insight": what permanently changed or was learned, one or two sentences
- "operational_impact": (optional, "" when none) what behaviour or rule changed
Extract at most 3 insights, only durable ones; when nothing is durable answer {{"insights": []}}.
Reject raw summaries of events, conversational fragments and debug logs.
{_STYLE}
{_NEVER}

Answer with one JSON object and nothing else:
{{"insights": [{{"title": "...", "context": "...", "durable_insight": "...", "operational_impact": "..."}}]}}"""

SUMMARY_MAX_TOKENS = 700
INSIGHT_MAX_TOKENS = 700
MAX_INSIGHTS = 3
MAX_ITEMS = 5


class LLMExtractionFailed(Exception):
    """The LLM path gave no usable answer for one file; the message is the report's fallback reason."""


def user_message(name: str, text: str) -> str:
    return f"FILE: {name}\n\n{text.strip()}\n\nAnswer with the JSON object."


def _strings(obj: dict[str, object], key: str, required: bool = False) -> list[str]:
    value = obj.get(key, None if required else [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise LLMExtractionFailed(f"reply field {key!r} is not a list of strings")
    return [v.strip() for v in value if v.strip()]


def parse_summary(name: str, source_text: str, reply: str) -> extract.EpisodicSummary:
    """The seed's episodic format, or LLMExtractionFailed naming the rule the reply broke."""
    try:
        obj = parse_json_object(reply)
    except DistillationRejected as exc:
        raise LLMExtractionFailed(str(exc)) from None
    summary = _strings(obj, "summary", required=True)
    decisions = _strings(obj, "decisions")[:MAX_ITEMS]
    insights = _strings(obj, "insights")[:MAX_ITEMS]
    wanted = min(3, len(extract.sentences(source_text))) or 1
    if not wanted <= len(summary) <= MAX_ITEMS:
        raise LLMExtractionFailed(f"summary has {len(summary)} bullets; the format needs {wanted}–{MAX_ITEMS}")
    for section, items in (("summary", summary), ("decisions", decisions), ("insights", insights)):
        for i, item in enumerate(items, start=1):
            found = forbidden_content(item)
            if found:
                raise LLMExtractionFailed(f"{section} item {i} holds {', '.join(found)}: {item[:60]!r}")
    return extract.EpisodicSummary(name, summary, decisions, insights)


def parse_insights(reply: str) -> list[SemanticEntry]:
    """Candidate entries, unvalidated: the engine applies the same governance as to the offline ones."""
    try:
        obj = parse_json_object(reply)
    except DistillationRejected as exc:
        raise LLMExtractionFailed(str(exc)) from None
    items = obj.get("insights")
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise LLMExtractionFailed("reply field 'insights' is not a list of objects")
    entries = []
    for item in items[:MAX_INSIGHTS]:
        def field(key: str, item: dict[str, Any] = item) -> str:
            value = item.get(key)
            return " ".join(value.split()) if isinstance(value, str) else ""

        entries.append(
            SemanticEntry(field("title"), field("context"), field("durable_insight"), field("operational_impact"))
        )
    return entries


class LLMExtractor:
    """The compactor's two prompts over one AnthropicDistiller (`LLMResource.get_distiller`), so calls share
    the run's rate limiter, retry policy, cost cap and usage ledger with every other step of the run. Always
    the Messages API, even when the resource is in batch mode: a weekly run moves a handful of files and
    should not wait hours for a batch."""

    def __init__(self, distiller: Any) -> None:
        self.distiller = distiller
        self.name = f"anthropic:{distiller.model}"

    def _ask(self, stage: str, key: str, system: str, user: str, max_tokens: int) -> str:
        from memory_pipeline.llm.anthropic_distiller import AskFailed

        try:
            return str(self.distiller.ask(stage, key, system, user, max_tokens))
        except AskFailed as exc:  # the engine falls back
            raise LLMExtractionFailed(str(exc)) from None

    def summarise(self, name: str, text: str) -> extract.EpisodicSummary:
        reply = self._ask("compaction_summary", name, SUMMARY_SYSTEM_PROMPT, user_message(name, text),
                          SUMMARY_MAX_TOKENS)
        return parse_summary(name, text, reply)

    def extract_insights(self, name: str, text: str) -> list[SemanticEntry]:
        reply = self._ask("compaction_insights", name, INSIGHT_SYSTEM_PROMPT, user_message(name, text),
                          INSIGHT_MAX_TOKENS)
        return parse_insights(reply)


def extractor_for(
    llm: LLMResource, writes: bool, reports_dir: Path, run_id: str, engine: EngineConfig, log: Callable[[str], Any]
) -> LLMExtractor | None:
    """Claude when the `llm` resource has a key and this step writes (a dry run spends nothing); the calls
    share the run's usage ledger, rate limit and cost cap (COMPRESSION_MAX_COST_USD) with its other steps.
    None: the offline extractor."""
    if not writes or not llm.uses_anthropic():
        return None
    distiller = llm.get_distiller(
        reports_dir=reports_dir,
        run_id=run_id,
        rate_limit_per_min=engine.rate_limit_per_min,
        max_cost_usd=engine.max_cost_usd,
        log=log,
    )
    return LLMExtractor(distiller)
