"""The space one search walks: the config's op lists joined by the program's own ops, and the ops that still
lie outside it.

The op table says, per op, where the search offers it (``OpSpec.search``): by default, or only when the program
uses it (sigmoid, tanh, erf, log, mul_scalar, sub), or never, writing it another way (a kernel reduction is an
accumulator over a for-loop; a kernel rms_norm a block rms_norm or accum_rms). ``for_program`` adds the program's
ops to the lists once, on the search's way in, so the run folder's hash names the space actually walked.
``space_gaps`` names each op the program uses that the settings still leave out, with the setting that adds it:
the search says so before it starts and in its report, instead of ending "complete, 0 verified".
"""

from __future__ import annotations

from mirage_lab.ir.graph import KernelGraph
from mirage_lab.ir.op_types import Level
from mirage_lab.ir.ops import Op
from mirage_lab.search.config import SearchConfig

#: the walk's own structure, never an op it offers
_STRUCTURE = (Op.INPUT, Op.OUTPUT, Op.CUSTOMIZED)


class SearchSpaceWarning(UserWarning):
    """The program uses an op the search's settings leave out of the space: no μGraph found can hold it."""


def used_ops(program: KernelGraph) -> list[Op]:
    """The ops ``program`` computes with, at either level, in first-use order (kernel level first)."""
    return list(dict.fromkeys(n.op for n in program.every_node() if n.op not in _STRUCTURE))


def for_program(config: SearchConfig, program: KernelGraph) -> SearchConfig:
    """``config`` with every op ``program`` uses added to the op lists at the levels its row allows
    (``program_ops``; unchanged when nothing is missing, so such a search keeps its run folder)."""
    if not config.program_ops:
        return config
    lists = {Level.KERNEL: list(config.kernel_ops), Level.BLOCK: list(config.block_ops)}
    for op in used_ops(program):
        use = op.spec.search
        assert use is not None  # every row declares it (tests/ir/test_op_table.py)
        for level, names in lists.items():
            if level in use.when_used and op.value not in names:
                names.append(op.value)
    kernel, block = tuple(lists[Level.KERNEL]), tuple(lists[Level.BLOCK])
    if (kernel, block) == (config.kernel_ops, config.block_ops):
        return config
    return config.replace(kernel_ops=kernel, block_ops=block)


def space_gaps(config: SearchConfig, program: KernelGraph) -> list[str]:
    """One line per op ``program`` uses that ``config``'s space leaves out, naming the setting that adds it."""
    offered = {*config.kernel_ops, *config.block_ops}
    lines = []
    for op in used_ops(program):
        use = op.spec.search
        assert use is not None
        if op.value in offered or any(v in config.block_ops for v in use.via):
            continue
        lines.append(f"the program uses {op.value}, which these settings leave out of the search space, so no "
                     f"μGraph found can compute it: {_fix(op, config)}")
    return lines


def _fix(op: Op, config: SearchConfig) -> str:
    use = op.spec.search
    assert use is not None
    if use.when_used and not config.program_ops:
        return f"set program_ops=True (or add {op.value!r} to its op lists)"
    levels = [f"{level.value}_ops" for level in (Level.KERNEL, Level.BLOCK) if level in use.default | use.when_used]
    ways = [f"add {op.value!r} to {' or '.join(levels)}"] if levels else []
    ways += [f"use the {name} preset, which offers it" for name in use.presets]
    ways += [f"add {' or '.join(repr(v) for v in use.via)} to block_ops, which write it"] if use.via else []
    return "; or ".join(ways) or ("the search never applies it: write the μGraph by hand (ml.new_kernel_graph) or "
                                  "verify one you have")


def resolve(program: KernelGraph, config: SearchConfig) -> tuple[SearchConfig, list[str]]:
    """The config one search of ``program`` runs with, and the space's gaps (``space_gaps``)."""
    cfg = for_program(config, program)
    return cfg, space_gaps(cfg, program)


__all__ = ["SearchSpaceWarning", "for_program", "resolve", "space_gaps", "used_ops"]
