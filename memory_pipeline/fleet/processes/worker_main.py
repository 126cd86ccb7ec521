"""`python -m memory_pipeline.fleet.processes.worker_main ARGS`: dagster-celery's `worker start ARGS`, which runs the
Celery worker as a child and raises CalledProcessError when that child dies. Here its death is one line on
stderr — "worker w1 lost: killed by signal 9; …" — and exit status 1, not a traceback. Dagster is imported only
when the worker starts."""

from __future__ import annotations

import signal
import subprocess
import sys


def lost_line(name: str, returncode: int) -> str:
    """What a worker whose Celery process ended with `returncode` says (negative: killed by that signal)."""
    if returncode < 0:
        try:
            how = f"killed by signal {-returncode} ({signal.Signals(-returncode).name})"
        except ValueError:
            how = f"killed by signal {-returncode}"
    else:
        how = f"its Celery process exited with status {returncode}"
    return f"worker {name} lost: {how}; its nights are retried by the daemon (a step it held goes back on the queue)"


def worker_name(argv: list[str]) -> str:
    """The -n/--name value of a `worker start` command line, else "?"."""
    for i, arg in enumerate(argv):
        if arg in ("-n", "--name") and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--name="):
            return arg.split("=", 1)[1]
    return "?"


def main(argv: list[str]) -> int:
    import click
    from dagster_celery.cli import worker_start_command

    try:
        worker_start_command.main(args=argv, prog_name="dagster-celery worker start", standalone_mode=False)
    except click.ClickException as exc:  # a bad command line: click's own message, as dagster-celery prints it
        exc.show()
        return exc.exit_code
    except subprocess.CalledProcessError as exc:
        print(lost_line(worker_name(argv), exc.returncode), file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
