"""The config file: TOML over embedded defaults, checked against one schema, errors at file:line.

schema.py holds every key (type, default, bounds, doc), load.py reads a file into a Config by it,
describe.py states it for `swarmdeck config show`. The names the rest of swarmdeck uses are
imported from here.
"""

from swarmdeck.config.describe import ConfigLine, describe_config, range_text
from swarmdeck.config.load import (
    MAX_CONFIG_BYTES,
    MAX_DEPTH,
    config_readers,
    load_config,
    parse_config,
)
from swarmdeck.config.schema import (
    MAX_SIZE,
    MAX_THREADS,
    SECTIONS,
    Config,
    CoresConfig,
    GpuConfig,
    GuardsConfig,
    HooksConfig,
    HostConfig,
    LocksConfig,
    MemoryConfig,
    SlurmConfig,
    UiConfig,
    WatchdogConfig,
    default_config,
    heavy_thread_budget,
    schema_keys,
    slice_problem,
)

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_DEPTH",
    "MAX_SIZE",
    "MAX_THREADS",
    "SECTIONS",
    "Config",
    "ConfigLine",
    "CoresConfig",
    "GpuConfig",
    "GuardsConfig",
    "HooksConfig",
    "HostConfig",
    "LocksConfig",
    "MemoryConfig",
    "SlurmConfig",
    "UiConfig",
    "WatchdogConfig",
    "config_readers",
    "default_config",
    "describe_config",
    "heavy_thread_budget",
    "load_config",
    "parse_config",
    "range_text",
    "schema_keys",
    "slice_problem",
]
