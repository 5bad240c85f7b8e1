"""Progress bars on stderr for long measurements — or nothing, when piped, NO_COLOR or --json."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from perfprobe.engine.probe import ProgressFactory, ProgressTask


class _NullTask:
    def advance(self, steps: float = 1) -> None:
        """Nothing to draw."""


@contextmanager
def null_progress(description: str, total: float) -> Iterator[ProgressTask]:
    """The silent progress factory: for pipes, NO_COLOR, --json and tests."""
    yield _NullTask()


class _RichTask:
    def __init__(self, progress: Any, task_id: Any) -> None:
        self._progress, self._task_id = progress, task_id

    def advance(self, steps: float = 1) -> None:
        self._progress.advance(self._task_id, steps)


def rich_progress(console: Any) -> ProgressFactory:
    """A progress factory drawing transient rich bars on `console` (a stderr Console)."""

    @contextmanager
    def factory(description: str, total: float) -> Iterator[ProgressTask]:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True) as progress:
            yield _RichTask(progress, progress.add_task(description, total=total))

    return factory
