"""Dump the keys of the code location's definitions (before/after comparison for issue 22)."""
import json, sys, warnings
warnings.filterwarnings("ignore")
import dagster as dg
mod = __import__("memory_pipeline.definitions", fromlist=["defs"])
d = mod.defs
if not isinstance(d, dg.Definitions):
    d = d()
repo = d.get_repository_def()
g = repo.asset_graph
out = {
    "assets": sorted(k.to_user_string() for k in g.get_all_asset_keys()),
    "groups": {k.to_user_string(): g.get(k).group_name for k in g.get_all_asset_keys()},
    "owners": {k.to_user_string(): list(g.get(k).owners) for k in g.get_all_asset_keys()},
    "tags": {k.to_user_string(): dict(g.get(k).tags) for k in g.get_all_asset_keys()},
    "kinds": {k.to_user_string(): sorted(g.get(k).kinds) for k in g.get_all_asset_keys()},
    "deps": {k.to_user_string(): sorted(p.to_user_string() for p in g.get(k).parent_keys) for k in g.get_all_asset_keys()},
    "checks": sorted(c.to_user_string() for c in g.asset_check_keys),
    "jobs": sorted(j.name for j in repo.get_all_jobs()),
    "schedules": sorted(s.name for s in repo.schedule_defs),
    "sensors": sorted(s.name for s in repo.sensor_defs),
    "resources": sorted(repo.get_top_level_resources()),
}
json.dump(out, open(sys.argv[1], "w"), indent=1, sort_keys=True)
print({k: len(v) for k, v in out.items()})
