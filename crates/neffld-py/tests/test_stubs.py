"""The shipped type stubs describe the modules as built: every class,
function and attribute they declare exists, and every public name of each
module is declared (neffld, and neffld.nrtpy)."""

import ast
from pathlib import Path

import pytest

import neffld
from neffld import nrtpy

STUB = Path(neffld.__file__).with_name("__init__.pyi")
MODULES = [(neffld, STUB), (nrtpy, Path(nrtpy.__file__).with_suffix(".pyi"))]
# Exceptions whose declared attributes are set on each instance (checked
# in test_errors and test_nrtpy).
INSTANCE_ATTRS = {
    "NeffError", "NeffFileNotFoundError", "NeffPermissionError", "NeffOSError", "NrtError"
}


def declared(stub):
    tree = ast.parse(stub.read_text())
    classes, functions = {}, set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, ast.AnnAssign):
                    members.add(item.target.id)
                elif isinstance(item, ast.Assign):  # an enum's members
                    members.update(t.id for t in item.targets)
                elif isinstance(item, ast.FunctionDef):
                    members.add(item.name)
            classes[node.name] = members
        elif isinstance(node, ast.FunctionDef):
            functions.add(node.name)
        elif isinstance(node, ast.AnnAssign) and node.target.id != "__version__":
            functions.add(node.target.id)
    return classes, functions


def test_the_stubs_and_py_typed_ship_with_the_package():
    for _, stub in MODULES:
        assert stub.is_file()
    assert STUB.with_name("py.typed").is_file()


@pytest.mark.parametrize("module, stub", MODULES)
def test_every_declared_name_exists(module, stub):
    classes, functions = declared(stub)
    for name in functions:
        if name == "RUNTIME_LINES":
            continue  # a tuple, checked below
        assert callable(getattr(module, name)), name
    for name, members in classes.items():
        cls = getattr(module, name)
        for m in members - {"__buffer__"}:
            if name in INSTANCE_ATTRS:
                continue
            assert hasattr(cls, m), f"{name}.{m}"


@pytest.mark.parametrize("module, stub", MODULES)
def test_every_public_name_is_declared(module, stub):
    classes, functions = declared(stub)
    public = set(module.__all__) - {"__version__"}
    assert public == set(classes) | functions


@pytest.mark.parametrize("module, stub", MODULES)
def test_every_attribute_is_declared(module, stub):
    # And the reverse: nothing the classes expose is missing from the stub
    # (Tensor.shape_ and NeffInfo.uuid_, private fields, were exposed).
    classes, _ = declared(stub)
    for name, members in classes.items():
        if name in INSTANCE_ATTRS:
            continue
        cls = getattr(module, name)
        extra = {a for a in dir(cls) if not a.startswith("_")} - members
        if issubclass(cls, BaseException):
            extra -= set(dir(BaseException))  # args, add_note, ...
        if issubclass(cls, int):
            extra -= set(dir(int)) | {"name", "value"}  # an IntEnum's own
        assert not extra, f"{name}: {sorted(extra)}"


def test_the_runtime_lines_are_the_stubs():
    # The stub's Literal of runtime lines is the library's table, in order.
    tree = ast.parse(STUB.read_text())
    alias = next(
        n.value
        for n in tree.body
        if isinstance(n, ast.Assign) and n.targets[0].id == "_RuntimeLine"
    )
    listed = tuple(e.value for e in alias.slice.elts)
    assert listed == neffld.RUNTIME_LINES
    assert listed[0] == "2.23"
