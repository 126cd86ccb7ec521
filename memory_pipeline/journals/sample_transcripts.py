"""Deterministic sample transcripts for the demo and tests: Helios and Matthew, seven and a half weeks.

`python -m memory_pipeline.journals.sample_transcripts data/sample` writes
`data/sample/raw/conversations/YYYY/MM/DD/*.md`. The same seed always gives byte-identical files (a test checks
the committed copy), dates are fixed (not relative to now) so the committed files never change.
"""

from __future__ import annotations

import argparse
import random
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from memory_pipeline.journals.transcript import Turn, format_transcript, slugify, transcript_path

SEED = 20260914
START = date(2026, 9, 14)
DAYS = 52
MODELS = ("claude-opus-4.6", "claude-sonnet-4.5", "claude-haiku-4.5")
CHANNELS = ("webchat", "slack", "cli", "email")


@dataclass(frozen=True)
class Project:
    slug: str
    tags: tuple[str, ...]
    asks: tuple[str, ...]
    findings: tuple[tuple[str, str, str], ...]  # (tool, command, result) with a fact sentence after
    facts: tuple[str, ...]
    options: tuple[tuple[str, str], ...]  # (choice, reason)
    lessons: tuple[str, ...]
    procedures: tuple[tuple[str, tuple[str, ...]], ...]
    files: tuple[str, ...]


PEOPLE = {
    "Priya Raman": ("prefers short written summaries before any meeting", "owns the billing roadmap",
                    "is out on leave from the 20th", "wants numbers, not adjectives, in status reports"),
    "Jonas Berg": ("reviews every migration PR himself", "prefers Go for small services",
                   "is on call this week", "asked to be looped in on anything touching the queue"),
    "Dana Whitfield": ("runs the customer success team", "needs a heads-up two days before any downtime",
                       "likes screenshots in incident notes", "prefers Slack over email for quick questions"),
    "Tomás Ortega": ("joined the platform team as a contractor", "is strongest on Terraform",
                     "works from Lisbon, so mornings overlap best", "wants pairing sessions on the ingestion code"),
    "Mei Tanaka": ("leads security reviews", "insists on least-privilege service accounts",
                   "prefers threat models as bullet lists", "signs off on every new external dependency"),
}

PROJECTS = (
    Project(
        "atlas-api",
        ("coding", "backend", "postgres"),
        ("The atlas-api p95 latency alert fired again overnight. Can you dig in?",
         "Let's look at the slow endpoints in atlas-api before the release.",
         "Read the open atlas-api issues and tell me what blocks the 2.4 release.",
         "Can you check why the atlas-api test suite got slower this week?"),
        (("exec", "gh issue list --repo atlas-api --label release-2.4", "9 results"),
         ("exec", "psql -c 'select * from pg_stat_statements order by mean_exec_time desc limit 5'", "5 rows"),
         ("exec", "pytest -q tests/api", "412 passed in 96s"),
         ("read", "services/atlas-api/config/db.yaml", "pool size 20")),
        ("The orders endpoint spends {n} ms of its p95 in a single unindexed query",
         "The connection pool is capped at {n} connections in production",
         "The api test suite grew to {n} tests since August",
         "Staging runs Postgres 16.2 with {n} GB of shared buffers"),
        (("add a composite index on orders(customer_id, created_at)", "it removes the sequential scan"),
         ("move the report endpoints to the read replica", "they are read-only and the primary is saturated"),
         ("split the slow integration tests into a nightly job", "PR feedback should stay under five minutes"),
         ("use Postgres advisory locks for the job queue", "it avoids running a separate lock service")),
        ("Always run EXPLAIN ANALYZE on the production snapshot, not on staging: the row counts differ by 40x",
         "Never merge a migration without a rollback script; the last revert took two hours by hand",
         "Connection pool exhaustion shows up as latency first and errors only much later",
         "Mocked database tests hid the lock contention; test with the real Postgres container"),
        (("roll out a schema migration on atlas-api",
          ("open a PR with the migration and its rollback script", "get Jonas's review",
           "apply it to staging and run the smoke tests", "apply it to production during the Tuesday window",
           "watch the p95 dashboard for thirty minutes")),
         ("profile a slow atlas-api endpoint",
          ("capture the request id from the trace", "pull the query plan with EXPLAIN ANALYZE",
           "compare it with the production snapshot", "write the finding in the issue before changing code"))),
        ("knowledge/projects/atlas-api/context.md", "knowledge/projects/atlas-api/progress.md"),
    ),
    Project(
        "ledger-sync",
        ("billing", "integration", "data"),
        ("The nightly ledger-sync job reported mismatched invoice totals. What happened?",
         "Priya asked for a status on the ledger-sync reconciliation. Where are we?",
         "Can you review the ledger-sync retry logic before we turn on the new provider?",
         "Let's plan the ledger-sync cut-over to the new payments API."),
        (("exec", "python scripts/reconcile.py --date yesterday", "14 mismatches"),
         ("read", "services/ledger-sync/retry.py", "3 retry paths"),
         ("exec", "grep -c 'currency=EUR' logs/ledger-sync/2026-09.log", "1,208 lines"),
         ("web", "payments provider changelog v3", "idempotency keys required")),
        ("{n} invoices were rounded twice because the currency conversion ran before tax",
         "The payments provider allows {n} requests per second per account",
         "Reconciliation covers {n} thousand ledger rows a night",
         "The old provider's webhooks arrive up to {n} minutes late"),
        (("send idempotency keys with every payment call",
          "the provider's v3 API requires them and retries become safe"),
         ("convert currencies after tax, in one place", "double rounding caused the mismatches"),
         ("keep the old provider running in shadow mode for two weeks", "we can compare totals before cutting over"),
         ("page on-call only for mismatches above 50 EUR", "small rounding noise was waking people up")),
        ("Reconcile against the provider's export, not our own copy of the events",
         "Retries without idempotency keys double-charge; treat every retry path as a payment",
         "Rounding rules belong in one function with tests for every currency",
         "Shadow mode found three bugs that unit tests never would have"),
        (("reconcile a day of ledger-sync by hand",
          ("export the provider's settlement report", "run scripts/reconcile.py with the date",
           "group mismatches by cause", "file one issue per cause and link the invoice ids")),
         ("rotate the payments API key",
          ("create the new key in the provider dashboard", "store it in the vault under ledger-sync/prod",
           "restart the workers one at a time", "revoke the old key after an hour without errors"))),
        ("knowledge/projects/ledger-sync/context.md", "knowledge/projects/ledger-sync/notes.md"),
    ),
    Project(
        "helios-memory",
        ("memory", "architecture", "agents"),
        ("I want to rethink how you store memories. Can you summarise the current design?",
         "MEMORY.md is getting long again. Let's talk about what belongs there.",
         "Can you look at why yesterday's journal missed the atlas-api decision?",
         "Let's design the extraction step for decisions and lessons."),
        (("read", "knowledge/memory/MEMORY.md", "187 lines"),
         ("exec", "git log --oneline -- knowledge/journal | head", "10 commits"),
         ("exec", "rg -c 'Decision' raw/conversations/2026/09", "41 matches"),
         ("read", "knowledge/journal/latest.md", "6 bullets")),
        ("MEMORY.md was at {n} lines, close to the 200-line cap",
         "About {n} percent of sessions contain at least one explicit decision",
         "Transcripts from September take {n} MB on disk",
         "The journal for a busy day has about {n} bullets"),
        (("keep transcripts immutable and derive everything else from them", "extractors can then be replayed"),
         ("version every extractor and record the version on each memory", "a bump can replace exactly its own output"),
         ("cap MEMORY.md at 200 lines and prune weekly", "the context budget for core memory is about 3 KB"),
         ("archive journals after 90 days instead of deleting them", "old context stays searchable")),
        ("Only write what is worth remembering; a journal that repeats the transcript is noise",
         "Date-prefix every MEMORY.md entry or stale context looks current",
         "Extraction must be deterministic offline or reconstruction cannot be compared",
         "Summaries must keep their lineage or nobody can audit them later"),
        (("replay an extractor after changing it",
          ("bump the extractor's version", "run the reconstruction for the affected date range",
           "diff the journals against the previous run", "merge when the diff looks right")),),
        ("knowledge/projects/helios-memory/context.md", "knowledge/memory/MEMORY.md"),
    ),
    Project(
        "ops",
        ("ops", "infra", "oncall"),
        ("Disk usage alert on the build runners again. Can you check?",
         "Can you triage my inbox and flag anything urgent?",
         "The TLS certificate for status.example.net expires soon. What do we need to do?",
         "Let's review last night's on-call pages."),
        (("exec", "df -h /var/lib/docker", "91% used"),
         ("email", "inbox triage", "3 urgent, 7 actionable, 12 informational"),
         ("exec", "openssl s_client -connect status.example.net:443 | openssl x509 -enddate", "expires in 12 days"),
         ("exec", "pagerduty incidents --since 24h", "4 incidents")),
        ("The build runners keep {n} GB of stale Docker layers",
         "There were {n} pages last night, two of them duplicates",
         "The status page certificate is renewed by hand every {n} days",
         "Backups of the primary database take {n} minutes"),
        (("prune Docker layers nightly on the runners", "the disk alert fires every week otherwise"),
         ("move the status page certificate to automatic renewal", "manual renewals were missed twice"),
         ("merge duplicate alerts in the paging rules", "one incident paged three people"),
         ("announce maintenance windows two days ahead in #ops", "customer success needs time to warn clients")),
        ("Check the runbook before improvising during an incident; it usually already has the fix",
         "Alerts nobody acts on should be deleted, not muted",
         "Write the incident timeline while it happens, not the next morning",
         "A cron job without monitoring is a future incident"),
        (("free disk space on a build runner",
          ("drain the runner in the CI settings", "run docker system prune --all --volumes",
           "check df -h is under 60 percent", "re-enable the runner")),
         ("renew the status page certificate",
          ("run certbot renew on the edge host", "reload nginx", "check the new expiry date with openssl"))),
        ("knowledge/procedures/oncall.md", "knowledge/projects/ops/notes.md"),
    ),
    Project(
        "hiring",
        ("people", "hiring"),
        ("We have three candidates for the platform role. Can you prepare the interview plan?",
         "Can you summarise the feedback on yesterday's interviews?",
         "Let's write the job description for the data engineer role.",
         "Tomás starts on Monday. What does his onboarding need?"),
        (("read", "hiring/platform-role/feedback.md", "3 interviewers"),
         ("calendar", "find slots for panel interviews next week", "4 slots"),
         ("read", "hiring/onboarding-checklist.md", "18 items"),
         ("web", "salary bands for data engineers in Berlin", "3 sources")),
        ("The platform role has {n} candidates in the final round",
         "Onboarding takes about {n} days before a first production change",
         "The panel interview is {n} minutes including questions",
         "The onboarding checklist has {n} items"),
        (("use a take-home exercise capped at three hours", "candidates complained about open-ended ones"),
         ("pair every new hire with a buddy for the first month", "onboarding questions were going unanswered"),
         ("hire the platform contractor for six months first", "the budget is approved only until March"),
         ("run the panel interviews on one day", "candidates preferred it and it is easier to compare")),
        ("Write feedback on the same day or it turns into vague impressions",
         "A clear first task in week one does more for onboarding than a long reading list",
         "Ask every interviewer the same core questions so feedback is comparable",
         "Reference checks catch what interviews miss"),
        (("onboard a new engineer",
          ("create the accounts from the checklist", "assign a buddy", "schedule the architecture walkthrough",
           "pick a small first production change", "check in at the end of week one")),),
        ("knowledge/people/_index.md", "knowledge/projects/hiring/notes.md"),
    ),
)

_OPENERS_DECIDE = ("Agreed, let's go with that.", "Fine by me. Go ahead.", "Yes, do it.",
                   "Sounds right, let's do that.")
_DECISION_FORMS = ("Decision: we will {choice}, because {reason}.", "We decided to {choice} since {reason}.",
                   "Going with the plan to {choice}: {reason}.", "Agreed to {choice} because {reason}.")
_LESSON_FORMS = ("Lesson learned: {lesson}.", "Note to self: {lesson}.", "Takeaway from this one: {lesson}.")
_WRAPS = ("That's a wrap. Thanks.", "Good session, thanks.", "Perfect. That's all for today.", "Great, talk tomorrow.")


def _session_id(rng: random.Random) -> str:
    return "ses_" + "".join(rng.choice("0123456789abcdef") for _ in range(8))


def _clock(at: datetime) -> str:
    return f"{at:%H:%M}"


def generate_sessions(seed: int = SEED, start: date = START, days: int = DAYS) -> list[tuple[Path, str]]:
    """(relative path under the workspace, transcript text) for every sample session, in time order."""
    rng = random.Random(seed)
    people = list(PEOPLE)
    out: list[tuple[Path, str]] = []
    for d in range(days):
        day = start + timedelta(days=d)
        weekend = day.weekday() >= 5
        count = rng.choice((0, 1, 1) if weekend else (1, 2, 2, 2, 3))
        hours = sorted(rng.sample(range(8, 22), count))
        if d == 22:
            hours[-1] = 23  # a Tuesday whose last session runs past midnight
        for hour in hours:
            project = rng.choice(PROJECTS)
            minute = 50 if hour == 23 else rng.choice((5, 15, 30, 45, 50))
            started = datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)
            out.append(_session(rng, project, people, started))
    return out


def _session(rng: random.Random, project: Project, people: list[str], started: datetime) -> tuple[Path, str]:
    sid = _session_id(rng)
    at = started
    turns: list[Turn] = []

    def turn(role: str, lines: list[str], kind: str | None = None, gap: tuple[int, int] = (1, 6)) -> None:
        nonlocal at
        turns.append(Turn(hhmm=_clock(at), role=role, lines=tuple(lines), kind=kind))
        at += timedelta(minutes=rng.randint(*gap))

    ask = rng.choice(project.asks)
    tool, command, result = rng.choice(project.findings)
    fact = rng.choice(project.facts).format(n=rng.randint(3, 90))
    choice, reason = rng.choice(project.options)
    person = rng.choice(people)
    trait = rng.choice(PEOPLE[person])
    changes: list[dict[str, str]] = []
    turn("user", [ask])
    turn("agent", [f"> [tool:{tool}] {command} → {result}", "", f"{fact}. I checked the details below.",
                   f"The main issue is in {project.slug}: the current setup does not hold up under load."], gap=(2, 9))
    turn("user", [f"{person.split()[0]} {trait}, so keep that in mind. What do you propose?"])
    alternative = rng.choice([o for o in project.options if o[0] != choice])[0]
    turn("agent", [f"Two options: {choice}, or {alternative}.",
                   f"I recommend the first one because {reason}."], gap=(2, 8))
    turn("user", [rng.choice(_OPENERS_DECIDE)])
    decision = rng.choice(_DECISION_FORMS).format(choice=choice, reason=reason)
    target = rng.choice(project.files)
    turn("agent", [f"> [tool:write] {target} — recorded the decision", "", decision])
    if rng.random() < 0.6:
        lesson = rng.choice(project.lessons)
        turn("agent", [rng.choice(_LESSON_FORMS).format(lesson=lesson[0].lower() + lesson[1:])])
    if rng.random() < 0.45:
        name, steps = rng.choice(project.procedures)
        turn("user", [f"Can you write down how to {name}?"])
        turn("agent", [f"To {name}:", *(f"{i}. {s[0].upper()}{s[1:]}." for i, s in enumerate(steps, 1))], gap=(3, 9))
    if rng.random() < 0.2:
        turn("user", [f"> [attachment:attachments/{started:%Y-%m-%d}/{project.slug}-screenshot.png] dashboard",
                      "Here is the dashboard from this morning."])
    turn("agent", [f"> [knowledge:updated] {target} — {choice}"], kind="memory", gap=(0, 2))
    changes.append({"path": target, "action": "updated", "summary": f"Decided to {choice}"})
    journal = f"knowledge/journal/{started:%Y-%m-%d}.md"
    changes.append({"path": journal, "action": "appended", "summary": "Logged the session"})
    turn("user", [rng.choice(_WRAPS)])
    turn("agent", [f"> [tool:write] {journal} — appended session summary"], gap=(0, 1))
    ended = at
    topic = f"{project.slug} {choice.split(',')[0]}"
    title = re.split(r"[?!]|\. ", ask)[0].rstrip(".")
    slug = slugify(f"{project.slug} {title}", 40)
    tokens_in = rng.randint(4_000, 60_000)
    meta = {
        "session_id": sid,
        "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "ended": ended.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "model": rng.choice(MODELS),
        "channel": rng.choice(CHANNELS),
        "topic": topic,
        "project": project.slug,
        "tags": list(project.tags),
        "people": [person],
        "salience": round(rng.uniform(0.2, 0.95), 2),
        "tokens_in": tokens_in,
        "tokens_out": rng.randint(tokens_in // 8, tokens_in // 3),
        "knowledge_changes": changes,
    }
    path = transcript_path(Path("raw/conversations"), started, sid, slug)
    return path, format_transcript(meta, title, turns)


def write_sample_transcripts(root: Path, seed: int = SEED) -> list[Path]:
    """Write every sample transcript under `root` (a workspace or `data/sample`); returns the paths written."""
    written = []
    for rel, text in generate_sessions(seed):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path, help="folder that receives raw/conversations/…")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    paths = write_sample_transcripts(args.root, args.seed)
    print(f"{len(paths)} transcripts under {args.root / 'raw' / 'conversations'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
