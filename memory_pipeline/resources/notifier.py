"""Where alerts go: the Dagster log and `reports/alerts.jsonl` always, a webhook when configured."""

import json
import logging
import os
import urllib.request
from pathlib import Path

import dagster as dg

from memory_pipeline.operator.alert import Alert


class NotifierResource(dg.ConfigurableResource):
    """`webhook_url` (MEMORY_PIPELINE_WEBHOOK_URL) receives a Slack-compatible JSON POST per alert."""

    alerts_path: str
    webhook_url: str | None = None
    timeout_s: float = 10.0

    def send(self, alert: Alert, log: logging.Logger | dg.DagsterLogManager | None = None) -> None:
        line = json.dumps(alert.to_dict(), default=str)
        path = Path(self.alerts_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:  # one write per line: appends never interleave mid-line
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        if log is not None:
            (log.warning if alert.priority == "action" else log.info)(f"[{alert.priority}] {alert.subject}")
        if self.webhook_url:
            body = {"text": f"[{alert.priority}] {alert.subject}", "alert": alert.to_dict()}
            request = urllib.request.Request(
                self.webhook_url,
                data=json.dumps(body, default=str).encode("utf-8"),
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 - configured URL
                response.read()
