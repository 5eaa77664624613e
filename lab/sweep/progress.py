"""The progress line: runs finished, running and failed, time elapsed and an ETA; and `Outcome`,
what the driver keeps of each finished run."""

import shutil
import sys
import time
from dataclasses import dataclass

from lab.run import RunResult


@dataclass(frozen=True)
class Outcome:
    """What the driver keeps of a finished run: never its rows or its checkpoint."""

    run_id: str
    failed: bool
    error: str | None
    """the first line of the error of a failed run"""
    wall_seconds: float
    """the run's time on its worker (0 for a run lost with its worker)"""
    ended: float
    """when it ended, in seconds since the epoch"""

    @classmethod
    def of(cls, result: RunResult) -> "Outcome":
        first = result.rows.iloc[0]
        error = str(first["error"]).splitlines()[0] if result.failed else None
        wall = float(first.get("wall_seconds", 0.0))
        ended = first["finished_utc"].timestamp() if "finished_utc" in first else time.time()
        return cls(result.run_id, result.failed, error, wall if wall == wall else 0.0, ended)


def clock(seconds: float) -> str:
    """A duration as h:mm:ss (m:ss under an hour); '?' when unknown."""
    if seconds != seconds:  # NaN: nothing finished yet
        return "?"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Runs finished, running and failed, time elapsed and an ETA.

    On a terminal: one line redrawn in place, with a bar, cut to the terminal's width. Otherwise
    (a log file, CI): one line per finished run, naming it.
    """

    def __init__(self, total: int, ended: str = "finished"):
        self.total, self.done, self.failed, self.ended = total, 0, 0, ended
        self.start = self.finish_at = time.monotonic()
        self.live = sys.stderr.isatty()

    def update(self, result: Outcome | None = None, running: int = 0, said: str | None = None) -> None:
        """A run ended (`result`; `said` replaces the line naming it), or only time went by."""
        now = time.monotonic()
        elapsed = now - self.start
        if result is not None:
            self.done += 1
            self.failed += result.failed
            # Runs take about equally long, so the mean time per finished run predicts the rest;
            # between two finishes the estimate counts down.
            self.finish_at = now + elapsed / self.done * (self.total - self.done)
        eta = max(0.0, self.finish_at - now) if self.done else float("nan")
        counts = (f"{self.done}/{self.total} {self.ended}, {running} running, {self.failed} failed, "
                  f"{clock(elapsed)} elapsed, ETA {clock(eta)}")
        if self.live:
            width = shutil.get_terminal_size().columns
            filled = round(10 * self.done / max(self.total, 1))
            line = f"[{'#' * filled}{'.' * (10 - filled)}] {counts}"[:width - 1]
            print(f"\r{line:<{width - 1}}", end="", file=sys.stderr, flush=True)
        elif result is not None:
            said = said or f"run {result.run_id} {'FAILED' if result.failed else 'done'}"
            print(f"{said}; {counts}", file=sys.stderr, flush=True)

    def note(self, line: str) -> None:
        """A line on its own (above the bar, on a terminal)."""
        print(f"\r\033[K{line}" if self.live else line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.live:
            print(file=sys.stderr)
