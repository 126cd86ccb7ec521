"""Complete and average linkage, and cluster caps, inside the threshold graph's components.

Single linkage at threshold t (the connected components of the threshold graph, seed 000 §4.1) chains: at
low thresholds a whole conversation becomes one cluster. Complete linkage (seed 000 §14: cosine ≥ t between
*all* member pairs) and average linkage (mean pairwise cosine ≥ t) never merge across a component, because
every merge they make needs at least one pair ≥ t. So each component is clustered on its own: the exact
agglomerative dendrogram (scipy, float64 cosine distances in the component's stable index order, hence
deterministic), cut at distance 1 − t. The threshold graph itself stays incremental; only the split of each
component is recomputed, which costs Σ n_c² over components, not N².

Caps (seed 004 §3.1: members, tokens): a cluster over a cap is split by walking down its dendrogram — cut
higher, at the weakest merge first — until every part fits; parts smaller than the minimum size stay
unclustered. Nothing is truncated silently.

A component larger than `max_component` members would need n²/2 distances (1.6 GB at 20,000); it is left
unclustered tonight and named, never clustered wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.cluster.hierarchy import linkage as scipy_linkage
from scipy.spatial.distance import pdist

LINKAGES = ("single", "complete", "average")
MAX_EXACT_COMPONENT = 20_000


@dataclass(frozen=True)
class LinkageParams:
    method: str = "single"
    threshold: float = 0.82
    min_size: int = 3
    max_members: int = 0  # 0 = no cap
    max_tokens: int = 0  # 0 = no cap
    max_component: int = MAX_EXACT_COMPONENT

    def capped(self) -> bool:
        return self.max_members > 0 or self.max_tokens > 0


@dataclass
class LinkageOutcome:
    groups: list[np.ndarray]
    components_split: int = 0  # components that became more than one cluster (or none)
    clusters_capped: int = 0  # clusters split because of a cap
    too_large: list[int] = field(default_factory=list)  # sizes of components left unclustered

    def metadata(self) -> dict[str, int | str]:
        return {
            "linkage_components_split": self.components_split,
            "linkage_clusters_capped": self.clusters_capped,
            "linkage_components_too_large": len(self.too_large),
            "linkage_too_large_sizes": ", ".join(str(n) for n in self.too_large) or "none",
        }


def _dendrogram(vectors: np.ndarray, members: np.ndarray, method: str) -> np.ndarray:
    """scipy's linkage matrix of the members (in the given order), on float64 cosine distances."""
    v = np.asarray(vectors[members], dtype=np.float64)
    norms = np.sqrt((v * v).sum(axis=1))
    norms[norms == 0] = 1.0
    distances = np.clip(pdist(v / norms[:, None], "cosine"), 0.0, 2.0)
    return np.asarray(scipy_linkage(distances, method=method))


def _cut(
    z: np.ndarray, members: np.ndarray, tokens: np.ndarray, cut: float, params: LinkageParams
) -> tuple[list[np.ndarray], int]:
    """Walk down from the root: a node merged at distance ≤ `cut` that fits the caps is a cluster; otherwise
    its two children are tried. Returns the clusters (≥ min_size members) and how many were split by a cap.
    Linkage distances are monotone for single/complete/average, so every node under an accepted one is too."""
    n = members.size
    counts = np.ones(2 * n - 1, dtype=np.int64)
    token_sums = np.zeros(2 * n - 1, dtype=np.int64)
    token_sums[:n] = tokens
    children = z[:, :2].astype(np.int64)
    for i in range(n - 1):
        a, b = children[i]
        counts[n + i] = counts[a] + counts[b]
        token_sums[n + i] = token_sums[a] + token_sums[b]

    def fits(node: int) -> bool:
        return (params.max_members <= 0 or counts[node] <= params.max_members) and (
            params.max_tokens <= 0 or token_sums[node] <= params.max_tokens
        )

    def leaves(node: int) -> np.ndarray:
        out, stack = [], [node]
        while stack:
            k = stack.pop()
            if k < n:
                out.append(k)
            else:
                stack.extend(children[k - n])
        return np.sort(members[np.asarray(out, dtype=np.int64)])

    groups: list[np.ndarray] = []
    capped = 0
    stack = [2 * n - 2]
    while stack:
        node = stack.pop()
        if counts[node] < params.min_size:
            continue
        within = node < n or z[node - n, 2] <= cut
        if within and fits(node):
            groups.append(leaves(node))
            continue
        if within:
            capped += 1  # a cap, not the threshold, splits this one
        if node >= n:
            stack.extend(children[node - n])
    return groups, capped


def cluster_components(
    vectors: np.ndarray, components: list[np.ndarray], tokens: np.ndarray, params: LinkageParams
) -> LinkageOutcome:
    """The clusters of `params.method` inside each component (sorted row indices), in the order of their
    smallest member. Single linkage without caps returns the components themselves."""
    if params.method not in LINKAGES:
        raise ValueError(f"linkage must be one of {', '.join(LINKAGES)}, got {params.method!r}")
    if params.method == "single" and not params.capped():
        return LinkageOutcome(groups=list(components))
    outcome = LinkageOutcome(groups=[])
    cut = 1.0 - params.threshold
    for members in components:
        members = np.sort(np.asarray(members, dtype=np.int64))
        if members.size > params.max_component:
            outcome.too_large.append(int(members.size))
            continue
        if params.method == "single" and (
            (params.max_members <= 0 or members.size <= params.max_members)
            and (params.max_tokens <= 0 or int(tokens[members].sum()) <= params.max_tokens)
        ):
            outcome.groups.append(members)  # fits: no dendrogram needed
            continue
        z = _dendrogram(vectors, members, params.method)
        found, capped = _cut(z, members, np.asarray(tokens[members], dtype=np.int64), cut, params)
        outcome.clusters_capped += capped
        outcome.components_split += int(len(found) != 1)
        outcome.groups.extend(found)
    outcome.groups.sort(key=lambda g: int(g[0]))
    return outcome
