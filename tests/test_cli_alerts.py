"""`swarmdeck alerts`: the open alerts with their ids, and `--ack ID` to acknowledge one."""

from __future__ import annotations

import getpass
import time

import pytest

from swarmdeck.actions.alerts import raise_alert
from swarmdeck.cli import main
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.store_rows import open_alerts
from swarmdeck.state import StateStore


def test_alerts_lists_then_acknowledges_one(
    isolated_home, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StateStore.open_default()
    with store.transaction() as conn:
        raise_alert(conn, "slice-full", "warning", "runner", "vm", "the slice was full",
                    time.time())
    [alert] = open_alerts(store)
    assert main(["alerts"]) == 0
    out = capsys.readouterr().out
    assert str(alert.id) in out and "the slice was full" in out and "warning" in out
    assert main(["alerts", "--ack", str(alert.id)]) == 0
    assert f"alert {alert.id} acknowledged" in capsys.readouterr().out
    assert open_alerts(store) == []
    with store.read() as conn:
        [by] = conn.execute("SELECT acknowledged_by FROM alerts").fetchone()
    assert by == getpass.getuser()
    assert main(["alerts"]) == 0
    assert "no open alerts" in capsys.readouterr().out
    assert main(["alerts", "--ack", str(alert.id)]) == 0
    again = capsys.readouterr().out
    assert again.startswith(f"alert {alert.id} was acknowledged by {getpass.getuser()} ")


def test_acknowledging_an_alert_that_never_was_is_a_usage_error(
    isolated_home, capsys: pytest.CaptureFixture[str]
) -> None:
    StateStore.open_default()
    assert main(["alerts", "--ack", "42"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no alert 42" in err
