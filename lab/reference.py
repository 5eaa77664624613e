"""The knob reference, docs/knobs.md, generated from the one place each knob's meaning is written.

A knob's meaning is the docstring of its field: `lab.knobs.RunConfig` and `lab.knobs.ResultsSettings`
for the knobs every run has, each algorithm's `Config` for its own. Its default is what Hydra
composes from conf/config.yaml and conf/algorithm/<name>.yaml, which carry no meanings;
tests/test_reference.py fails when a yaml default, a Config field and docs/knobs.md disagree.

    python -m lab.reference > docs/knobs.md
"""

import ast
import dataclasses
import importlib.resources
import inspect
import sys
import textwrap
import typing

from omegaconf import OmegaConf

from lab import agents, cli
from lab.config.compose import CONF_PACKAGE, compose
from lab.knobs import ResultsSettings, RunConfig
from lab.search.samplers import SAMPLERS
from lab.search.schedulers import SCHEDULERS
from lab.search.settings import SearchSettings, either

COMMAND = "python -m lab.reference > docs/knobs.md"
REGISTRIES = {"search": SAMPLERS, "scheduler": SCHEDULERS}  # settings whose choices follow their meaning


def field_docs(cls) -> dict[str, str]:
    """Each dataclass field's docstring (the string right below it), whitespace joined."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    docs = {}
    for field, after in zip(body, body[1:]):
        if (isinstance(field, ast.AnnAssign) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            docs[field.target.id] = " ".join(after.value.value.split())
    return docs


def shown(value) -> str:
    """A default as the yaml writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and float(f"{value:g}") == value:
        return f"{value:g}"  # short where exact: -1e+10, not -10000000000.0
    return str(value)


def _yaml(path: str) -> dict:
    """A file of conf/ as compose reads it."""
    return OmegaConf.to_container(OmegaConf.create(
        importlib.resources.files(CONF_PACKAGE).joinpath(path).read_text()))


def shared_defaults() -> dict:
    """conf/config.yaml's own values, with its config-group choices (algorithm, opponent) and the
    knobs its game choice sets (m, n, k of game=ttt)."""
    raw = _yaml("config.yaml")
    groups = {key: value for entry in raw.pop("defaults") if isinstance(entry, dict)
              for key, value in entry.items() if not key.startswith(("override ", "optional "))}
    raw.pop("hydra")
    game = _yaml(f"game/{groups.pop('game')}.yaml")
    return {**groups, **game, **raw}


KINDS = {int: "integer", float: "number", str: "string", bool: "true/false", int | None: "integer",
         str | None: "string"}  # a field's type as a knob's user sees it


def _rows(cls, defaults: dict) -> list[tuple]:
    """A table row (name, kind, default, meaning) per field of the dataclass `cls`."""
    docs, types = field_docs(cls), typing.get_type_hints(cls)
    return [(f.name, KINDS[types[f.name]], shown(defaults[f.name]), docs[f.name])
            for f in dataclasses.fields(cls)]


def _table(rows) -> list[str]:
    lines = ["| knob | type | default | meaning |", "|---|---|---|---|"]
    escaped = [(name, kind, default, meaning.replace("|", "\\|")) for name, kind, default, meaning in rows]
    return lines + [f"| `{name}` | {kind} | `{default}` | {meaning} |" for name, kind, default, meaning in escaped]


def _run_section(shared: dict) -> list[str]:
    rows = _rows(RunConfig, shared) + _rows(ResultsSettings, shared)
    listed = {row[0] for row in rows}
    others = [f"`{key}={shown(value)}`" for key, value in shared.items() if key not in listed]
    return ["## Every run", "",
            "The knobs of `lab.knobs.RunConfig` and `lab.knobs.ResultsSettings`, with the defaults of "
            "`conf/config.yaml` (an algorithm's yaml may change them: see its section).", "",
            *_table(rows), "",
            f"`conf/config.yaml` also sets {', '.join(others)} for the algorithms that use them "
            "(their meanings are in the algorithms' sections).", ""]


def _algorithm_section(name: str, shared: dict) -> list[str]:
    algorithm = agents.get(name)
    module = sys.modules[algorithm.Learner.__module__]
    summary = " ".join(module.__doc__.split("\n\n")[0].split())
    defaults = compose(f"algorithm={name}", "~matchup")  # what conf/matchup sets: listed apart, below
    rows = _rows(algorithm.Config, defaults)
    own = set(algorithm.Config.names())
    changed = [f"`{key}={shown(defaults[key])}`" for key in shared
               if key not in own | {"algorithm"} and defaults.get(key) != shared[key]]
    lines = [f"## `{name}`", "", f"{summary} Knobs: `lab/agents/{name}.py`'s `Config`; defaults: "
             f"`conf/algorithm/{name}.yaml`.", "", *_table(rows), ""]
    if changed:
        lines += [f"Its yaml also sets {', '.join(changed)}.", ""]
    return lines + _matchup_lines(name)


def _matchup_lines(name: str) -> list[str]:
    """What conf/matchup/<game>_<name>_<opponent>.yaml sets against one opponent, a line a file."""
    folder = importlib.resources.files(CONF_PACKAGE).joinpath("matchup")
    lines = []
    for file in sorted((f for f in folder.iterdir() if f.name.endswith(".yaml")), key=lambda f: f.name):
        game, _, opponent = file.name.removesuffix(".yaml").partition(f"_{name}_")
        if opponent:
            knobs = ", ".join(f"`{key}={shown(value)}`" for key, value in _yaml(f"matchup/{file.name}").items())
            lines += [f"Against `opponent={opponent}` on `game={game}` (`conf/matchup/{file.name}`): {knobs}.", ""]
    return lines


def _search_section() -> list[str]:
    defaults = {f.name: f.default for f in dataclasses.fields(SearchSettings)}
    rows = [(*r[:3], r[3] + ": " + either(f"{n} ({e.description})" for n, e in REGISTRIES[r[0]].items()))
            if r[0] in REGISTRIES else r for r in _rows(SearchSettings, defaults)]  # a registry's choices
    return ["## Search settings", "",
            "`hydra.sweeper.<key>=...` of an adaptive search (`hydra/sweeper=search`), from "
            "`lab.search.settings.SearchSettings`, where they and their defaults are defined once; see "
            "[Adaptive search](search.md).", "", *_table(rows), ""]


def markdown() -> str:
    """The whole of docs/knobs.md."""
    shared = shared_defaults()
    lines = ["# Knob reference", "",
             f"Generated by `{COMMAND}` from the docstrings of the knobs' fields (their one source) "
             "and the defaults Hydra composes from `conf/`; `tests/test_reference.py` fails when "
             "this page, a yaml default and a `Config` field disagree. Every knob is set on the "
             "command line as `key=value`.", "",
             *_run_section(shared)]
    for name in agents.ALGORITHMS:
        lines += _algorithm_section(name, shared)
    lines += _search_section()
    return "\n".join(lines).rstrip() + "\n"


@cli.one_line()  # a full disk or a closed pipe on stdout: one line
def main(argv=None) -> None:
    """`python -m lab.reference`: docs/knobs.md on stdout; it takes no arguments."""
    cli.ArgumentParser(prog="python -m lab.reference", description="Print docs/knobs.md.").parse_args(argv)
    sys.stdout.write(markdown())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
