"""Seed 002: hierarchical rollups of episodic memory — every 8 sessions a Core, every 8 Cores a Sphere."""
