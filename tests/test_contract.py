"""The learner contract and the shape of the code: typed algorithms in a registry, agents that
are snapshots, canonical run identity, and imports that only ever point down."""

import ast
from pathlib import Path

import numpy as np
import pytest

from lab import agents, game
from lab.game import bitboards
from lab.agents import base
from lab.config.compose import compose
from lab.config.jobs import job, parse
from lab.knobs import Knobs
from sweeping import TINY_RUNS, cli

LAB = Path(__file__).resolve().parents[1] / "lab"


@pytest.mark.parametrize("name", agents.ALGORITHMS)
def test_every_algorithm_is_a_typed_record(name):
    algorithm = agents.get(name)
    assert algorithm.name == name and algorithm.Agent.algorithm == name
    assert issubclass(algorithm.Config, Knobs)
    assert issubclass(algorithm.Learner, base.Learner)
    assert issubclass(algorithm.Agent, base.Agent)
    with pytest.raises(ValueError, match="unknown algorithm 'nope'; allowed: mc_vfa"):
        agents.get("nope")


@pytest.mark.parametrize("name", agents.ALGORITHMS)
def test_agent_is_a_snapshot_that_later_training_leaves_alone(name):
    run_cfg, knobs = parse(compose(f"algorithm={name}", "episodes_per_update=20", *TINY_RUNS[name]))
    learner = agents.get(name).Learner(knobs, run_cfg)
    learner.iterate()
    snapshot = learner.agent()
    before = snapshot.scores(game.DECISIONS).copy()
    for _ in range(3):
        learner.iterate()
    np.testing.assert_array_equal(snapshot.scores(game.DECISIONS), before)


def _open_positions(board, count, rng) -> np.ndarray:
    """(count, 2) [x, o] of open positions reached by random play, X or O to move."""
    positions = []
    while len(positions) < count:
        x, o, won = np.uint64(0), np.uint64(0), False
        for ply in range(int(rng.integers(0, board.m * board.n - 1))):
            empty = [c for c in range(board.m * board.n) if not int(x | o) >> c & 1]
            x, o, won = bitboards.place(board, x, o, ply % 2, int(rng.choice(empty)))
            if won:
                break
        if not won:
            positions.append((x, o))
    return np.array(positions, np.uint64)


@pytest.mark.parametrize("name", agents.ALGORITHMS)
def test_a_board_agent_plays_the_best_scored_empty_cells_for_the_side_to_move(name):
    run_cfg, knobs = parse(compose(f"algorithm={name}", "game=mnk_4_4_4", "episodes_per_update=5", *TINY_RUNS[name]))
    learner = agents.get(name).Learner(knobs, run_cfg)
    learner.iterate()
    agent = learner.agent()
    positions = _open_positions(bitboards.board(4, 4, 4), 40, np.random.default_rng(0))
    to_move = [int(x).bit_count() > int(o).bit_count() for x, o in positions]
    assert 5 < sum(to_move) < 35  # both sides to move among them
    empty = np.array([[not int(x | o) >> c & 1 for c in range(16)] for x, o in positions])
    scores, policy = agent.scores(positions), agent.policy(positions)
    assert scores.shape == policy.shape == (40, 16)
    best = empty & (np.where(empty, scores, -np.inf) == np.where(empty, scores, -np.inf).max(axis=1, keepdims=True))
    np.testing.assert_allclose(policy, best / best.sum(axis=1, keepdims=True))
    alone = np.concatenate([agent.scores(positions[i:i + 1]) for i in range(len(positions))])
    np.testing.assert_allclose(alone, scores, rtol=1e-5)  # each side's rows scored as when asked alone


def test_knob_values_are_stored_in_their_declared_type():
    _, knobs = parse(compose("algorithm=q_table", "epsilon=1", "alpha=1"))
    assert type(knobs.epsilon) is float and type(knobs.alpha) is float
    assert job(compose("algorithm=q_table", "epsilon=1")).run_id == \
        job(compose("algorithm=q_table", "epsilon=1.0")).run_id


def test_a_grid_of_equal_values_in_two_spellings_trains_one_run(tmp_path):
    done = cli(["--multirun", "algorithm=q_table", "epsilon=1,1.0", "alpha=0.5,0.50",
                "iterations=2", "episodes_per_update=10", "results_dir=out",
                "hydra.launcher.parallel=false", "hydra.launcher.figures=false"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 configuration x 1 seed, 1 run to train" in done.stdout
    assert len(list((tmp_path / "out").glob("*.parquet"))) == 1


def _module_name(path: Path) -> str:
    parts = path.relative_to(LAB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The lab modules `path` imports anywhere (module level or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            # `from lab import game` imports the module lab.game; `from lab.game import X` lab.game
            found |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                      else node.module for alias in node.names}
    return {name for name in found if name in modules}


def import_graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in LAB.rglob("*.py")}
    return {name: _imports(path, set(paths)) - {name} for name, path in paths.items()}


def layers(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules bottom to top: each layer imports only modules of layers below it. Raises
    with the modules of a cycle when there is one."""
    placed, out = set(), []
    while len(placed) < len(graph):
        layer = sorted(m for m, deps in graph.items() if m not in placed and deps <= placed)
        if not layer:
            stuck = {m: sorted(d - placed) for m, d in graph.items() if m not in placed}
            raise AssertionError(f"import cycle among: {stuck}")
        out.append(layer)
        placed |= set(layer)
    return out


def test_no_module_of_the_lab_is_over_450_lines_nor_a_function_over_60():
    for path in LAB.rglob("*.py"):
        text = path.read_text()
        assert len(text.splitlines()) <= 450, path
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno - node.lineno + 1 <= 60, f"{path}: {node.name}"


def test_imports_point_only_down():
    graph = import_graph()
    assert {"lab.game", "lab.knobs", "lab.config.jobs", "lab.sweep"} <= set(graph)
    layers(graph)  # raises on a cycle

    def below(module, seen=frozenset()):
        return set().union(*(below(d, seen | {module}) | {d} for d in graph[module] - seen))

    # the chain the architecture promises: no step reaches, even indirectly, a step after it
    chain = ["lab.game", "lab.knobs", "lab.agents", "lab.config.jobs", "lab.run", "lab.results",
             "lab.execution.batch", "lab.sweep"]
    for i, module in enumerate(chain):
        assert not below(module) & set(chain[i + 1:]), module
    assert graph["lab.game"] == set() and graph["lab.knobs"] == set()
    assert graph["lab.cli"] == set()  # every command's one-line rule: any module may use it
    assert graph["lab.analysis.plots"] <= {"lab.results", "lab.analysis.summary", "lab.evaluation.evaluate", "lab.knobs",
                                  "lab.agents", "lab.analysis.knob_figures", "lab.results.search_record", "lab.cli", "lab"}
    # the statistics know nothing of results, sweeps or figures (the game and a run's knobs they may)
    game = {name for name in graph if name == "lab.game" or name.startswith("lab.game.")}
    assert below("lab.analysis.compare") <= {"lab.stats", "lab.evaluation.evaluate", "lab.evaluation.exact_ceiling", "lab.game.opponents", "lab.knobs",
                                    "lab.cli", "lab"} | game


LAYERS = [
    ("lab", "lab.cli", "lab.files", "lab.knobs", "lab.stats", "lab.compat"),  # rules every layer may use
    ("lab.game",), ("lab.nets",), ("lab.evaluation",), ("lab.agents",), ("lab.config",), ("lab.results",),
    ("lab.run",), ("lab.execution",), ("lab.search", "lab.analysis"), ("lab.sweep",),
    ("lab.play", "lab.reference", "lab.bench"),
]
"""lab's packages bottom to top: each imports only its own package and lower layers' (inside a
function too); the packages of one layer (but the first) know nothing of each other. Data flows
config -> sweep/search -> run -> results -> analysis; each layer that drives it sits above those
it drives."""

def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def crossings(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(module, imported) for every import that points up a layer or across one."""
    rank = {package: i for i, layer in enumerate(LAYERS) for package in layer}
    found = set()
    for module, imported in ((m, i) for m, deps in graph.items() for i in deps):
        mine, theirs = _package(module), _package(imported)
        if mine != theirs and (rank[theirs] > rank[mine] or rank[theirs] == rank[mine] > 0):
            found.add((module, imported))
    return found


def test_no_import_points_up_a_layer():
    graph = import_graph()
    placed = {package for layer in LAYERS for package in layer}
    assert {_package(m) for m in graph} == placed, "a new package needs its place in LAYERS"
    found = crossings(graph)
    assert not found, "; ".join(f"{m} imports {i}: {_package(i)} is not below {_package(m)}" for m, i in sorted(found))


def test_the_layer_check_names_an_import_that_points_up():
    graph = {"lab.game.engine": {"lab.run"}, "lab.run": {"lab.game.engine"}, "lab.search.study": {"lab.analysis.plots"}}
    assert crossings(graph) == {("lab.game.engine", "lab.run"), ("lab.search.study", "lab.analysis.plots")}


SWEEP_STEPS = ["lab.sweep.callbacks", "lab.sweep.store", "lab.sweep.overrides", "lab.sweep.dispatch",
               "lab.sweep", "lab.sweep.__main__"]
"""The sweep's modules bottom to top: each imports only modules before it (lab.sweep, the package,
re-exports the others and holds the Hydra entry point that `python -m lab.sweep` runs)."""


def test_the_sweep_modules_import_only_down_and_private_apis_only_through_lab_compat():
    graph = import_graph()
    assert {m for m in graph if m.startswith("lab.sweep")} == set(SWEEP_STEPS)
    for i, module in enumerate(SWEEP_STEPS):
        assert not graph[module] & set(SWEEP_STEPS[i + 1:]), module
    assert not any(graph[m] & set(SWEEP_STEPS) for m in graph if m.startswith(("lab.compat", "lab.run",
                                                                                 "lab.execution.workers", "lab.results")))
    for path in [*LAB.rglob("*.py"), *(LAB.parent / "hydra_plugins").rglob("*.py")]:
        if path.parent.name == "compat":
            continue
        text = path.read_text()
        for private in ("ray._private", "ray._raylet", "hydra._internal", "._get_node(", "._parse_config(",
                        "._parse_overrides_and_create_caching_repo("):
            assert private not in text, f"{path}: {private} (keep private APIs in lab/compat)"


def test_the_cycle_check_finds_a_cycle():
    with pytest.raises(AssertionError, match="import cycle"):
        layers({"a": {"b"}, "b": {"a"}, "c": set()})


def unexplained_inner_imports(source: str) -> list[int]:
    """The lines of the imports inside a function that say nothing of why: no `#` comment on the
    import, on an import right before it, or on a comment line just above those, in the function."""
    lines, found = source.splitlines(), set()
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        imports = [n for n in ast.walk(function) if isinstance(n, (ast.Import, ast.ImportFrom))]
        at = {line: node for node in imports for line in range(node.lineno, node.end_lineno + 1)}

        def said(node) -> bool:
            return any("#" in lines[i - 1] for i in range(node.lineno, node.end_lineno + 1))

        for node in imports:
            block = node  # up through the imports right before it: one comment may stand for them all
            while block.lineno - 1 in at and not said(block):
                block = at[block.lineno - 1]
            above = lines[block.lineno - 2].strip() if block.lineno - 1 > function.lineno else ""
            if not (said(block) or above.startswith("#")):
                found.add(node.lineno)
    return sorted(found)


def test_every_import_inside_a_function_says_why_it_is_not_at_the_top():
    paths = [*LAB.rglob("*.py"), *(LAB.parent / "hydra_plugins").rglob("*.py")]
    bare = [f"{path.relative_to(LAB.parent)}:{line}" for path in sorted(paths)
            for line in unexplained_inner_imports(path.read_text())]
    assert not bare, f"an import kept out of start-up says why in a comment, else it goes to the top: {bare}"


def test_the_inner_import_check_finds_an_import_that_says_nothing():
    source = ("import os\n\n\ndef f():\n    import ray\n\n\n# not this one's\ndef g():\n    import ray\n\n\n"
              "def h():\n    # Ray: only for a sweep on Ray\n    import ray\n    from ray import (\n"
              "        util)\n    import json  # light, but kept\n    import csv\n")
    assert unexplained_inner_imports(source) == [5, 10]


if __name__ == "__main__":  # the module graph, bottom to top, for the docs
    for depth, layer in enumerate(layers(import_graph())):
        print(f"{depth:2d}  " + "  ".join(layer))


def test_the_architecture_pages_module_table_is_the_tree():
    """Every path docs/architecture.md's module table names exists, and every module of lab/ is in
    a row (its own, or its package's folder)."""
    page = (LAB.parent / "docs" / "architecture.md").read_text()
    table = page.split("## Modules", 1)[1].split("\n\n", 2)[1]
    named = {path.strip("`").rstrip("/") for row in table.splitlines()[2:]
             for path in row.split("|")[1].replace("(+ `report.html`)", "").split(",")}
    named = {path.strip().strip("`").rstrip("/") for path in named}
    assert all((LAB.parent / path).exists() for path in named), sorted(p for p in named if not (LAB.parent / p).exists())
    def covered(relative: Path) -> bool:
        return bool(({str(relative)} | {str(p) for p in relative.parents if p.parent != Path(".")}) & named)

    missing = sorted(str(r) for r in (p.relative_to(LAB.parent) for p in LAB.rglob("*.py")) if not covered(r))
    assert missing == ["lab/__init__.py"], f"in no row of docs/architecture.md's module table: {missing}"
