"""Elementwise block ops: unary and binary ops (their expressions from the op table, ``codegen.expressions``; a
binary op's size-1 dims broadcast) and concat."""

from __future__ import annotations

from mirage_lab.codegen.expressions import BINARY_EXPR, UNARY_EXPR, flat
from mirage_lab.codegen.writer import KernelWriter


def emit_unary(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    w.elementwise(k, lambda cs: [f"float v = {UNARY_EXPR[node.op](w.ld(node.inputs[0], 'idx'), node)};"])


def emit_binary(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    a, b = node.inputs

    def body(cs: list[str]) -> list[str]:
        ia, ib = (("idx" if w.dims(t) == w.dims(node.outputs[0]) else flat(w.dims(t), cs)) for t in (a, b))
        return [f"float v = {BINARY_EXPR[node.op](w.ld(a, ia), w.ld(b, ib))};"]

    w.elementwise(k, body)


def emit_concat(w: KernelWriter, k: int) -> None:
    node = w.bg.nodes[k]
    a, b = node.inputs
    d = int(node.attr("dim"))
    na = w.dims(a)[d]

    def body(cs: list[str]) -> list[str]:
        shifted = [f"cd - {na}" if i == d else c for i, c in enumerate(cs)]
        at = [("cd" if i == d else c) for i, c in enumerate(cs)]
        return [f"const int cd = {cs[d]};",
                f"float v = cd < {na} ? {w.ld(a, flat(w.dims(a), at))} : {w.ld(b, flat(w.dims(b), shifted))};"]

    w.elementwise(k, body)
