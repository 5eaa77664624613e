"""4x4 (3x3 with --quick) enumerated and solved (`--exact`, issue 26; lab.game.solver), then a
policy's exact evaluation timed for each fixed player and for the lowest optimal cell's
deterministic policy."""

import resource
import time

from lab.game import measures, solver


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def report(m: int, n: int, k: int) -> str:
    """The pass on one board, timed: counts, the game's value, exact() per policy and seat."""
    started, before = time.perf_counter(), _peak_mb()
    solved = solver.solve(m, n, k)
    seconds, found = time.perf_counter() - started, solver.counts(solved)
    held = sum(a.nbytes for part in solved[1:] for a in part) / 2**20
    lines = [
        f"{m}x{n} k{k}: {found['positions']:,} positions, enumerated and solved in {seconds:.1f} s; "
        f"arrays {held:.0f} MB, peak RSS {_peak_mb():.0f} MB ({before:.0f} before)",
        f"by depth: {', '.join(f'{c:,}' for c in found['by_depth'])}",
        f"terminal: {found['x_wins']:,} X wins, {found['o_wins']:,} O wins, {found['draws']:,} draws; "
        f"value: {int(solved.value[0][0]):+d} (X's view)"]
    lines.append(f"{'policy':<15} seat seconds " + "".join(f"{o:>18}" for o in measures.OPPONENTS)
                 + "  win/draw/loss %")
    measures.exact(solved, measures.OPPONENTS[0], 1)  # compiles the kernels, which the timed rows leave out
    for name in (*measures.OPPONENTS, "lowest optimal"):
        for player in (1, 2):
            policy = measures.lowest_optimal(solved, player) if name == "lowest optimal" else name
            started = time.perf_counter()
            result = measures.exact(solved, policy, player)
            shares = ["/".join(f"{100 * result[f'{o}_{r}']:.1f}" for r in measures.RESULTS)
                      for o in measures.OPPONENTS]
            lines.append(f"{name:<15} {'XO'[player - 1]:<4} {time.perf_counter() - started:7.2f} "
                         + "".join(f"{s:>18}" for s in shares)
                         + (f"  asked at {policy.asked:,} positions" if callable(policy) else ""))
    return "\n".join(lines + [f"peak RSS {_peak_mb():.0f} MB"])


def exact_section(quick: bool) -> None:
    print(report(3, 3, 3) if quick else report(4, 4, 4), flush=True)
