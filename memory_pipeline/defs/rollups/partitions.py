"""Dynamic partitions: one per Core (`core_<sphere:03d>_<core:03d>`) and one per Sphere (`sphere_<sphere:03d>`).
The sensor adds a key when its sessions (Cores) are complete; keys are never removed."""

import dagster as dg

CORES = "rollup_cores"  # the names as plain str: DynamicPartitionsDefinition.name is typed `str | None`
SPHERES = "rollup_spheres"
cores_partitions = dg.DynamicPartitionsDefinition(name=CORES)
spheres_partitions = dg.DynamicPartitionsDefinition(name=SPHERES)
