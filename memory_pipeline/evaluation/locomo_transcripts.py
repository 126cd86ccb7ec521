"""LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0) conversations → transcripts with their real dates.

One transcript per non-empty session, dated with the session's `date_time` (taken as UTC: the dataset gives no
zone), frontmatter `conversation: <sample_id>` and the two speakers as participants; each turn keeps its
`dia_id` in a `<!-- dia_id: D1:3 -->` line so QA evidence can be traced back to a turn. Read the data from its
own folder; never copy it into the repository.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_pipeline.journals.transcript import Turn, escape_body, format_transcript, transcript_path

LICENCE = "LoCoMo, CC BY-NC 4.0 (https://creativecommons.org/licenses/by-nc/4.0/)"


def default_locomo_path() -> Path:
    """The shared LoCoMo dev set, read in place (its licence forbids copying it into the repo): `LOCOMO_DATA`,
    else `shared/datasets/locomo/` in the nearest folder above the checkout that has one."""
    name = Path("shared") / "datasets" / "locomo" / "locomo_dev.json"
    candidates = [Path(os.environ["LOCOMO_DATA"])] if os.environ.get("LOCOMO_DATA") else []
    candidates += [above / name for above in Path(__file__).resolve().parents[2:]]
    return next((c for c in candidates if c.exists()), candidates[0])


_SESSION_KEY = re.compile(r"^session_(\d+)$")


class LocomoError(ValueError):
    """The file is not LoCoMo-shaped; the message names the file and the sample/field."""


def parse_locomo_datetime(value: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → 2023-05-08 13:56 (UTC)."""
    try:
        return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"not a LoCoMo date_time: {value!r}") from None


def session_id_for(sample_id: str, number: int) -> str:
    return f"lcm_{re.sub(r'[^A-Za-z0-9]', '', sample_id)}_s{number:02d}"


def _body(turn: dict[str, Any]) -> list[str]:
    lines = [f"<!-- dia_id: {turn['dia_id']} -->"]
    for url in turn.get("img_url") or []:
        caption = str(turn.get("blip_caption") or "").strip()
        lines.append(f"> [attachment:{url.replace(' ', '%20')}]" + (f" {caption}" if caption else ""))
    text = str(turn.get("text") or "").strip()
    return lines + (escape_body(text) if text else [])


def sample_transcripts(sample: dict[str, Any], where: str) -> list[tuple[datetime, str, str, str]]:
    """(started, session_id, slug, text) for each non-empty session of one LoCoMo sample."""
    sample_id = sample.get("sample_id")
    conv = sample.get("conversation")
    if not isinstance(sample_id, str) or not isinstance(conv, dict):
        raise LocomoError(f"{where}: expected 'sample_id' and a 'conversation' object")
    speakers = [conv.get("speaker_a"), conv.get("speaker_b")]
    if not all(isinstance(s, str) and s for s in speakers):
        raise LocomoError(f"{where} ({sample_id}): 'speaker_a'/'speaker_b' missing")
    out = []
    numbers = sorted(int(m.group(1)) for key in conv if (m := _SESSION_KEY.match(key)))
    for n in numbers:
        turns = conv[f"session_{n}"]
        if not turns:
            continue
        stamp = conv.get(f"session_{n}_date_time")
        if not isinstance(stamp, str):
            raise LocomoError(f"{where} ({sample_id}): session_{n} has no session_{n}_date_time")
        try:
            started = parse_locomo_datetime(stamp)
        except ValueError as exc:
            raise LocomoError(f"{where} ({sample_id}): session_{n}_date_time: {exc}") from None
        sid = session_id_for(sample_id, n)
        meta = {
            "session_id": sid,
            "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ended": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "channel": "locomo",
            "conversation": sample_id,
            "session": n,
            "date_time": stamp,
            "participants": speakers,
            "source": LICENCE,
        }
        hhmm = f"{started:%H:%M}"
        body = []
        for i, t in enumerate(turns):
            if t.get("speaker") not in speakers or not t.get("dia_id"):
                raise LocomoError(f"{where} ({sample_id}): session_{n} turn {i}: bad speaker or dia_id")
            body.append(Turn(hhmm=hhmm, role=t["speaker"], lines=tuple(_body(t))))
        title = f"{speakers[0]} and {speakers[1]}, session {n}"
        slug = f"{re.sub(r'[^a-z0-9]+', '-', sample_id.lower())}-session-{n}"
        out.append((started, sid, slug, format_transcript(meta, title, body)))
    return out


def load_locomo(data_path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(Path(data_path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise LocomoError(f"{data_path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, list):
        raise LocomoError(f"{data_path}: expected a JSON list of LoCoMo samples")
    return data


def locomo_to_transcripts(
    data_path: Path, raw_root: Path, conversations: Sequence[str] | None = None
) -> list[Path]:
    """Write one transcript per non-empty session under `raw_root` (a workspace's `raw/conversations`).
    `conversations` picks sample ids (default: all). Files are written whole (temp + rename); an existing
    transcript with the same content is left as is — a transcript is never modified."""
    samples = load_locomo(data_path)
    wanted = set(conversations) if conversations is not None else None
    if wanted is not None:
        missing = wanted - {s.get("sample_id") for s in samples if isinstance(s, dict)}
        if missing:
            raise LocomoError(f"{data_path}: no conversation(s) {', '.join(sorted(missing))}")
    planned: list[tuple[Path, str]] = []
    for i, sample in enumerate(samples):
        if not isinstance(sample, dict):
            raise LocomoError(f"{data_path}: sample {i} is not an object")
        if wanted is not None and sample.get("sample_id") not in wanted:
            continue
        for started, sid, slug, text in sample_transcripts(sample, f"{data_path}: sample {i}"):
            planned.append((transcript_path(raw_root, started, sid, slug), text))
    for path, text in planned:  # validate everything before writing anything
        if path.exists() and path.read_text(encoding="utf-8") != text:
            raise LocomoError(f"{path} exists with different content; transcripts are immutable")
    written = []
    for path, text in planned:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".md.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
        written.append(path)
    return written
