"""The house rules the layout keeps (issue 21): no source file over 400 lines, no function over 80, and no
test module importing another test module (shared code lives in tests/helpers/)."""

import ast
from pathlib import Path

import warmstart

SRC = Path(warmstart.__path__[0])
TESTS = Path(__file__).parent


def test_no_file_over_400_lines_and_no_function_over_80():
    long_files, long_functions = [], []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 400:
            long_files.append(f"{path.relative_to(SRC)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > 80:
                    long_functions.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}: {lines} lines")
    assert not long_files and not long_functions, long_files + long_functions


def test_test_modules_import_helpers_not_each_other():
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tests."):
                last = node.module.rsplit(".", 1)[-1]
                if last.startswith("test_") or last == "conftest":
                    offenders.append(f"{path.relative_to(TESTS)}: from {node.module}")
    assert not offenders, offenders
