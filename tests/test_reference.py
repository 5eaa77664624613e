"""One source for every knob's meaning: the docstrings of the knobs' fields. docs/knobs.md is
generated from them and from the yaml defaults (lab.reference); these tests fail when a yaml
default, a Config field and docs/knobs.md (or the README's short table) disagree."""

import dataclasses
import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from lab import agents
from lab import reference
from lab.config import jobs
from lab.config.compose import compose
from lab.knobs import RUN_KEYS, SETTINGS, ResultsSettings, RunConfig

REPO = Path(__file__).resolve().parents[1]
KNOBS_PAGE = REPO / "docs" / "knobs.md"
YAMLS = [REPO / "conf" / "config.yaml", *sorted((REPO / "conf").glob("*/*.yaml"))]


def test_the_knob_page_is_what_the_code_and_the_yaml_give():
    expected = reference.markdown().split("\n")
    found = KNOBS_PAGE.read_text().split("\n")
    for number, (want, got) in enumerate(zip(expected, found), start=1):
        assert got == want, (f"docs/knobs.md line {number} disagrees with the Config docstrings and yaml "
                             f"defaults: it says {got!r}, they give {want!r}; run: {reference.COMMAND}")
    assert len(found) == len(expected), f"docs/knobs.md has another length; run: {reference.COMMAND}"


@pytest.mark.parametrize("name", agents.ALGORITHMS)
def test_every_config_field_has_a_yaml_default_and_a_meaning(name):
    algorithm = agents.get(name)
    defaults = compose(f"algorithm={name}", "~matchup")  # the defaults the reference lists
    missing = [n for n in algorithm.Config.names() if n not in defaults]
    assert not missing, f"conf/algorithm/{name}.yaml sets no default for {missing} (fields of its Config)"
    undocumented = set(algorithm.Config.names()) - set(reference.field_docs(algorithm.Config))
    assert not undocumented, f"{name}'s Config fields without a docstring: {sorted(undocumented)}"
    job = jobs.job(defaults)  # every default is a value its field allows
    stored = {**dataclasses.asdict(job.run), **dataclasses.asdict(job.knobs)}
    assert {n: stored[n] for n in algorithm.Config.names()} == {n: defaults[n] for n in algorithm.Config.names()}


@pytest.mark.parametrize("name", agents.ALGORITHMS)
def test_every_key_of_an_algorithm_yaml_is_a_knob_it_has(name):
    raw = OmegaConf.to_container(OmegaConf.load(REPO / "conf" / "algorithm" / f"{name}.yaml"))
    raw.pop("defaults", None)
    allowed = set(RUN_KEYS) | set(agents.get(name).Config.names())
    assert set(raw) <= allowed, f"conf/algorithm/{name}.yaml sets {sorted(set(raw) - allowed)}: no knobs of {name}"


@pytest.mark.parametrize("path", sorted((REPO / "conf" / "matchup").glob("*.yaml")), ids=lambda p: p.stem)
def test_a_matchup_file_is_a_game_an_algorithm_and_an_opponent_and_sets_their_knobs(path):
    """conf/matchup/<game>_<algorithm>_<opponent>.yaml sets the algorithm's knobs (and, like its
    yaml, the run's budget): Hydra picks it by name only, so a misspelt name or key would be
    silently ignored; here it is not."""
    games, opponents = ({p.stem for p in (REPO / "conf" / group).glob("*.yaml")} for group in ("game", "opponent"))
    named = [(game, name, opponent) for name in agents.ALGORITHMS
             for game, _, opponent in [path.stem.partition(f"_{name}_")] if game in games and opponent in opponents]
    assert len(named) == 1, f"{path.name} is not <game>_<algorithm>_<opponent>.yaml"
    game, name, opponent = named[0]
    raw = OmegaConf.to_container(OmegaConf.load(path))
    knobs = set(agents.get(name).Config.names())
    assert set(raw) <= knobs | set(RUN_KEYS), f"{path.name} sets knobs {name} has not"
    composed = jobs.job(compose(f"game={game}", f"algorithm={name}", f"opponent={opponent}"))
    assert {key: getattr(composed.knobs if key in knobs else composed.run, key) for key in raw} == raw


def test_every_key_of_config_yaml_is_a_knob():
    shared = reference.shared_defaults()
    run_and_settings = [f.name for cls in (RunConfig, ResultsSettings) for f in dataclasses.fields(cls)]
    assert set(run_and_settings) <= set(shared), "conf/config.yaml lacks a default of a run knob"
    assert set(shared) <= set(RUN_KEYS) | set(SETTINGS) | set(agents.knob_names())
    for cls in (RunConfig, ResultsSettings):
        assert set(reference.field_docs(cls)) == {f.name for f in dataclasses.fields(cls)}


@pytest.mark.parametrize("path", YAMLS, ids=lambda p: str(p.relative_to(REPO)))
def test_yaml_knob_lines_carry_no_meaning(path):
    """A knob's meaning lives in its docstring only; a comment beside its yaml default would be a
    second copy that nothing keeps in step (why a default was chosen goes above, in prose)."""
    commented = [line for line in path.read_text().splitlines() if re.match(r"^[A-Za-z_]\w*:.*#", line)]
    assert not commented, f"{path.relative_to(REPO)}: meanings belong in the Config docstrings: {commented}"


def test_the_readme_knob_table_shows_the_yaml_defaults():
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("## Knobs"):readme.index("## Named sweeps")]
    rows = re.findall(r"^\| (`.*?`) \| .* \| (`.*?`) \|$", table, re.M)
    shown = {}
    for names, defaults in rows:
        shown.update(zip(re.findall(r"`(\w+)`", names), re.findall(r"`([^`]+)`", defaults)))
    shared = reference.shared_defaults()
    assert set(shown) == set(RUN_KEYS) | set(SETTINGS) | {"layers", "neurons", "alpha"}
    for key, default in shown.items():
        assert default == reference.shown(shared[key]), (
            f"README's knob table: {key} defaults to {default}, conf/config.yaml to {shared[key]}")


def test_the_algorithm_knob_names_every_algorithm():
    """Its docstring lists them (docs/architecture.md's step 4 for a new one)."""
    meaning = reference.field_docs(RunConfig)["algorithm"]
    assert re.findall(r"\w+", meaning.split("(", 1)[1]) == list(agents.ALGORITHMS), meaning
