"""The domains: each folder is one task meeting :class:`unmask.tasks.base.Task`.

:func:`get_task` builds a task by name; a task whose sequence layout depends on the model (maths:
question and answer lengths) is built for the model's config.
"""

from __future__ import annotations

from collections.abc import Callable

from unmask.errors import UnmaskError


def _sudoku(cfg):
    from unmask.tasks.sudoku.task import SudokuTask

    return SudokuTask()


def _maths(cfg):
    from unmask.tasks.maths.task import MathsTask

    return MathsTask() if cfg is None else MathsTask.for_model(cfg)


def _proteins(cfg):
    from unmask.tasks.proteins.task import ProteinTask

    return ProteinTask() if cfg is None else ProteinTask.for_model(cfg)


def _antibodies(cfg):
    from unmask.tasks.proteins.antibody import AntibodyTask

    return AntibodyTask() if cfg is None else AntibodyTask.for_model(cfg)


def _seq(cfg):
    from unmask.tasks.seq.task import SeqTask

    return SeqTask() if cfg is None else SeqTask.for_model(cfg)


def _protein_lm(loaded):
    from unmask.tasks.proteins.plm import adapt

    return adapt(loaded)


def _seq_lm(loaded):
    from unmask.tasks.seq.task import bind

    return bind(loaded)[1]  # the model's own tokenizer, positions to fill marked by its mask token


TASKS: dict[str, Callable] = {"sudoku": _sudoku, "maths": _maths, "proteins": _proteins,
                              "antibodies": _antibodies, "seq": _seq}  # name → factory(model config or None)
# tasks that map a Hugging Face model onto their ids
HF_ADAPTERS: dict[str, Callable] = {"proteins": _protein_lm, "antibodies": _protein_lm, "seq": _seq_lm}


def get_task(name: str, cfg=None):
    """The task called ``name``, laid out for model config ``cfg`` where the layout depends on it."""
    if name not in TASKS:
        raise UnmaskError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")
    return TASKS[name](cfg)


def task_denoiser(name: str, loaded):
    """The denoiser of ``loaded`` (:class:`unmask.adapters.Loaded`) as task ``name`` reads it: an unmask
    model as it is; a Hugging Face model mapped onto the task's ids where the task can (proteins)."""
    if loaded.is_hf and name in HF_ADAPTERS:
        return HF_ADAPTERS[name](loaded)
    return loaded.denoiser
