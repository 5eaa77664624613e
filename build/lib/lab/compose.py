"""Hydra composition: the lab's config files -> flat configurations (plain dicts of knobs).

`compose(*overrides)` gives the configuration `python -m lab.sweep OVERRIDES` would run, for
tests, notebooks and the benchmark; `flat` turns a composed Hydra config into the plain knobs that
lab.config.job validates.
"""

from omegaconf import DictConfig, OmegaConf

CONF_PACKAGE = "lab.conf"
"""The lab's configs: the repository's conf/, installed with the lab as this package."""


def flat(cfg: DictConfig) -> dict:
    """The run's knobs as plain values (Hydra's own node left out)."""
    return {key: OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
            for key, value in cfg.items() if key != "hydra"}


def compose(*overrides: str) -> dict:
    """The flat configuration Hydra would build for these overrides."""
    from hydra import compose as hydra_compose, initialize_config_module

    with initialize_config_module(version_base="1.3", config_module=CONF_PACKAGE):
        return flat(hydra_compose("config", overrides=list(overrides)))
