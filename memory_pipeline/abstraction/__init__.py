"""Abstraction (seed 000): the nightly consolidation's logic, one module per step of the seed's diagram —
clusters, distilling, summaries (phase 1), archive (phase 2), atoms, reporting — with what they hand each other
(outcomes), the run report (report), the store's invariants (violations) and alert rules. No Dagster here: the
assets in defs/abstraction/ load, call these and report."""
