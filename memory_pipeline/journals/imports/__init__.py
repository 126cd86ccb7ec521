"""Real agents' sessions → transcripts: Claude Code and Codex CLI session files and plain message logs.

`importer.import_paths` walks files or folders, detects each file's format (`detect`), parses it with the
format's module (claude_code, codex, messages — pure parsing into `model.SourceSession`) and writes one transcript
per source session under `raw/conversations/` (temp file + rename), or a new version of the session's transcript
when its source grew. No Dagster here: the CLI (`imports.cli`) and the sensor run the journals.
"""
