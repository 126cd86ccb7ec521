"""The one exception the CLI turns into an `error: …` line instead of a traceback. Lower layer: imports nothing."""

from __future__ import annotations


class UserError(Exception):
    """Something the user can fix (a bad file, a damaged store, an unknown id). The message's first line names
    the file, row or field, or says what to do (any further lines are detail); `exit_code` is what the CLI
    returns."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
