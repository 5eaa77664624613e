"""`opponent=PATH.npz`: a trained agent's checkpoint as the opponent, on the command line.

`opponent` is a config group (conf/opponent/: random, onestep, block, perfect, self), so Hydra
reads `opponent=VALUE` as the choice of a file conf/opponent/VALUE.yaml and would refuse any other
value. This config source, on the search path through the plugin below, answers for every option
of the group `opponent` that names a `.npz` file: it is the config `opponent: PATH` (global
package), exactly what the group's own files hold. Whether PATH is a lab checkpoint is checked
by lab.config.jobs like every other knob, before anything runs.
"""

from typing import List, Optional

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.object_type import ObjectType
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import OmegaConf

GROUP = "opponent/"
SUFFIX = ".npz"


def checkpoint_path(config_path: str) -> Optional[str]:
    """The checkpoint path an option of the group `opponent` names, or None if it names none.
    Hydra asks for 'opponent/<value>' (plus '.yaml'); an absolute path gives 'opponent//...'."""
    if not config_path.startswith(GROUP):
        return None
    value = config_path[len(GROUP):].removesuffix(".yaml")
    return value if value.endswith(SUFFIX) else None


class CheckpointOpponentSource(ConfigSource):
    @staticmethod
    def scheme() -> str:
        return "lab-checkpoint-opponent"

    def load_config(self, config_path: str) -> ConfigResult:
        path = checkpoint_path(config_path)
        if path is None:
            raise ConfigLoadError(f"not a checkpoint opponent: {config_path}")
        return ConfigResult(provider=self.provider, path=f"{self.scheme()}://{self.path}",
                            config=OmegaConf.create({"opponent": path}),
                            header={"package": "_global_"})

    def is_group(self, config_path: str) -> bool:
        return False

    def is_config(self, config_path: str) -> bool:
        return checkpoint_path(config_path) is not None

    def available(self) -> bool:
        return True

    def list(self, config_path: str, results_filter: Optional[ObjectType]) -> List[str]:
        return []  # nothing to list: any .npz path is an option, none is enumerable


class CheckpointOpponentSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="lab-checkpoint-opponent",
                           path=f"{CheckpointOpponentSource.scheme()}://")
