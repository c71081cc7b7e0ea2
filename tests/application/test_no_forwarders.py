"""Governance keeps only what coordinates several collaborators: a method whose whole body hands
its call to one collaborator (`return self.audit.history(...)`) is a forwarder, which a reader
following a call from a route would have to pass. Routes call the collaborator instead
(`interface.services`)."""

from __future__ import annotations

import ast
import inspect

from application import governance


def forwards(method: ast.FunctionDef) -> bool:
    body = [s for s in method.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return | ast.Expr) or body[0].value is None:
        return False
    call = body[0].value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return False
    receiver = call.func.value  # self.<collaborator>[.<part>...]
    while isinstance(receiver, ast.Attribute):
        receiver = receiver.value
    return isinstance(receiver, ast.Name) and receiver.id == "self" and isinstance(call.func.value, ast.Attribute)


def test_governance_has_no_method_that_only_forwards_to_one_collaborator():
    tree = ast.parse(inspect.getsource(governance))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Governance"]
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
    assert len(methods) > 10  # the class was found and read
    assert [m.name for m in methods if forwards(m)] == []
