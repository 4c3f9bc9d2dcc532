"""Results of the proxy cost model: per op, per kernel, per μGraph; printing, HTML and DataFrames.

Every object here is a **proxy** estimate (``kind == "proxy"``), which its repr, ``str``, HTML, dicts and
frames all say. ``CostEstimate.per_op()`` shows where the time goes: one row per kernel-level op and,
inside a customized kernel, one row per block op, whose ``est_us`` sum to the graph's total.
"""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CostEstimate", "KernelCost", "OpCost"]


@dataclass(frozen=True)
class OpCost:
    """The proxy cost of one op. ``level``: "kernel" (a library kernel, or the launch of a customized
    kernel: ``op == "customized"``, ``node is None``, ``seconds`` = its launch) or "block" (a block op of
    customized kernel ``kernel``; ``node`` is its index in the block graph). ``memory_s`` and
    ``compute_s`` are the op's own roofline terms at its kernel's utilisation; ``seconds`` is the share
    of the kernel's time it is charged (see ``mirage_lab.optimize.cost``)."""

    kernel: int
    node: int | None
    level: str
    op: str
    shape: str
    dram_bytes: int
    l2_bytes: int
    smem_bytes: int
    tensor_flops: int
    vector_flops: int
    memory_s: float
    compute_s: float
    seconds: float


@dataclass(frozen=True)
class KernelCost:
    """The proxy cost of one kernel (one non-input kernel-graph node).

    ``utilisation``: the grid's share of the SMs' time (``N / (SMs · ceil(N / SMs))``; 1 for a library
    kernel). ``memory_efficiency`` / ``compute_efficiency``: the latency-hiding factors from the resident
    blocks per SM. ``blocks_per_sm``, ``waves``, ``limiter``, ``threads``, ``regs_per_thread``,
    ``smem_per_block``: the occupancy of a customized op (None for a library kernel)."""

    node: int                 # index in the kernel graph's ``nodes``
    op: str                   # "matmul", "customized", ...
    dram_bytes: int
    l2_bytes: int
    tensor_flops: int
    vector_flops: int
    blocks: int | None        # grid size of a customized op; None for a library kernel
    utilisation: float
    memory_s: float
    compute_s: float
    launch_s: float
    smem_bytes: int = 0       # shared-memory traffic (reads + writes), not capacity
    memory_efficiency: float = 1.0
    compute_efficiency: float = 1.0
    blocks_per_sm: int | None = None
    waves: int | None = None
    limiter: str | None = None
    threads: int | None = None
    regs_per_thread: int | None = None
    smem_per_block: int | None = None
    resources_source: str | None = None
    ops: tuple[OpCost, ...] = ()

    @property
    def fits(self) -> bool:
        return self.blocks_per_sm is None or self.blocks_per_sm > 0

    @property
    def flops(self) -> int:
        return self.tensor_flops + self.vector_flops

    @property
    def roofline_s(self) -> float:
        return max(self.memory_s, self.compute_s)

    @property
    def seconds(self) -> float:
        return self.roofline_s + self.launch_s

    @property
    def bound(self) -> str:
        """What dominates: "launch", "memory" or "compute" ("does not fit" for a block too big for an SM)."""
        if not self.fits:
            return "does not fit"
        if self.launch_s >= self.roofline_s:
            return "launch"
        return "memory" if self.memory_s >= self.compute_s else "compute"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ops"] = [asdict(o) for o in self.ops]
        return {**d, "flops": self.flops, "seconds": self.seconds, "bound": self.bound}


KERNEL_COLUMNS = ("node", "op", "blocks", "bpsm", "waves", "DRAM MB", "L2 MB", "smem MB", "GFLOP", "u", "µs",
                  "bound")
OP_COLUMNS = ("kernel", "node", "level", "op", "shape", "dram_bytes", "l2_bytes", "smem_bytes", "tensor_flops",
              "vector_flops", "est_us", "share")


@dataclass(frozen=True)
class CostEstimate:
    """A cost estimate of a whole μGraph. ``kind`` is "proxy" for every estimate of this module."""

    seconds: float
    bytes_moved: int          # DRAM bytes
    flops: int
    launches: int
    per_kernel: tuple[KernelCost, ...]
    hardware: str
    kind: str = "proxy"

    @property
    def l2_bytes_moved(self) -> int:
        return sum(k.l2_bytes for k in self.per_kernel)

    @property
    def smem_bytes_moved(self) -> int:
        return sum(k.smem_bytes for k in self.per_kernel)

    @property
    def launch_s(self) -> float:
        return sum(k.launch_s for k in self.per_kernel)

    @property
    def microseconds(self) -> float:
        return self.seconds * 1e6

    @property
    def fits(self) -> bool:
        return all(k.fits for k in self.per_kernel)

    @property
    def per_op_costs(self) -> tuple[OpCost, ...]:
        return tuple(o for k in self.per_kernel for o in k.ops)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "hardware": self.hardware, "seconds": self.seconds,
                "bytes_moved": self.bytes_moved, "l2_bytes_moved": self.l2_bytes_moved,
                "smem_bytes_moved": self.smem_bytes_moved, "flops": self.flops,
                "launches": self.launches, "per_kernel": [k.to_dict() for k in self.per_kernel]}

    def __repr__(self) -> str:
        each = f" × {_us(self.launch_s / self.launches)}" if self.launches else ""
        return (f"CostEstimate({self.kind} on {self.hardware}: {_us(self.seconds)} = "
                f"{_us(self.seconds - self.launch_s)} roofline + {self.launches} launch"
                f"{'' if self.launches == 1 else 'es'}{each}; {_mb(self.bytes_moved)} DRAM, "
                f"{_mb(self.l2_bytes_moved)} L2, {self.flops / 1e9:.3g} GFLOP)")

    # ------------------------------------------------------------------ tables

    def table(self) -> list[dict[str, Any]]:
        """One row per kernel, for printing or a DataFrame."""
        return [{"node": k.node, "op": k.op, "blocks": k.blocks, "bpsm": k.blocks_per_sm, "waves": k.waves,
                 "DRAM MB": k.dram_bytes / 1e6, "L2 MB": k.l2_bytes / 1e6, "smem MB": k.smem_bytes / 1e6,
                 "GFLOP": k.flops / 1e9, "u": k.utilisation, "µs": k.seconds * 1e6, "bound": k.bound}
                for k in self.per_kernel]

    def op_table(self) -> list[dict[str, Any]]:
        """One row per op (kernel-level ops; block ops inside customized kernels); ``est_us`` sums to the
        total, ``share`` is its fraction of it."""
        total = self.seconds
        return [{"kernel": o.kernel, "node": o.node, "level": o.level, "op": o.op, "shape": o.shape,
                 "dram_bytes": o.dram_bytes, "l2_bytes": o.l2_bytes, "smem_bytes": o.smem_bytes,
                 "tensor_flops": o.tensor_flops, "vector_flops": o.vector_flops, "est_us": o.seconds * 1e6,
                 "share": o.seconds / total if total > 0 and math.isfinite(total) else math.nan}
                for o in self.per_op_costs]

    def to_frame(self, per_op: bool = False) -> pd.DataFrame:
        """The kernel table (or, with ``per_op=True``, the op table) as a DataFrame labelled proxy
        (a ``kind`` column and ``df.attrs``)."""
        import pandas as pd

        rows = self.op_table() if per_op else self.table()
        df = pd.DataFrame(rows, columns=list(OP_COLUMNS if per_op else KERNEL_COLUMNS))
        for col in ("node", "blocks", "bpsm", "waves"):
            if col in df:
                df[col] = df[col].astype("Int64")
        df["kind"] = self.kind
        df.attrs.update(kind=self.kind, hardware=self.hardware)
        return df

    def per_op(self) -> pd.DataFrame:
        """One row per op with its bytes at DRAM / L2 / shared memory, tensor / vector FLOPs and its
        estimated share of the time (``to_frame(per_op=True)``)."""
        return self.to_frame(per_op=True)

    # ------------------------------------------------------------------ display

    def __str__(self) -> str:
        lines = [repr(self), f"  {'node':>4}  {'op':<22} {'blocks':>6} {'bpsm':>4} {'waves':>5} {'DRAM MB':>9} "
                             f"{'L2 MB':>8} {'smem MB':>8} {'GFLOP':>8} {'u':>5} {'µs':>8}  bound"]
        for k, r in zip(self.per_kernel, self.table(), strict=True):
            lines.append(f"  {r['node']:>4}  {r['op']:<22} {_dash(r['blocks']):>6} {_dash(r['bpsm']):>4} "
                         f"{_dash(r['waves']):>5} {r['DRAM MB']:>9.3f} {r['L2 MB']:>8.3f} {r['smem MB']:>8.3f} "
                         f"{r['GFLOP']:>8.4f} {r['u']:>5.2f} {r['µs']:>8.2f}  {r['bound']}")
            if k.blocks is not None:
                lines.append(f"        {k.threads} threads, ~{k.regs_per_thread} regs/thread, "
                             f"{(k.smem_per_block or 0) / 1024:.1f} KiB smem/block ({k.resources_source}); "
                             f"limited by {k.limiter}")
                for o in k.ops[1:]:
                    lines.append(f"        {_dash(o.node):>3} {o.op:<20} {o.shape:<14} "
                                 f"{o.dram_bytes / 1e6:>9.3f} {o.l2_bytes / 1e6:>8.3f} {o.smem_bytes / 1e6:>8.3f} "
                                 f"{(o.tensor_flops + o.vector_flops) / 1e9:>8.4f}       {o.seconds * 1e6:>8.2f}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in KERNEL_COLUMNS)
        rows = []
        for r in self.table():
            cells = [r["node"], r["op"], _dash(r["blocks"]), _dash(r["bpsm"]), _dash(r["waves"]),
                     f"{r['DRAM MB']:.3f}", f"{r['L2 MB']:.3f}", f"{r['smem MB']:.3f}", f"{r['GFLOP']:.4f}",
                     f"{r['u']:.2f}", f"{r['µs']:.2f}", r["bound"]]
            rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
        op_head = "".join(f"<th>{html.escape(h)}</th>" for h in OP_COLUMNS)
        op_rows = []
        for r in self.op_table():
            cells = [r["kernel"], _dash(r["node"]), r["level"], r["op"], r["shape"], r["dram_bytes"],
                     r["l2_bytes"], r["smem_bytes"], r["tensor_flops"], r["vector_flops"], f"{r['est_us']:.3f}",
                     f"{r['share']:.1%}"]
            op_rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
        return (f'<div class="mirage-lab-cost"><div style="font-family:monospace">{html.escape(repr(self))}</div>'
                f"<table><tr>{head}</tr>{''.join(rows)}</table>"
                f"<details><summary>per op ({self.kind})</summary><table><tr>{op_head}</tr>{''.join(op_rows)}"
                f"</table></details></div>")


def _dash(v: Any) -> str:
    return "-" if v is None else str(v)


def _us(s: float) -> str:
    return f"{s * 1e6:.3g} µs"


def _mb(b: int) -> str:
    return f"{b / 1e6:.3g} MB"
