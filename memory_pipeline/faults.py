"""Named crash points for fault-injection tests: MEMORY_PIPELINE_CRASH_AT=<name> SIGKILLs the process there.

Unset (always, in production) it costs one environment lookup."""

import os
import signal

ENV = "MEMORY_PIPELINE_CRASH_AT"
POINTS = ("after_phase1", "inside_phase2", "writing_report", "inside_import", "flush_after_transcript",
          "flush_before_record")


def crash_point(name: str) -> None:
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
