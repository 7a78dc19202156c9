"""What the fold's tests share: the lifecycle events of the run most of them fold (thread ``t``, run ``r``).

(Importable from every file in this folder: pytest puts the folder on ``sys.path`` for its tests.)
"""

from __future__ import annotations

from agui_client import RunFinishedEvent, RunStartedEvent

START = RunStartedEvent(thread_id="t", run_id="r")
FINISH = RunFinishedEvent(thread_id="t", run_id="r")
