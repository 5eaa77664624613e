"""Hydra's (and its OmegaConf's) private APIs the lab uses, and nowhere else (CHECKED releases).

tests/test_compat_ray_hydra.py fails, naming the function here to change, when a name moves or the
installed versions are outside CHECKED. Each function imports what it reaches for when called:
Hydra's plugin scan runs its core plugins' modules again, and a class kept from an earlier run of
them would no longer be the one their own code refers to.
"""

CHECKED = {"hydra-core": ("1.3",), "omegaconf": ("2.3",)}  # releases (major.minor) checked
# the _target_ of Hydra's basic sweeper (hydra/sweeper=basic), which the lab's grid sweeper extends
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def basic_sweeper() -> type:
    # when called (module doc): the class as Hydra's plugin scan last defined it
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    return BasicSweeper


def sweeper_params(sweeper) -> list[str]:
    """A basic sweeper's `hydra.sweeper.params` as override strings."""
    return sweeper._parse_config()


def apply_overrides(overrides: list, cfg) -> None:
    """Apply parsed value overrides to a composed config in place, with Hydra's own code."""
    # when called (module doc): a Hydra that moved it breaks this function, not every Hydra start-up
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    ConfigLoaderImpl._apply_overrides_to_config(overrides, cfg)


def caching_repo(config_loader, config_name: str | None, hydra_overrides: list[str]):
    """The config repository Hydra composes `config_name` from (with `hydra_overrides`' search path)."""
    _, repo = config_loader._parse_overrides_and_create_caching_repo(config_name, hydra_overrides)
    return repo


def node(cfg, key):
    """OmegaConf's node of `key` in the DictConfig `cfg` (its value type, unresolved)."""
    return cfg._get_node(key)


def args_parser():
    """Hydra's command-line parser (the one hydra.main uses): lab.sweep reads the overrides with
    it before handing over, to answer a mistake in one line."""
    # when called (module doc): a Hydra that moved it breaks this function, not every Hydra start-up
    from hydra._internal.utils import get_args_parser

    return get_args_parser()
