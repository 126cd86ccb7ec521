"""Unrelated notes that carry numbers, ids and times, made from templates: the background a set of changing
facts sits in. None of them is a version of another; a version rule that marks one superseded is wrong.

Deterministic for a given seed. Each template says a distinct thing about a distinct subject (a note, ticket,
host, room, order, person), so two notes differ in what they are about, never only in a value."""

from __future__ import annotations

import random
from datetime import date, timedelta

_PEOPLE = ("Priya", "Marcus", "Jonas", "Sam", "Aiko", "Lena", "Omar", "Zoe", "Ravi", "Nina", "Tomas", "Ines")
_CITIES = ("Leeds", "York", "Berlin", "Lisbon", "Porto", "Oslo", "Ghent", "Turin", "Lyon", "Krakow")
_HOSTS = ("web", "db", "cache", "queue", "api", "batch", "edge", "search")
_THINGS = ("printer", "coffee machine", "badge reader", "projector", "dishwasher", "router", "kettle", "fridge")
_TEMPLATES = (
    "Note {n}: the {thing} on floor {floor} was serviced at {time}.",
    "Ticket #{ticket} closed after {minutes} minutes: {host}-{k:02d} disk at {pct}%.",
    "Deployed build {major}.{minor}.{patch} to {host}-{k:02d} at {time}.",
    "{person} booked room {room} for {day} at {time}.",
    "Order {order} from {city} shipped in {boxes} boxes, {kg} kg in total.",
    "Row {row} of the import had {errors} errors; fixed by {person} at {time}.",
    "Invoice INV-{invoice} for ${amount:,} was paid on {day}.",
    "{host}-{k:02d} rebooted at {time} after {hours} hours up.",
    "Trip {trip}: {person} lands in {city} at {time} on {day}.",
    "Pager alert {ticket} fired at {time}; p95 latency {ms} ms on {host}-{k:02d}.",
    "Measured {kg} kg of {thing} parts in crate {crate}.",
    "Sprint {sprint} velocity was {points} points with {people} people.",
)
_TERSE = (  # an engineer's or an agent's jottings
    "note {n}: {thing} fl {floor} serviced {time}",
    "INC-{ticket} closed, {minutes} min; {host}-{k:02d} disk {pct}%",
    "build {major}.{minor}.{patch} → {host}-{k:02d} @ {time}",
    "rm {room} booked by {person}, {day} {time}",
    "{order} ex {city}: {boxes} boxes / {kg} kg, shipped",
    "import row {row}: {errors} errs, {person} fixed by {time}",
    "INV-{invoice} ${amount:,} paid {day}",
    "{host}-{n} reboot {time}, up {hours}h before",
    "trip {trip}: {person} lands {city} {time} {day}",
    "alert {ticket} @ {time}, p95 {ms} ms on {host}-{k:02d}",
    "crate {crate} weighed: {kg} kg of {thing} parts",
    "sprint {sprint} done, {points} pts w/ {people} ppl",
)
_CHAT = (  # what a user tells an assistant, or writes in a diary
    "The {thing} on floor {floor} finally got serviced at {time}, that's note {n} closed.",
    "Quick one: ticket #{ticket} is closed, it took {minutes} minutes and {host}-{k:02d} was at {pct}% disk.",
    "We rolled build {major}.{minor}.{patch} out to {host}-{k:02d} at {time} and nobody has complained.",
    "{person} asked me to book room {room} for {day} at {time}, so I did.",
    "Order {order} from {city} went out today, {boxes} boxes weighing {kg} kg all told.",
    "Row {row} of that import had {errors} errors in it; {person} had it sorted by {time}.",
    "I paid invoice INV-{invoice} for ${amount:,} on {day}, just so you know.",
    "Heads up, {host}-{n} restarted at {time} after running for {hours} hours.",
    "For trip {trip}, {person} lands in {city} at {time} on {day}.",
    "Pager alert {ticket} woke me at {time}; p95 latency on {host}-{k:02d} hit {ms} ms.",
    "I weighed crate {crate} and there's {kg} kg of {thing} parts in it.",
    "We wrapped sprint {sprint} with {points} points, {people} of us on the team.",
)
_STYLES = {"plain": _TEMPLATES, "terse": _TERSE, "chat": _CHAT}


def unrelated_notes(
    count: int = 600, seed: int = 7, start: date = date(2026, 8, 1), style: str = "plain"
) -> list[tuple[str, date]]:
    """`count` distinct notes with the day each was written, spread over 110 days from `start`, worded in `style`:
    "plain" sentences, "terse" jottings or "chat" (as a user tells an assistant)."""
    templates = _STYLES[style]
    rng = random.Random(seed)
    out: list[tuple[str, date]] = []
    seen: set[str] = set()
    serial = 100
    while len(out) < count:
        serial += rng.randint(1, 9)  # every note's own subject number is new: no two notes are about one thing
        day = start + timedelta(days=rng.randrange(110))
        text = rng.choice(templates).format(
            n=serial, ticket=serial * 7, row=serial, order=f"PO-{serial}", invoice=serial, trip=serial,
            crate=f"C{serial}", sprint=serial, room=serial, k=serial % 97 + 1, floor=rng.randint(1, 9),
            thing=rng.choice(_THINGS), person=rng.choice(_PEOPLE), city=rng.choice(_CITIES), host=rng.choice(_HOSTS),
            time=f"{rng.randint(0, 23):02d}:{rng.choice((0, 5, 15, 30, 45)):02d}", minutes=rng.randint(3, 300),
            pct=rng.randint(50, 99), major=rng.randint(1, 4), minor=rng.randint(0, 30), patch=serial,
            day=f"{day:%d %B}", boxes=rng.randint(1, 40), kg=rng.randint(2, 900), errors=rng.randint(1, 80),
            amount=rng.randint(2, 900) * 25, hours=rng.randint(2, 2000), ms=rng.randint(40, 2000),
            points=rng.randint(10, 80), people=rng.randint(3, 9),
        )  # fmt: skip
        if text not in seen:
            seen.add(text)
            out.append((text, day))
    return out
