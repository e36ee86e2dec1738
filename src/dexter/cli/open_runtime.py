"""The runtime every command opens: Dexter's own runtime with the toolsets that live above it
(schedules) handed in, so the runtime itself never imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dexter.config import Settings
    from dexter.runtime import Runtime


def open_runtime(settings: Settings, **options: Any) -> Runtime:
    """`Runtime(settings, **options)` offering the `cron`, `heartbeat` and `watch` tools where a
    channel has schedules."""
    from dexter.cron.tools import schedule_toolset
    from dexter.runtime import Runtime
    from dexter.watch.tools import watch_toolset

    return Runtime(settings, toolsets=(schedule_toolset, watch_toolset), **options)


__all__ = ["open_runtime"]
