"""The reference implementation's checkpoint vocabulary (SPEC §10): eras, data-type codes,
layouts and op names, derived from the op table, and era detection.

``ALIASES`` maps every reference ``op_type`` string to ``(level, Op, dim)``:
``<kn|tb>_<op>_op`` for plain ops, ``<kn|tb>_<head>_<d>[_<tail>]_op`` for dim-indexed
ops, and both the older ``tb_accum_<kind>_op`` and current ``tb_forloop_accum_<kind>_op``
accumulator spellings. Data types are bare integers whose meaning changed between
reference builds (``DTYPE_CODES``); ``detect_era`` decides as SPEC §10 says.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mirage_lab.errors import FormatError
from mirage_lab.ir.dtype import DType
from mirage_lab.ir.ops import OPS, Kind, Level, Op

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
#: The scratch-offset alignment of the reference's per-block allocator (SPEC §3.6).
SMEM_ALIGN = 16


class Era(enum.Enum):
    """The reference build a checkpoint comes from; it decides what data_type integers mean."""

    OLDER = "older"  # the 17 saved reference files (tb_accum_* names, fp16 = 921)
    CURRENT = "current"  # the current reference (tb_forloop_accum_* names, fp16 = 940)

    @classmethod
    def parse(cls, value: Era | str) -> Era:
        if isinstance(value, Era):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            raise FormatError(f"unknown era {value!r}; use 'older' or 'current' (SPEC §10)") from None


# --------------------------------------------------------------------------- data types (SPEC §10)

#: data_type integer → the reference's type name, per era.
DTYPE_CODES: dict[Era, dict[int, str]] = {
    Era.OLDER: {900: "int8", 910: "uint16", 920: "bf16", 921: "fp16", 930: "fp32", 940: "double",
                999: "unknown"},
    Era.CURRENT: {920: "fp4", 925: "int4", 926: "uint4", 930: "fp8", 935: "int8", 936: "uint8",
                  940: "fp16", 941: "bf16", 945: "int16", 946: "uint16", 950: "fp32", 955: "int32",
                  956: "uint32", 960: "double", 965: "int64", 966: "uint64", 999: "unknown"},
}
DTYPE_BY_NAME: dict[str, DType] = {
    "fp16": DType.FLOAT16, "bf16": DType.BFLOAT16, "fp32": DType.FLOAT32, "double": DType.FLOAT64,
    "int8": DType.INT8, "uint16": DType.UINT16,
}
#: Codes only one era defines: their presence decides the era.
_ERA_ONLY: dict[Era, frozenset[int]] = {
    Era.OLDER: frozenset(DTYPE_CODES[Era.OLDER]) - frozenset(DTYPE_CODES[Era.CURRENT]),
    Era.CURRENT: frozenset(DTYPE_CODES[Era.CURRENT]) - frozenset(DTYPE_CODES[Era.OLDER]),
}
CODE_OF: dict[Era, dict[DType, int]] = {
    era: {DTYPE_BY_NAME[name]: code for code, name in codes.items() if name in DTYPE_BY_NAME}
    for era, codes in DTYPE_CODES.items()
}

DMEM_LAYOUTS = {"DmemRowMajor": True, "DmemColumnMajor": False, "DmemUnknownLayout": False}
SMEM_LAYOUTS = {"SmemRowMajor": True, "SmemColumnMajor": False, "SmemUnknownLayout": False,
                 **{f"Smem{o}MajorTensorOpMultiplicand_Crosswise{n}": False
                    for o in ("Row", "Column") for n in (16, 32, 64)}}


# --------------------------------------------------------------------------- op names (SPEC §10)

#: The reference's accumulator kind names, by code (SPEC §3.3); the one thing the op table cannot spell.
_ACCUM_KIND = {2500: "nored", 2501: "red_ld_sum", 2502: "red_ld_mean", 2503: "red_ld_rms",
               2504: "redtox_ld_sum", 2505: "nored_rescale", 2506: "red_ld_sum_rescale", 2507: "max"}
#: Kinds the older builds had (``tb_accum_<kind>_op``); the rescale and max accumulators came later.
_OLDER_ACCUM_CODES = range(2500, 2505)
_PREFIX = {Level.KERNEL: "kn", Level.BLOCK: "tb"}
_DIM_RANGE = range(3)  # dim-indexed reference ops exist for dims 0, 1, 2


@dataclass(frozen=True)
class OpName:
    """What an ``op_type`` string means: the level, our op, the dim of dim-indexed ops, its era."""

    level: Level
    op: Op
    dim: int | None = None
    era: Era | None = None  # set only for names that exist in a single era


def _derive_aliases() -> tuple[dict[str, OpName], dict[tuple[Level, Op, int | None], str]]:
    names: dict[str, OpName] = {}
    current: dict[tuple[Level, Op, int | None], str] = {}
    for spec in OPS.values():
        for level, code in spec.codes.items():
            p = _PREFIX[level]
            if spec.kind is Kind.ACCUM:
                kind = _ACCUM_KIND[code]
                new = f"{p}_forloop_accum_{kind}_op"
                names[new] = OpName(level, spec.op, None, Era.CURRENT)
                current[(level, spec.op, None)] = new
                if code in _OLDER_ACCUM_CODES:
                    names[f"{p}_accum_{kind}_op"] = OpName(level, spec.op, None, Era.OLDER)
            elif spec.code_adds_dim:
                head, _, tail = spec.op.value.partition("_")
                for d in _DIM_RANGE:
                    name = f"{p}_{head}_{d}{'_' + tail if tail else ''}_op"
                    names[name] = OpName(level, spec.op, d)
                    current[(level, spec.op, d)] = name
            else:
                name = f"{p}_{spec.op.value}_op"
                names[name] = OpName(level, spec.op)
                current[(level, spec.op, None)] = name
    return names, current


#: reference op_type → meaning; covers both eras' spellings (SPEC §10).
ALIASES, _CURRENT_NAME = _derive_aliases()

#: Reference ops outside the searched method (SPEC §2); named so the error can say so.
UNSUPPORTED_OPS = ("kn_concat", "kn_split", "kn_chunk", "kn_allreduce", "tb_split", "tb_chunk", "tb_customized",
                "kn_unkown", "tb_unkown")


def op_type_name(level: Level, op: Op, dim: int | None = None) -> str:
    """The current reference's ``op_type`` string for ``op`` at ``level``."""
    return _CURRENT_NAME[(level, op, dim if op.spec.code_adds_dim else None)]


# accumulator Op → the ``tb.forloop_accum(acc=...)`` key that builds it


# --------------------------------------------------------------------------- era detection


def _walk_dicts(doc: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in ``doc``, iteratively (hostile nesting cannot overflow the stack)."""
    stack = [doc]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            yield v
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def _era_evidence(doc: Any) -> dict[Era, str]:
    """The first piece of evidence for each era found in ``doc`` (SPEC §10 era detection)."""
    by_name: dict[Era, str] = {}
    by_code: dict[Era, str] = {}
    for d in _walk_dicts(doc):
        t = d.get("op_type")
        if isinstance(t, str):
            if t.startswith("tb_accum_"):
                by_name.setdefault(Era.OLDER, f"op_type {t!r}")
            elif t.startswith("tb_forloop_accum_"):
                by_name.setdefault(Era.CURRENT, f"op_type {t!r}")
        c = d.get("data_type")
        if isinstance(c, int) and not isinstance(c, bool):
            for era, only in _ERA_ONLY.items():
                if c in only:
                    by_code.setdefault(era, f"data_type {c} ({DTYPE_CODES[era][c]} in the {era.value} era)")
    return by_name or by_code


def detect_era(doc: Any, where: str = "<checkpoint>") -> Era | None:
    """SPEC §10: accumulator names decide; otherwise era-only data_type codes; otherwise ``None``."""
    ev = _era_evidence(doc)
    if len(ev) > 1:
        raise FormatError(f"{where}: mixes both reference eras ({ev[Era.OLDER]} is older-era, "
                          f"{ev[Era.CURRENT]} is current-era); the file was assembled inconsistently")
    return next(iter(ev), None)


def resolve_era(doc: Any, era: Era | str | None, where: str) -> Era:
    found = detect_era(doc, where)
    if era is None:
        if found is None:
            raise FormatError(
                f"{where}: cannot tell the reference era: no accumulator op names it and every data_type "
                "is one of the ambiguous codes 920/930/940/999 (920 is bf16 in the older era but fp4 in the "
                "current one, 930 fp32 or fp8, 940 double or fp16). Pass era='older' or era='current'")
        return found
    chosen = Era.parse(era)
    if found is not None and found is not chosen:
        ev = _era_evidence(doc)[found]
        raise FormatError(f"{where}: era={chosen.value!r} was given, but the file is {found.value}-era "
                          f"({ev}); drop the era= argument or fix the file")
    return chosen




def _check_tables(ops: Mapping[Op, Any] = OPS) -> None:
    """Import-time sanity: every op of the table has a current reference name at each of its levels."""
    for spec in ops.values():
        for level in spec.codes:
            for d in _DIM_RANGE if spec.code_adds_dim else (None,):
                op_type_name(level, spec.op, d)


_check_tables()
