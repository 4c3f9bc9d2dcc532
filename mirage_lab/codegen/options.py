"""What the CUDA generator may use (``CodegenOptions``), and the keyword flags that name it.

Asynchronous copies and prefetch (``codegen.pipeline``), split sums (``codegen.split_sum``), tensor cores
(``codegen.matmul``) and padding (``codegen.plan``) are fields of ``CodegenOptions``; ``PLAIN`` turns all of
them off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mirage_lab.arguments import did_you_mean
from mirage_lab.errors import ArgumentError


@dataclass(frozen=True)
class CodegenOptions:
    """What the generator may use; all on by default (``benchmarks/kernels.py`` times them off one by one)."""

    prefetch: bool = True
    split_sums: bool = True
    tensor_cores: bool = True
    padding: bool = True
    async_copies: bool = True  # prefetch copies ahead with them: without, no prefetch either


#: everything off: one thread per output, scalar matmuls, dense tiles, load–barrier–compute loops
PLAIN = CodegenOptions(prefetch=False, split_sums=False, tensor_cores=False, padding=False, async_copies=False)


#: the keywords of the codegen entry points besides the option flags (named in the unknown-keyword message)
ENTRY_KEYWORDS = ("options", "library_calls")


def codegen_options(options: CodegenOptions | None, flags: Mapping[str, object],
                    keywords: Sequence[str] = ENTRY_KEYWORDS) -> CodegenOptions:
    """``options``, or the options that keyword ``flags`` (``prefetch=False``, …) name. An unknown keyword, a
    flag that is not a bool, or both ways at once is an ``ArgumentError`` naming the valid ones; ``keywords``
    are the caller's other keywords, suggested too when one of them was misspelt."""
    names = list(CodegenOptions.__dataclass_fields__)
    unknown = sorted(set(flags) - set(names))
    if unknown:
        hints = [f"{u!r}{did_you_mean(u, [*names, *keywords])}" for u in unknown]
        raise ArgumentError(f"unknown codegen option(s) {', '.join(hints)}; the options are {', '.join(names)} "
                            f"(keywords, or fields of CodegenOptions), besides {', '.join(keywords)}")
    if options is not None:
        if not isinstance(options, CodegenOptions):
            raise ArgumentError(f"options must be a CodegenOptions (e.g. CodegenOptions(prefetch=False), or PLAIN), "
                                f"got {type(options).__name__} {options!r:.60}")
        if flags:
            raise ArgumentError(f"pass options= or keyword flags, not both (got both and {sorted(flags)})")
        return options
    wrong = [f"{k}={v!r}" for k, v in flags.items() if not isinstance(v, bool)]
    if wrong:
        raise ArgumentError(f"codegen options take True or False, got {', '.join(wrong)}")
    return CodegenOptions(**flags)  # type: ignore[arg-type]  # every value is a bool, checked above
