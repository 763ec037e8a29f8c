"""bert_tf's modules and packages import each other in one direction: no import circle between two modules or
between two packages (siblings at any level: bert_tf.formats and bert_tf.run_directory, bert_tf.modeling.layers
and bert_tf.modeling.tasks), counting the imports inside functions, which only postpone a circle."""

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "bert_tf")


def modules(root=PACKAGE):
    """{dotted module name: file} of every Python file of the package; a package is its __init__.py."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path[: -len(".py")], os.path.dirname(root)).replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


def imports(name, path, known):
    """The modules of `known` that module `name` (file `path`) imports, at its top or inside functions: for
    `from package import name`, the module package.name when there is one, else the package."""
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                           for alias in node.names)
    result = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        # a module's own package (its __init__) and a package's own modules are not edges between siblings
        if target and target != name and not name.startswith(target + ".") and not target.startswith(name + "."):
            result.add(target)
    return result


def sibling_edges(graph):
    """{(parent, a, b)}: the children a != b of a package `parent` (its modules and subpackages) such that
    something in a imports something in b."""
    edges = set()
    for source, targets in graph.items():
        for target in targets:
            a, b = source.split("."), target.split(".")
            common = 0
            while common < min(len(a), len(b)) and a[common] == b[common]:
                common += 1
            if common < len(a) and common < len(b):
                edges.add((".".join(a[:common]), ".".join(a[: common + 1]), ".".join(b[: common + 1])))
    return edges


def circles(edges):
    """The strongly connected sets of more than one node of the directed graph `edges` {(a, b)}."""
    following = {}
    for a, b in edges:
        following.setdefault(a, set()).add(b)
        following.setdefault(b, set())
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(following[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(following):
        if node not in index:
            visit(node)
    return found


def test_the_circle_finder_sees_a_circle_between_packages_and_one_postponed_into_a_function(tmp_path):
    package = tmp_path / "bert_tf"
    for folder in ("low", "high"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "low" / "paths.py").write_text("from bert_tf.high import run\n")
    (package / "high" / "run.py").write_text("def f():\n    from bert_tf.low.paths import x\n")
    (package / "high" / "other.py").write_text("from . import run\n")
    known = modules(str(package))
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert graph["bert_tf.high.other"] == {"bert_tf.high.run"}
    assert circles({(a, b) for _, a, b in sibling_edges(graph)}) == [["bert_tf.high", "bert_tf.low"]]


def test_no_import_circle_between_modules_or_packages():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    edges = sibling_edges(graph)
    found = []
    for parent in sorted({parent for parent, _, _ in edges}):
        for circle in circles({(a, b) for p, a, b in edges if p == parent}):
            why = sorted(f"{source} -> {target}" for source, targets in graph.items() for target in targets
                         if any(source == c or source.startswith(c + ".") for c in circle)
                         and any(target == c or target.startswith(c + ".") for c in circle)
                         and not any(source.startswith(c) and target.startswith(c) for c in circle))
            found.append(f"{' <-> '.join(circle)}: {'; '.join(why)}")
    assert not found, "\n".join(found)
