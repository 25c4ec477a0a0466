"""unmask: parallel decoding of masked discrete diffusion models, measured honestly.

The names a user needs, importable from the package itself::

    import unmask

    loaded = unmask.load_denoiser(unmask.shipped_model("sudoku"))
    policy = unmask.build_policy("eb:gamma=0.1", loaded.denoiser, loaded.directory)
    result = unmask.decode(loaded.denoiser, tokens, policy)      # tokens: (B, L) ids, masked where to fill

Everything else lives in the subpackages (:mod:`unmask.decode`, :mod:`unmask.mi`, :mod:`unmask.order`,
:mod:`unmask.adapters`, :mod:`unmask.tasks`). The names below load on first use, so ``import unmask``
(and ``unmask --version``) stays as light as the standard library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.2.0"

# public name → the module that defines it
_EXPORTS: dict[str, str] = {
    # the model interface
    "Denoiser": "unmask.denoiser",
    "DenoiserOutput": "unmask.denoiser",
    # decoding: the loop (the subpackage unmask.decode, callable as its loop), its result, the token rule
    "decode": "unmask.decode",
    "decode_steps": "unmask.decode.loop",
    "DecodeResult": "unmask.decode.loop",
    "DecodeState": "unmask.decode.state",
    "Selection": "unmask.decode.policy",
    "Step": "unmask.decode.loop",
    "TokenRule": "unmask.decode.loop",
    # policies by spec, every family registered
    "build_policy": "unmask.policies",
    "parse_policy": "unmask.policies",
    "policy_spec": "unmask.policies",
    # models: an unmask folder, hf:DIR or esmc:FILE; the ones shipped in the wheel
    "load_denoiser": "unmask.adapters",
    "HFOptions": "unmask.adapters",
    "shipped_model": "unmask.tasks.base",
    "get_task": "unmask.tasks",
    # evaluation
    "evaluate": "unmask.eval",
    "compare": "unmask.eval",
    # errors and notes
    "UnmaskError": "unmask.errors",
    "SpecRenamed": "unmask.errors",
}

__all__ = [  # the names above, spelt out for tools that read __all__ without running the module
    "__version__", "DecodeResult", "DecodeState", "Denoiser", "DenoiserOutput", "HFOptions", "Selection", "SpecRenamed",
    "Step", "TokenRule", "UnmaskError", "build_policy", "compare", "decode", "decode_steps", "evaluate", "get_task",
    "load_denoiser", "parse_policy", "policy_spec", "shipped_model",
]


def __getattr__(name: str):
    """Load a public name from its module on first use (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'unmask' has no attribute {name!r}")
    module = importlib.import_module(_EXPORTS[name])
    # ``unmask.decode`` is the subpackage itself, which calls as the loop: a function of that name would be
    # replaced by the subpackage whenever something imports it
    value = module if module.__name__ == f"unmask.{name}" else getattr(module, name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # what type checkers and IDEs see
    from unmask.adapters import HFOptions, load_denoiser
    from unmask.decode.loop import DecodeResult, Step, TokenRule, decode, decode_steps  # noqa: F811
    from unmask.decode.policy import Selection
    from unmask.decode.state import DecodeState
    from unmask.denoiser import Denoiser, DenoiserOutput
    from unmask.errors import SpecRenamed, UnmaskError
    from unmask.eval import compare, evaluate
    from unmask.policies import build_policy, parse_policy, policy_spec
    from unmask.tasks import get_task
    from unmask.tasks.base import shipped_model
