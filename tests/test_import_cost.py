"""What ``import dphist``, ``dphist --help`` and the start of ``dphist run`` import: checked by module, not by time.

Each check runs a fresh interpreter and reads ``sys.modules`` (no timing: the speed itself is measured by
``benchmarks/bench_startup.py``).  Mutations killed (each checked by hand):

* ``import scipy.sparse as sp`` back at the top of ``kernel/queries.py`` -> ``test_api_access_is_lazy_but_complete``;
* ``from .components.base import Component`` (or ``import numpy``) back at the top of ``cli.py``
  -> ``test_help_is_light``;
* ``build_parser`` configuring every subcommand (``from .audit import cli``) for ``--help`` or ``run``
  -> ``test_help_is_light``, ``test_run_parser_skips_audit``;
* ``configure_numba()`` removed from ``dphist/__init__.py`` -> ``test_numba_cache_dir_default``;
* ``NUMBA_CACHE_DIR`` overwritten when the user set it -> ``test_numba_cache_dir_respected``;
* ``from . import kernels`` back at the top of ``segmentation/costs.py`` -> ``test_run_ahp_on_4096_bins_never_imports_numba``.
"""
import json
import os
import subprocess
import sys

import pytest

HEAVY = ("scipy.stats", "scipy.sparse", "numba", "dphist.audit", "pandas", "pyarrow", "matplotlib")


def _modules(code: str, env: dict | None = None) -> dict:
    """Run ``code`` in a fresh interpreter; returns its JSON printed on the last line."""
    full_env = {**os.environ, **(env or {})}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _loaded(prelude: str) -> list[str]:
    code = (f"{prelude}\nimport json, sys\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            f"{sorted({h.split('.')[0] for h in HEAVY} | {'dphist'})!r})))")
    return _modules(code)


def _heavy(mods: list[str]) -> list[str]:
    return [m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_import_dphist_is_light():
    mods = _loaded("import dphist")
    assert _heavy(mods) == []
    # numpy's whole stack waits for the first use of the modelling API
    assert "dphist.kernel" not in mods and "dphist.kernel.queries" not in mods


def test_api_access_is_lazy_but_complete():
    """``dphist.make_algorithm`` and a submodule after a bare ``import dphist`` load on first access
    (kills: a name of ``__all__`` missing from the lazy table; submodule access dropped)."""
    mods = _loaded("import dphist\nfor name in dphist.__all__: getattr(dphist, name)\n"
                   "dphist.kernel.PrivateKernel")
    assert "dphist.pipeline" in mods and "dphist.kernel.private" in mods
    assert not [m for m in _heavy(mods) if m != "numba" and not m.startswith("numba.")]


def test_help_is_light():
    mods = _loaded("import dphist.cli\ntry:\n    dphist.cli.main(['--help'])\nexcept SystemExit:\n    pass")
    assert _heavy(mods) == []
    assert "dphist.components" not in mods and "dphist.registry" not in mods


def test_run_parser_skips_audit():
    """Parsing ``dphist run`` options adds only run's: the auditor (scipy.stats) and the experiment engine
    are not imported."""
    mods = _loaded("from dphist.cli import build_parser, _command_of\n"
                   "argv = ['run', '-a', 'AHP', '-i', 'x.npy', '-e', '1']\n"
                   "build_parser(commands=(_command_of(argv),)).parse_args(argv)")
    assert _heavy(mods) == []
    assert "dphist.experiments" not in mods


def test_run_ahp_on_4096_bins_never_imports_numba(tmp_path):
    """``dphist run -a AHP`` on 4,096 bins in release mode runs its greedy grouping and its exact noise
    interpreted: numba (0.3-0.5 s to import and load its cache, seconds to compile into an empty one) is
    never imported.  Kills (the first two checked by hand): ``from . import kernels`` back at the top of
    ``segmentation/costs.py``; the exact sampler's loop always compiled; the interpreted limits lowered
    below 4,096."""
    import numpy as np
    np.save(tmp_path / "h.npy", np.random.default_rng(1).poisson(50, 4096))
    mods = _loaded("import dphist.cli\n"
                   f"dphist.cli.main(['run', '-a', 'AHP', '-i', {str(tmp_path / 'h.npy')!r}, '-e', '1', "
                   f"'-o', {str(tmp_path / 'out.npy')!r}])")
    assert (tmp_path / "out.npy").exists()
    assert _heavy(mods) == []


def test_every_subcommand_has_its_options():
    """``build_parser()`` (every command configured) and the per-command parser accept the same options
    (kills: a command's configure function not called when it is the command)."""
    from dphist.cli import COMMANDS, build_parser
    full = build_parser()
    for name in COMMANDS:
        one = build_parser(commands=(name,))
        sub_full = full._subparsers._group_actions[0].choices[name]
        sub_one = one._subparsers._group_actions[0].choices[name]
        assert sorted(sub_full._option_string_actions) == sorted(sub_one._option_string_actions)
        assert "--help" in sub_one._option_string_actions


def test_numba_cache_dir_default(tmp_path):
    env = {"DPHIST_CACHE_DIR": str(tmp_path / "c")}
    env_clean = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", "import os, dphist, numba.core.config as c; "
                          "print(os.environ['NUMBA_CACHE_DIR'] + '|' + c.CACHE_DIR)"],
                         capture_output=True, text=True, env={**env_clean, **env}, timeout=120)
    assert out.returncode == 0, out.stderr
    expected = str(tmp_path / "c" / "numba")
    assert out.stdout.strip() == f"{expected}|{expected}"
    assert not (tmp_path / "c").exists()   # nothing is created by the import alone


@pytest.mark.parametrize("numba_first", [False, True])
def test_numba_cache_dir_respected(tmp_path, numba_first):
    """The user's ``NUMBA_CACHE_DIR`` wins, whether numba or dphist is imported first."""
    first = "import numba\n" if numba_first else ""
    got = _modules(f"{first}import json, dphist, numba.core.config as c\nprint(json.dumps(c.CACHE_DIR))",
                   env={"NUMBA_CACHE_DIR": str(tmp_path / "mine")})
    assert got == str(tmp_path / "mine")
