"""Abstraction: alerts, atoms, report and violations helpers used by the nightly consolidation."""
