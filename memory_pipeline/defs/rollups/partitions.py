"""Dynamic partitions: one per Core (`core_<sphere:03d>_<core:03d>`) and one per Sphere (`sphere_<sphere:03d>`).
The sensor adds a key when its sessions (Cores) are complete; keys are never removed."""

import dagster as dg

cores_partitions = dg.DynamicPartitionsDefinition(name="rollup_cores")
spheres_partitions = dg.DynamicPartitionsDefinition(name="rollup_spheres")
