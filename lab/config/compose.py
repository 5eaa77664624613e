"""Hydra composition: the lab's config files -> flat configurations (plain dicts of knobs, which
lab.config.jobs.job validates): one (`compose`), or every job of a --multirun grid (`Composer`)."""

import copy
import re

from hydra import compose as hydra_compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType, ValueType
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.nodes import AnyNode

from lab.cli import first_line
from lab.compat import hydra as hydra_compat
from lab.knobs import ConfigError

CONF_PACKAGE = "lab.conf"  # the repository's conf/, installed with the lab as this package
# a plain key set to an integer literal, in the tokens of Hydra's override grammar (ID, INT)
_INT_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)=([+-]?(?:0|[1-9][0-9]*))")


def flat(cfg: DictConfig) -> dict:
    """The run's knobs as plain values (Hydra's own node left out)."""
    return {key: OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
            for key, value in cfg.items() if key != "hydra"}


def compose(*overrides: str) -> dict:
    """The flat configuration Hydra would build for these overrides."""
    with initialize_config_module(version_base="1.3", config_module=CONF_PACKAGE):
        return flat(hydra_compose("config", overrides=list(overrides)))


class Composer:
    """The flat configuration of each job of a sweep: `composer(job_overrides) -> dict`.

    Hydra composes a job from scratch (some 70 ms: minutes for a 10,000-job grid). Here each
    distinct combination of config-group choices (`algorithm=q_table`, `+net=l2_n8`) is composed
    once, and a job's value overrides (`seed=3`, `~layers`) go onto a copy of it through Hydra's
    own override code, or, where they all set plain top-level values, onto a dict. Whatever fails
    on this path is composed from scratch, so errors are Hydra's own (tests/test_compose.py checks
    the equality on randomised grids). Relies on hydra-core 1.3's internals (lab.compat.hydra).
    """

    def __init__(self, config_loader, master_config: DictConfig):
        self.loader, self.master = config_loader, master_config
        self.parser = OverridesParser.create()
        hydra_overrides = OmegaConf.to_container(master_config.hydra.overrides.hydra, resolve=False)
        self.repo = hydra_compat.caching_repo(  # the primary config's search path settings included
            config_loader, master_config.hydra.job.config_name, hydra_overrides)
        self.parsed, self.groups, self.bases = {}, {}, {}

    def full(self, overrides: list[str]) -> dict:
        """Hydra's own composition of one job; its error as a one-line ConfigError naming the job."""
        try:
            return flat(self.loader.load_sweep_config(self.master, list(overrides)))
        except HydraException as exc:
            said = first_line(exc)
            key = re.match(r"Could not override '(.+?)'", said)
            if key:  # a grid's job without that key: most often another algorithm's knob (ensemble)
                said = (f"Could not override '{key[1]}': not a key of this job's configuration; if it is a knob of "
                        f"other algorithms in the grid, ++{key[1]}=... adds it to every job (algorithms without it "
                        "ignore it)")
            raise ConfigError(f"{' '.join(overrides)}: {said}") from None

    def __call__(self, overrides: list[str]) -> dict:
        try:
            return self._from_cache(overrides)
        except Exception:  # noqa: BLE001 - composed from scratch, Hydra raises its own error if any
            return self.full(overrides)

    def _from_cache(self, overrides: list[str]) -> dict:
        parsed = [self._parse(o) for o in overrides]
        choices = tuple(o.input_line for o, is_choice in parsed if is_choice)
        values = [o for o, is_choice in parsed if not is_choice]
        cfg, knobs, plain_keys = self._base(choices)
        plain = {o.key_or_group: o.value() for o in values if _sets_plain_value(o)}
        if len(plain) == len(values) and plain.keys() <= plain_keys:
            return {**knobs, **plain}
        cfg = copy.deepcopy(cfg)
        hydra_compat.apply_overrides(values, cfg)
        return flat(cfg)

    def _parse(self, text: str):
        """The parsed override and whether Hydra takes it as a config-group choice (the rule of
        Hydra's defaults_list.Overrides), once per distinct string."""
        if text not in self.parsed:
            # Hydra's ANTLR parser takes 0.1-0.3 ms a string and seed=range(0,10000) makes 10,000
            # distinct ones; `key=<integer>` is read here as Hydra reads it (tests/test_compose.py).
            match = _INT_ASSIGNMENT.fullmatch(text)
            override = (Override(OverrideType.CHANGE, match[1], ValueType.ELEMENT, int(match[2]), input_line=text)
                        if match else self.parser.parse_override(text))
            key = override.key_or_group
            if key not in self.groups:
                self.groups[key] = self.repo.group_exists(key)  # a look-up on disk
            self.parsed[text] = override, self.groups[key] and not isinstance(override.value(), dict)
        return self.parsed[text]

    def _base(self, choices: tuple[str, ...]) -> tuple[DictConfig, dict, set[str]]:
        """Hydra's composition of these group choices without Hydra's node, its flat knobs, and
        its top-level keys a plain override replaces as is: untyped ones (none if the config holds
        an interpolation, which could depend on a replaced value)."""
        if choices not in self.bases:
            cfg = self.loader.load_sweep_config(self.master, list(choices))
            with open_dict(cfg):
                del cfg["hydra"]  # the job's own bookkeeping (its overrides, ...); `flat` drops it
            knobs = flat(cfg)
            interpolated = knobs != OmegaConf.to_container(cfg, resolve=False)
            plain_keys = set() if interpolated else {k for k in cfg
                                                     if type(hydra_compat.node(cfg, k)) is AnyNode}
            self.bases[choices] = cfg, knobs, plain_keys
        return self.bases[choices]


def _sets_plain_value(override) -> bool:
    """`key=value` of a top-level key to a scalar OmegaConf stores as given (no interpolation, no ???)."""
    value = override.value()
    return (override.type is OverrideType.CHANGE and override.package is None
            and "." not in override.key_or_group
            and isinstance(value, (int, float, bool, str, type(None)))
            and not (isinstance(value, str) and ("${" in value or value == "???")))


def expand(config_loader, params: list[str], arguments: list[str]) -> list[list[str]]:
    """Each job's overrides, as the lab's sweeper expands a grid: Hydra's basic sweeper (range(),
    choice(), glob(), a,b,c) over the sweep's `hydra.sweeper.params` and the command line, one batch."""
    parser = OverridesParser.create(config_loader=config_loader)  # glob() lists a group's options
    (batch,) = hydra_compat.basic_sweeper().split_arguments(parser.parse_overrides(params + arguments), None)
    return batch


def grid(*overrides: str) -> tuple[Composer, list[list[str]]]:
    """A Composer and the jobs' overrides of `python -m lab.sweep --multirun OVERRIDES` (tests, bench)."""
    with initialize_config_module(version_base="1.3", config_module=CONF_PACKAGE):
        loader = GlobalHydra.instance().config_loader()
        master = loader.load_configuration("config", list(overrides), run_mode=RunMode.MULTIRUN)
    params = [f"{key}={value}" for key, value in (master.hydra.sweeper.params or {}).items()]
    arguments = OmegaConf.to_container(master.hydra.overrides.task, resolve=False)
    return Composer(loader, master), expand(loader, params, arguments)
