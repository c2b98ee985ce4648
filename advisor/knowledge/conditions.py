"""Evaluate the closed all/any/not/leaf condition schema over a facts dict. No eval()."""
from __future__ import annotations

from typing import Any, Iterator

from advisor.knowledge import schema as ks


def leaves(cond: Any) -> Iterator[ks.Leaf]:
    if isinstance(cond, ks.All):
        for c in cond.all:
            yield from leaves(c)
    elif isinstance(cond, ks.AnyOf):
        for c in cond.any:
            yield from leaves(c)
    elif isinstance(cond, ks.Not):
        yield from leaves(cond.not_)
    else:
        yield cond


def compile_condition(cond: Any):
    """Turn a validated condition into a closure, once per knowledge load.

    eq/ne/in/not_in compare as given; a comparison (gt/gte/lt/lte) on an unknown or non-numeric fact is false.
    """
    if isinstance(cond, ks.All):
        return _all([compile_condition(c) for c in cond.all])
    if isinstance(cond, ks.AnyOf):
        return _any([compile_condition(c) for c in cond.any])
    if isinstance(cond, ks.Not):
        inner = compile_condition(cond.not_)
        return lambda f: not inner(f)
    name, op, arg = cond.fact, cond.op, cond.operand
    if op == "eq":
        return lambda f: f.get(name) == arg
    if op == "ne":
        return lambda f: f.get(name) != arg
    if op == "in":
        return lambda f: f.get(name) in arg
    if op == "not_in":
        return lambda f: f.get(name) not in arg
    cmp = {"gt": float.__gt__, "gte": float.__ge__, "lt": float.__lt__, "lte": float.__le__}[op]
    argf = float(arg)

    def numeric(f: dict) -> bool:
        v = f.get(name)
        if v is None or isinstance(v, (str, bool)):
            return False
        return cmp(float(v), argf)

    return numeric


def _all(parts: list):
    """all(p(f) for p in parts), without a generator per call for the short lists rules write (the flip search
    evaluates every rule for every engine of every candidate): the same tests, in the same order, stopping at the
    same first false one."""
    if len(parts) == 2:
        a, b = parts
        return lambda f: bool(a(f) and b(f))
    if len(parts) == 3:
        a, b, c = parts
        return lambda f: bool(a(f) and b(f) and c(f))
    return lambda f: all(p(f) for p in parts)


def _any(parts: list):
    """any(p(f) for p in parts), as _all."""
    if len(parts) == 2:
        a, b = parts
        return lambda f: bool(a(f) or b(f))
    if len(parts) == 3:
        a, b, c = parts
        return lambda f: bool(a(f) or b(f) or c(f))
    return lambda f: any(p(f) for p in parts)
