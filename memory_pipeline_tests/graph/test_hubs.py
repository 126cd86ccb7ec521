"""Hub detection (seed 004 §10): the cheap centrality proxy — appearances in hot keys' neighbour lists."""

from datetime import datetime, timedelta

import pytest

from memory_pipeline.graph.hubs import HubParams, KeyHolder, find_hubs, neighbour_lists, top_keys

T = datetime(2026, 10, 1)


def holders() -> list[KeyHolder]:
    hub = KeyHolder("hub", ("k1", "k2", "k3", "k4"), usage=5.0, importance=1.0, created_at=T)
    rest = [
        KeyHolder(f"m{i}", (f"k{1 + i % 4}",), usage=0.0, importance=1.0, created_at=T + timedelta(hours=i))
        for i in range(12)
    ]
    return [hub, *rest]


def test_a_memory_first_in_many_neighbour_lists_is_a_hub() -> None:
    hubs = find_hubs(holders(), HubParams(top_keys=4, list_size=2, min_lists=3))
    assert [(h.id, h.centrality, h.keys) for h in hubs] == [("hub", 4, ("k1", "k2", "k3", "k4"))]
    lists = neighbour_lists(holders(), top_keys(holders(), 4), 2)
    assert all(ids[0] == "hub" for ids in lists.values())  # most used first
    assert lists["k1"][1] == "m8"  # then newest
    assert find_hubs(holders(), HubParams(top_keys=2, list_size=2, min_lists=3)) == []  # only 2 hot keys


def test_hub_policy_is_validated() -> None:
    with pytest.raises(ValueError, match="summarise, pin"):
        HubParams(policy="delete")
