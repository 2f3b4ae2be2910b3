"""A small arithmetic evaluator over Python's ``ast`` (never ``eval``): numbers and math only."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

__all__ = ["UnsafeExpressionError", "evaluate"]

_MAX_POWER = 10_000
_MAX_LENGTH = 500

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "exp": math.exp,
    "floor": math.floor,
    "ceil": math.ceil,
    "min": min,
    "max": max,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


class UnsafeExpressionError(ValueError):
    """The expression uses something other than numbers, operators and the allowed functions."""


def evaluate(expression: str) -> float | int:
    """Evaluate an arithmetic expression safely.

    ``^`` means power (as people write it), the signs for times and divide are accepted.

    >>> evaluate("2 * (3 + 4) ^ 2")
    98
    >>> evaluate("sqrt(16) + pi") > 7
    True

    Raises:
        UnsafeExpressionError: names, attributes, calls of other functions, huge powers, or an
            expression longer than 500 characters.
        ZeroDivisionError: division by zero.
    """
    if len(expression) > _MAX_LENGTH:
        raise UnsafeExpressionError(f"expression longer than {_MAX_LENGTH} characters")
    text = expression.replace("^", "**").replace("\u00d7", "*").replace("\u00f7", "/")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise UnsafeExpressionError(f"not an arithmetic expression: {expression!r}") from exc
    result: float | int = _eval(tree.body)
    return result


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        # Guard against 9**9**9-style expressions that would hang the process.
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_POWER:
            raise UnsafeExpressionError("exponent too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _FUNCTIONS[node.func.id](*(_eval(arg) for arg in node.args))
    raise UnsafeExpressionError(f"not allowed in an arithmetic expression: {ast.dump(node)[:60]}")
