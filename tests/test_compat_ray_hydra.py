"""The private APIs of Ray and Hydra the lab uses (lab/compat/ray.py, lab/compat/hydra.py): each is
still where the lab reaches for it, in versions the lab was checked against. A failure names the
name that moved and the function of lab/compat to change."""

import importlib
import inspect
from importlib.metadata import version

import pytest

from lab.compat import hydra as hydra_compat
from lab.compat import ray as ray_compat


def _major_minor(package: str) -> str:
    return ".".join(version(package).split(".")[:2])


@pytest.mark.parametrize("package, checked", [("ray", ray_compat.CHECKED), *hydra_compat.CHECKED.items()])
def test_the_installed_versions_are_those_lab_compat_was_checked_against(package, checked):
    assert _major_minor(package) in checked, (
        f"{package} {version(package)} is not a release lab/compat was checked against ({', '.join(checked)}): "
        f"check that the private names tests/test_compat_ray_hydra.py looks for are still there and "
        f"behave the same, then add {_major_minor(package)} to CHECKED")


def _moved(name: str, user: str) -> str:
    return f"{name} moved in this release: change {user} to reach for what it does now"


RAY_NAMES = [  # (module, attribute path, the lab/compat function that uses it)
    ("ray._private.worker", "_global_node", "lab.compat.ray.local_node_processes"),
    ("ray._raylet", "Config", "lab.compat.ray.reread_config"),
    ("ray._raylet", "setproctitle", "lab.compat.ray.set_process_title"),
]


def test_rays_node_keeps_its_processes_and_its_config_can_be_read_again():
    from ray._private.node import Node
    from ray._raylet import Config

    assert "self.all_processes" in inspect.getsource(Node.__init__), \
        _moved("ray._private.node.Node.all_processes", "lab.compat.ray.local_node_processes")
    assert callable(getattr(Config, "initialize", None)), _moved("ray._raylet.Config.initialize",
                                                                 "lab.compat.ray.reread_config")
    assert ray_compat.local_node_processes() == {}  # no Ray started in this process


HYDRA_NAMES = [  # (module, attribute path, the lab/compat function that uses it)
    ("hydra._internal.config_loader_impl", "ConfigLoaderImpl._apply_overrides_to_config",
     "lab.compat.hydra.apply_overrides"),
    ("hydra._internal.config_loader_impl", "ConfigLoaderImpl._parse_overrides_and_create_caching_repo",
     "lab.compat.hydra.caching_repo"),
    ("hydra._internal.core_plugins.basic_sweeper", "BasicSweeper.split_arguments", "lab.config.compose.expand"),
    ("hydra._internal.core_plugins.basic_sweeper", "BasicSweeper._parse_config", "lab.compat.hydra.sweeper_params"),
    ("omegaconf", "DictConfig._get_node", "lab.compat.hydra.node"),
]


@pytest.mark.parametrize("module, path, user", RAY_NAMES + HYDRA_NAMES,
                         ids=[f"{m}.{p}" for m, p, _ in RAY_NAMES + HYDRA_NAMES])
def test_private_names_are_where_lab_compat_reaches_for_them(module, path, user):
    try:
        found = importlib.import_module(module)
    except ImportError:
        pytest.fail(_moved(module, user))
    for part in path.split("."):
        assert hasattr(found, part), _moved(f"{module}.{path}", user)
        found = getattr(found, part)


def test_hydras_basic_sweeper_is_named_as_lab_compat_says():
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    from lab.config.compose import grid

    assert f"{BasicSweeper.__module__}.{BasicSweeper.__qualname__}" == hydra_compat.BASIC_SWEEPER, \
        _moved("Hydra's basic sweeper", "lab.compat.hydra.BASIC_SWEEPER")
    composer, jobs = grid("hydra/sweeper=basic", "seed=0,1")
    assert composer.master.hydra.sweeper._target_ == hydra_compat.BASIC_SWEEPER
    assert jobs == [["seed=0"], ["seed=1"]]


def test_the_private_functions_still_compose_as_hydra_does():
    """The cached composition (lab.config.compose.Composer, through lab.compat.hydra) equals Hydra's own
    for a value override only Hydra's private code applies (an interpolation)."""
    from lab.config.compose import grid

    composer, jobs = grid("seed=3", "layers=2", "results_dir=out/${seed}")
    (overrides,) = jobs
    cached = composer._from_cache(overrides)  # no fallback to Hydra's composition from scratch
    assert cached == composer.full(overrides) and cached["results_dir"] == "out/3"
