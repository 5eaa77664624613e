"""The progress line: runs finished, running and failed, time elapsed and an ETA; and `Outcome`,
what the driver keeps of each finished run."""

import shutil
import sys
import time
from dataclasses import dataclass

from lab.results import first_values


@dataclass(frozen=True)
class Outcome:
    """What the driver keeps of a finished run (never its rows or its checkpoint)."""

    run_id: str
    failed: bool
    error: str | None  # its first line
    wall_seconds: float  # on its worker, storing it included (0 for a run lost with its worker)
    ended: float  # when it ended, stored, in seconds since the epoch

    @classmethod
    def of(cls, packed) -> "Outcome":
        first = first_values(packed.table, ("error", "wall_seconds", "finished_utc"))
        error = str(first["error"]).splitlines()[0] if packed.failed else None
        wall, ended = first["wall_seconds"], first["finished_utc"]
        wall = wall if wall is not None and wall == wall else 0.0
        return cls(packed.run_id, packed.failed, error, wall + packed.store_seconds,
                   (ended.timestamp() if ended is not None else time.time()) + packed.store_seconds)


def clock(seconds: float) -> str:
    """A duration as h:mm:ss (m:ss under an hour); '?' when unknown."""
    if seconds != seconds:  # NaN: nothing finished yet
        return "?"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


REDRAW = 0.1  # seconds between redraws of the bar at most: hundreds of runs may end in one


def _named(ended: list[Outcome]) -> str:
    """The runs that ended, in a few words (each failed one by name)."""
    if len(ended) == 1:
        return f"run {ended[0].run_id} {'FAILED' if ended[0].failed else 'done'}"
    failed = [o.run_id for o in ended if o.failed]
    return (f"{len(ended)} runs done (last {ended[-1].run_id})" if not failed else
            f"{len(ended)} runs ended, FAILED: {', '.join(failed)}")


class Progress:
    """Runs finished, running and failed, time elapsed and an ETA: on a terminal, one line redrawn
    in place with a bar; otherwise (a log file, CI), one line per finished run, naming it."""

    def __init__(self, total: int, ended: str = "finished"):
        self.total, self.done, self.failed, self.ended = total, 0, 0, ended
        self.start = self.finish_at = time.monotonic()
        self.live = sys.stderr.isatty()
        self.drawn = -REDRAW  # when the bar was last drawn

    def update(self, ended: list[Outcome] = (), running: int = 0, said: str | None = None) -> None:
        """Runs that ended together (one line for them all; `said` replaces the line naming them),
        or none: only time went by."""
        now = time.monotonic()
        elapsed = now - self.start
        if ended:
            self.done += len(ended)
            self.failed += sum(o.failed for o in ended)
            # Runs take about equally long, so the mean time per finished run predicts the rest;
            # between two finishes the estimate counts down.
            self.finish_at = now + elapsed / self.done * (self.total - self.done)
        eta = max(0.0, self.finish_at - now) if self.done else float("nan")
        counts = (f"{self.done}/{self.total} {self.ended}, {running} running, {self.failed} failed, "
                  f"{clock(elapsed)} elapsed, ETA {clock(eta)}")
        if self.live:
            if now - self.drawn < REDRAW and self.done < self.total:
                return
            self.drawn = now
            width = shutil.get_terminal_size().columns
            filled = round(10 * self.done / max(self.total, 1))
            line = f"[{'#' * filled}{'.' * (10 - filled)}] {counts}"[:width - 1]
            print(f"\r{line:<{width - 1}}", end="", file=sys.stderr, flush=True)
        elif ended:
            said = said or _named(ended)
            print(f"{said}; {counts}", file=sys.stderr, flush=True)

    def note(self, line: str) -> None:
        """A line on its own (above the bar, on a terminal)."""
        print(f"\r\033[K{line}" if self.live else line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.live:
            print(file=sys.stderr)


@dataclass
class Execution:
    """What `execute` did: the runs' outcomes, on how many cores, and the sweep's wall time from
    its start (composing and planning included) until the runs were saved and Ray stopped."""

    done: list[Outcome]
    cores: int
    seconds: float
    retried: int = 0  # runs sent again after Ray lost them with their worker or node
    warm_up: float = 0.0  # the forks' start-up before their first run (lab.run.warm_up)

    def efficiency(self) -> str:
        """Core utilisation (the runs' wall seconds and the forks' warm-up over cores x the sweep's),
        the fixed cost (the sweep's wall time before the first run began and after the last one
        ended), and the utilisation between those two moments."""
        busy = sum(o.wall_seconds for o in self.done)
        span = max(o.ended for o in self.done) - min(o.ended - o.wall_seconds for o in self.done)
        return (f"{(busy + self.warm_up) / (self.cores * self.seconds):.0%} of {self.cores} core"
                f"{'s' * (self.cores > 1)} busy over {self.seconds:.1f} s; fixed cost "
                f"{max(0.0, self.seconds - span):.1f} s (planning, starting workers, saving); "
                f"{busy / (self.cores * max(span, 1e-9)):.0%} busy while runs trained")
