"""Sweep configuration: a TOML file or command-line flags, validated before anything runs.

A configuration (every key optional except ``algorithms`` and ``datasets``)::

    algorithms = ["identity", {name = "uniform", label = "Uniform"}]
    datasets   = ["flights-dep-minute", {name = "synthetic", shape = "zipf", n = 4096}]
    epsilons   = [0.01, 0.1, 1.0]
    scales     = ["original", 1000, 100000]   # DPBench generator: records sampled from the shape
    domains    = ["original", 1024]           # DPBench generator: merge adjacent bins (a grid: its side per axis)
    trials     = 10
    workloads  = ["identity", "prefix", "all-ranges"]
    metrics    = ["mse", "scaled-l1"]         # and scaled-l2, max, mre, kl
    population = false                        # also error against scale x shape (sampled data)
    seed       = 0
    executor   = "process"                    # serial | process | dask
    workers    = 2
    scheduler  = ""                           # dask scheduler address; empty = local cluster
    output     = "results/my-sweep"
    plugins    = ["my_prototype"]             # modules imported first, here and in every worker
                                              # (their runtime registrations; like dphist --import)

    [limits.AHP-optimal]                      # per-algorithm limits (e.g. for O(n^2) presets)
    trials = 3                                # 0: no new cell (cells finished earlier are still reported)
    max_domain = 2048

Bad keys and values raise :class:`~dphist.errors.InvalidParameter` naming the key.
"""
from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidParameter
from ..metrics import METRICS
from ..registry import MODULE_NAME

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

METRIC_NAMES = (*METRICS, "kl")
EXECUTORS = ("serial", "process", "dask")
ORIGINAL = "original"
_LIMIT_KEYS = {"trials", "max_domain"}


@dataclass(frozen=True)
class AlgorithmSpec:
    name: str
    params: dict = field(default_factory=dict)
    label: str = ""

    @property
    def key(self) -> str:
        return self.label or self.name


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    params: dict = field(default_factory=dict)
    label: str = ""

    @property
    def key(self) -> str:
        if self.label:
            return self.label
        if not self.params:
            return self.name
        return f"{self.name}({','.join(f'{k}={v}' for k, v in sorted(self.params.items()))})"


@dataclass
class SweepConfig:
    algorithms: list[AlgorithmSpec]
    datasets: list[DatasetSpec]
    epsilons: list[float] = field(default_factory=lambda: [0.1])
    scales: list[int | None] = field(default_factory=lambda: [None])
    domains: list[int | None] = field(default_factory=lambda: [None])
    trials: int = 10
    workloads: list[str] = field(default_factory=lambda: ["identity", "prefix", "all-ranges"])
    metrics: list[str] = field(default_factory=lambda: ["mse", "scaled-l1"])
    population: bool = False
    seed: int = 0
    executor: str = "process"
    workers: int | None = None
    scheduler: str = ""
    output: str = "results/sweep"
    limits: dict[str, dict[str, int]] = field(default_factory=dict)
    plugins: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        if not self.algorithms:
            raise InvalidParameter("config key 'algorithms': give at least one algorithm")
        if not self.datasets:
            raise InvalidParameter("config key 'datasets': give at least one dataset")
        keys = [a.key for a in self.algorithms]
        if len(set(keys)) != len(keys):
            raise InvalidParameter(f"config key 'algorithms': duplicate labels {keys}; give each a distinct label")
        if not self.epsilons:
            raise InvalidParameter("config key 'epsilons': give at least one epsilon")
        for e in self.epsilons:
            if not isinstance(e, (int, float)) or isinstance(e, bool) or not math.isfinite(e) or e <= 0:
                raise InvalidParameter(f"config key 'epsilons': every epsilon must be a positive number, got {e!r}")
        for s in self.scales:
            if s is not None and (not isinstance(s, int) or isinstance(s, bool) or s <= 0):
                raise InvalidParameter(f"config key 'scales': scale must be a positive integer number of records "
                                       f"or 'original', got {s!r}")
        for d in self.domains:
            if d is not None and (not isinstance(d, int) or isinstance(d, bool) or d < 1):
                raise InvalidParameter(f"config key 'domains': domain size must be a positive integer "
                                       f"or 'original', got {d!r}")
        if not isinstance(self.trials, int) or isinstance(self.trials, bool) or self.trials < 1:
            raise InvalidParameter(f"config key 'trials': must be a positive integer, got {self.trials!r}")
        if not self.workloads:
            raise InvalidParameter("config key 'workloads': give at least one workload")
        bad = [m for m in self.metrics if m not in METRIC_NAMES]
        if bad or not self.metrics:
            raise InvalidParameter(f"config key 'metrics': unknown metric(s) {bad}; known: {', '.join(METRIC_NAMES)}")
        if self.executor not in EXECUTORS:
            raise InvalidParameter(f"config key 'executor': {self.executor!r} is not one of {', '.join(EXECUTORS)}")
        if self.workers is not None and (not isinstance(self.workers, int) or self.workers < 1):
            raise InvalidParameter(f"config key 'workers': must be a positive integer, got {self.workers!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise InvalidParameter(f"config key 'seed': must be a non-negative integer, got {self.seed!r}")
        if not isinstance(self.plugins, list) or not all(isinstance(m, str) and MODULE_NAME.match(m)
                                                          for m in self.plugins):
            raise InvalidParameter(f"config key 'plugins': a list of module names (mymodule, package.module), "
                                   f"got {self.plugins!r}")
        for alg, lim in self.limits.items():
            if alg not in keys:
                raise InvalidParameter(f"config key 'limits.{alg}': no algorithm labelled {alg!r} in the sweep")
            unknown = set(lim) - _LIMIT_KEYS
            if unknown:
                raise InvalidParameter(f"config key 'limits.{alg}': unknown key(s) {sorted(unknown)}; "
                                       f"allowed: {', '.join(sorted(_LIMIT_KEYS))}")
            for k, v in lim.items():   # trials = 0: the algorithm runs no new cell (finished ones are reported)
                low = 0 if k == "trials" else 1
                if not isinstance(v, int) or isinstance(v, bool) or v < low:
                    raise InvalidParameter(f"config key 'limits.{alg}.{k}': must be an integer >= {low}, got {v!r}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["algorithms"] = [asdict(a) for a in self.algorithms]
        d["datasets"] = [asdict(s) for s in self.datasets]
        return d

    # ------------------------------------------------------------- builders
    @classmethod
    def from_mapping(cls, data: dict, where: str = "config") -> "SweepConfig":
        if not isinstance(data, dict):
            raise InvalidParameter(f"{where}: expected a table of keys, got {type(data).__name__}")
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidParameter(f"{where}: unknown key(s) {unknown}; known keys: {', '.join(sorted(known))}")
        for req in ("algorithms", "datasets"):
            if req not in data:
                raise InvalidParameter(f"{where}: missing key {req!r}")
        kw = dict(data)
        kw["algorithms"] = [_algorithm_spec(a, where) for a in _as_list(data["algorithms"], "algorithms", where)]
        kw["datasets"] = [_dataset_spec(d, where) for d in _as_list(data["datasets"], "datasets", where)]
        for key in ("epsilons", "workloads", "metrics", "plugins"):
            if key in data:
                kw[key] = _as_list(data[key], key, where)
        for key in ("scales", "domains"):
            if key in data:
                kw[key] = [None if v == ORIGINAL else v for v in _as_list(data[key], key, where)]
        if "epsilons" in kw:
            kw["epsilons"] = [float(e) if isinstance(e, int) and not isinstance(e, bool) else e
                              for e in kw["epsilons"]]
        if "limits" in data and not isinstance(data["limits"], dict):
            raise InvalidParameter(f"{where}: key 'limits' must be a table of tables")
        for key, typ in (("population", bool), ("executor", str), ("scheduler", str), ("output", str)):
            if key in data and not isinstance(data[key], typ):
                raise InvalidParameter(f"{where}: key {key!r} must be a {typ.__name__}, got {data[key]!r}")
        try:
            return cls(**kw)
        except InvalidParameter as exc:
            raise InvalidParameter(str(exc) if where == "config" else f"{where}: {exc}") from None

    @classmethod
    def from_toml(cls, path) -> "SweepConfig":
        p = Path(path)
        if not p.is_file():
            raise InvalidParameter(f"config file {str(p)!r} does not exist")
        try:
            with open(p, "rb") as fh:
                data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise InvalidParameter(f"config file {p}: not valid TOML ({exc})") from None
        return cls.from_mapping(data, where=f"config file {p}")


def _as_list(value, key: str, where: str) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    raise InvalidParameter(f"{where}: key {key!r} must be a list, got {value!r}")


def _algorithm_spec(a, where: str) -> AlgorithmSpec:
    if isinstance(a, str):
        return AlgorithmSpec(a)
    if isinstance(a, dict) and isinstance(a.get("name"), str):
        unknown = set(a) - {"name", "params", "label"}
        if unknown:
            raise InvalidParameter(f"{where}: key 'algorithms' entry {a!r}: unknown key(s) {sorted(unknown)}; "
                                   "use name, params, label")
        return AlgorithmSpec(a["name"], dict(a.get("params", {})), str(a.get("label", "")))
    raise InvalidParameter(f"{where}: key 'algorithms': each entry is a name or a table with 'name', got {a!r}")


def _dataset_spec(d, where: str) -> DatasetSpec:
    if isinstance(d, str):
        return parse_dataset_flag(d)
    if isinstance(d, dict) and isinstance(d.get("name"), str):
        params = {k: v for k, v in d.items() if k not in ("name", "label")}
        return DatasetSpec(d["name"], params, str(d.get("label", "")))
    raise InvalidParameter(f"{where}: key 'datasets': each entry is a name or a table with 'name', got {d!r}")


def _parse_value(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_dataset_flag(text: str) -> DatasetSpec:
    """``name`` or ``name:key=value,key=value`` (e.g. ``synthetic:shape=zipf,n=1024``)."""
    name, _, rest = text.partition(":")
    if not rest or name.lower().endswith((".npy", ".csv", ".txt")) and "=" not in rest:
        return DatasetSpec(text)
    params = {}
    for item in rest.split(","):
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise InvalidParameter(f"dataset {text!r}: parameters are written key=value, got {item!r}")
        params[k.strip()] = _parse_value(v.strip())
    return DatasetSpec(name, params)


def parse_list(text: str, key: str, conv=str) -> list:
    """A comma-separated flag value; ``original`` stays None for scales and domains."""
    out = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        if item == ORIGINAL and key in ("scales", "domains"):
            out.append(None)
            continue
        try:
            out.append(conv(item))
        except ValueError:
            raise InvalidParameter(f"--{key}: {item!r} is not a valid value") from None
    return out
