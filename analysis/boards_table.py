"""Who wins, against whom, in how many episodes: the board sweeps' table for docs/boards.md.

    python analysis/boards_table.py results/boards_4x4 results/boards_5x5

One line per game, seat and training opponent, its algorithms ranked by their final win - loss
against that opponent (the seed mean): win / draw / loss there (by games with the 95% Wilson
interval of the win rate over every seed's games; exact on 4x4, with the board's ceiling), the
episodes each first reached 90% wins against it (at an evaluation point, seed mean), its
training episodes and seconds.
"""

import argparse

import pandas as pd

from lab import cli, results, stats
from lab.analysis import summary

LEVEL = 0.9
"""The win rate whose first evaluation point at or above it is the "episodes to" column"""


def last_points(curves: pd.DataFrame) -> pd.DataFrame:
    """Every run's final evaluation, against the opponent it trained against."""
    curves = curves[curves["opponent"] != "self"]
    return curves[curves["episodes"] == curves.groupby("run_id")["episodes"].transform("max")]


def _episodes_to(curves: pd.DataFrame, column: str) -> str:
    reached = summary.episodes_to_reach(curves, column, LEVEL)
    return "not reached" if pd.isna(reached) else f"{reached:,.0f}"


def _win(runs: pd.DataFrame, vs: str) -> str:
    win = runs[f"{vs}_win"].mean()
    if (runs["evaluation"] == "exact").all():
        return f"{win:.3f}"
    games = runs[f"{vs}_games"]
    _, low, high = stats.wilson(int((runs[f"{vs}_win"] * games).round().sum()), int(games.sum()))
    return f"{win:.4f} [{low:.4f}, {high:.4f}]"  # 9,600 games: a point's interval is 0.0004 wide at 0 or 1


def rows(curves: pd.DataFrame) -> pd.DataFrame:
    lines = []
    final = last_points(curves)
    for (game, seat, vs, algorithm, _), runs in final.groupby(["game", "seat", "opponent", "algorithm", "config"]):
        ceiling = summary.ceiling(game, vs, int(seat))
        lines.append({
            "game": game, "seat": "X" if seat == 1 else "O", "against": vs, "algorithm": algorithm,
            "seeds": len(runs), "win": _win(runs, vs), "draw": f"{runs[f'{vs}_draw'].mean():.3f}",
            "loss": f"{runs[f'{vs}_loss'].mean():.3f}",
            "win - loss": runs[f"{vs}_win"].mean() - runs[f"{vs}_loss"].mean(),
            "ceiling win / loss": "" if ceiling is None else f"{ceiling['win']:.3f} / {ceiling['loss']:.3f}",
            f"episodes to {LEVEL:.0%} wins": _episodes_to(curves[curves["run_id"].isin(runs["run_id"])], f"{vs}_win"),
            "episodes": f"{runs['episodes'].max():,.0f}", "train seconds": f"{runs['train_seconds'].mean():.0f}",
        })
    table = pd.DataFrame(lines)
    return table.sort_values(["game", "seat", "against", "win - loss"], ascending=[True, False, True, False])


def markdown(table: pd.DataFrame) -> str:
    shown = table.assign(**{"win - loss": table["win - loss"].map("{:.3f}".format)})
    header = "| " + " | ".join(shown.columns) + " |"
    return "\n".join([header, "|" + "---|" * len(shown.columns),
                      *("| " + " | ".join(str(v) for v in row) + " |" for row in shown.itertuples(index=False))])


@cli.one_line(results.ResultsError)
def main() -> None:
    parser = cli.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dirs", nargs="+", help="results directories of board sweeps")
    args = parser.parse_args()
    curves = pd.concat([summary.exact_curves(results.load(d)) for d in args.results_dirs], ignore_index=True)
    curves = curves[curves["game"].fillna("ttt") != "ttt"] if "game" in curves else curves.iloc[:0]
    if curves.empty:
        cli.fail("no bigger-board runs in " + ", ".join(args.results_dirs))
    print(markdown(rows(curves)))


if __name__ == "__main__":
    main()
