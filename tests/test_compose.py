"""The sweep's composition (lab.config.compose.Composer) equals Hydra's own, job by job, for every
override form the lab supports, while composing once per combination of config-group choices."""

import random

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from lab import agents
from lab.config.compose import grid

ALGORITHMS = list(agents.ALGORITHMS)
GROUPS = {  # key -> override forms choosing config groups
    "algorithm": [*(f"algorithm={a}" for a in ALGORITHMS), "algorithm=choice(q_table,td_value)",
                  "algorithm=glob(q_*)", "algorithm=glob(*)", "algorithm=mc_vfa,negamax_q,alphazero"],
    "opponent": ["opponent=random", "opponent=self", "opponent=block,perfect", "opponent=choice(onestep,self)",
                 "~opponent"],
    "+net": ["+net=l2_n8", "+net=l3_n16,l5_n32", "+net=glob(l4*)"],
    "+sweeps": ["+sweeps=smoke", "+sweeps=writeup_mc_vfa", "+sweeps=all_algorithms"],
}
VALUES = {  # key -> value override forms (sweeps, adds, deletes, interpolations, odd literals, errors)
    "seed": ["seed=range(0,3)", "seed=+3", "seed=007", "seed=-1", "seed=1,2", "seed=choice(4,5)"],
    "alpha": ["alpha=choice(0.1,0.5)", "alpha=0.1,0.2", "alpha=range(0.1,0.4,0.1)", "alpha=1", "alpha=${gamma}"],
    "layers": ["++layers=3", "~layers", "layers=${neurons}", "layers=null", "~layers=5"],
    "iterations": ["iterations=1_000", "~iterations=1000", "iterations=10,20"],
    "results_dir": ["results_dir=/tmp/${algorithm}/${seed}", "results_dir='my results'", "results_dir=out"],
    "tag": ["+tag=x", "+tag=run_${seed}", "+tag={a:1,b:[1,2]}", "++tag=[1,2]", "+tag=${hydra.job.name}",
            "+tag=${hydra:job.name}"],
    "memory": ["memory=keep", "memory=clear,keep", "+memory=keep"],
    "epsilon": ["epsilon=1", "epsilon=0.5,1.0", "epsilon=true"],
    "player": ["player=1,2", "player=2"],
    "eval_every": ["~eval_every", "eval_every=5"],
    "force": ["force=true", "force=false,true"],
    "wrong": ["lerning_rate=1,2", "~nope=1,2", "+seed=1,2"],  # Hydra refuses these, job by job
}


def _outcome(compose, overrides):
    try:
        return compose(overrides)
    except Exception as exc:  # noqa: BLE001 - both sides must fail alike
        return type(exc).__name__


def _random_command(rng: random.Random) -> list[str]:
    command = [rng.choice(forms) for key, forms in GROUPS.items()
               if rng.random() < (0.15 if key == "+sweeps" else 0.6)]
    command += [rng.choice(VALUES[key]) for key in rng.sample(sorted(VALUES), rng.randint(1, 4))]
    rng.shuffle(command)
    return command


@pytest.mark.parametrize("configurations", [24, pytest.param(120, marks=pytest.mark.slow)])
def test_the_composition_equals_hydras_on_a_random_grid(configurations):
    rng, compared, commands, bases = random.Random(configurations), 0, 0, 0
    while compared < configurations:
        command = _random_command(rng)
        try:
            composer, jobs = grid(*command)
        except Exception:  # noqa: BLE001 - Hydra refuses the whole command (e.g. a non-swept typo)
            continue
        for overrides in rng.sample(jobs, min(len(jobs), 12)):
            assert _outcome(composer, overrides) == _outcome(composer.full, overrides), overrides
            compared += 1
        commands += 1
        bases += len(composer.bases)
    assert bases < compared  # configurations shared their compositions


@pytest.mark.parametrize("text", ["seed=0", "seed=12", "seed=-3", "seed=+4", "a_b-c=10", "seed=007",
                                  "seed=1_000", "seed=1.0", "seed=1e3", "a.b=1", "+seed=1", "seed=x1",
                                  "seed= 1", "seed=0x10"])
def test_overrides_are_read_as_hydra_reads_them(text):
    composer, _ = grid()
    assert composer._parse(text)[0] == OverridesParser.create().parse_override(text)


def _counting_full(composer):
    calls = []
    full = composer.full
    composer.full = lambda overrides: calls.append(overrides) or full(overrides)
    return calls


def test_one_composition_per_combination_of_group_choices():
    composer, jobs = grid("+sweeps=writeup_mc_vfa", "seed=range(0,5)")
    full = _counting_full(composer)
    assert len({str(composer(o)) for o in jobs}) == len(jobs) == 160
    assert len(composer.bases) == 4 and not full  # the four network shapes


@pytest.mark.parametrize("form", ["+tag=x", "~layers", "results_dir=/data/${algorithm}", "alpha=${epsilon}"])
def test_value_overrides_of_every_form_use_the_shared_composition(form):
    composer, jobs = grid("algorithm=q_table", "seed=range(0,20)", form)
    full = _counting_full(composer)
    cfgs = [composer(o) for o in jobs]
    assert [c["seed"] for c in cfgs] == list(range(20))
    assert len(composer.bases) == 1 and not full


def test_an_override_hydra_refuses_fails_with_hydras_error():
    composer, jobs = grid("algorithm=q_table", "lerning_rate=1,2")
    with pytest.raises(Exception, match="Could not override 'lerning_rate'"):
        composer(jobs[0])
