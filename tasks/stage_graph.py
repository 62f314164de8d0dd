"""Which code files each DVC stage runs, read from the source, and how that compares with dvc.yaml.

A stage runs its stage function, the module-level code of every module that function's module imports,
and every project module reachable from there (imports inside functions included, since they run when
called). Within the stage's own module only the functions the stage function can reach count, so that
`sft` and `grpo`, which share tasks/train_stages.py, do not claim each other's imports. Files a module
loads from beside itself (`Path(__file__).with_name("probes.npz")`) count as code too.

The CLI dispatch (`escrag stage NAME` in flows/cli.py, and the registry tasks/stages.py) is left out:
it only chooses the function, so editing a help text re-runs nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import yaml

CODE_PACKAGES = ("models", "tasks", "flows")


def module_file(root: Path, module: str) -> Path | None:
    """The file of a project module (a package's __init__.py), or None outside the project's packages."""
    if module.split(".")[0] not in CODE_PACKAGES:
        return None
    base = root.joinpath(*module.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _walk(node: ast.AST) -> Iterable[ast.AST]:
    """ast.walk without `if TYPE_CHECKING:` blocks, which never run."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not _is_type_checking(child):
            yield from _walk(child)


def _imported(nodes: Iterable[ast.AST]) -> set[str]:
    """Module names imported by `nodes`; `from a import b` gives a and a.b (b may be a submodule)."""
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _beside_files(tree: ast.AST, path: Path) -> set[Path]:
    """Files loaded from beside the module: `Path(__file__).with_name("NAME")`."""
    found = set()
    for node in _walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "with_name"
            and "__file__" in ast.unparse(node.func.value)
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(path.with_name(node.args[0].value))
    return found


def _module_level(tree: ast.Module) -> list[ast.AST]:
    """Statements that run on import: everything but the bodies of functions and classes (kept with their
    definitions) and TYPE_CHECKING blocks."""
    definitions = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    kept = [stmt for stmt in tree.body if not isinstance(stmt, definitions) and not _is_type_checking(stmt)]
    return [n for stmt in kept for n in _walk(stmt)]


class _Module:
    """One parsed project module: its top-level definitions, and the nodes that run for each part."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        kinds = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        self.definitions = {n.name: n for n in self.tree.body if isinstance(n, kinds)}

    def nodes(self, symbol: str | None) -> list[ast.AST]:
        """The nodes that run for `symbol` (None: the module-level code)."""
        if symbol is None:
            return _module_level(self.tree)
        node = self.definitions.get(symbol)
        return list(_walk(node)) if node is not None else []

    def references(self, nodes: list[ast.AST]) -> set[str]:
        """The module's own definitions that `nodes` name."""
        return {n.id for n in nodes if isinstance(n, ast.Name) and n.id in self.definitions}


def _targets(nodes: Iterable[ast.AST]) -> set[tuple[str, str]]:
    """(module, symbol) pairs that `nodes` import. `from a import b` needs b (a function, a class, a
    constant or a submodule); `import a.b` needs all of a.b ("*"), since any attribute may be used."""
    found: set[tuple[str, str]] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {(alias.name, "*") for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {(node.module, alias.name) for alias in node.names}
    return found


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def code_files(root: Path, module: str, symbol: str) -> set[Path]:
    """Every project file that running `module.symbol` can execute or load, relative to `root`: the
    module-level code of every module imported on the way (and of its parent packages), and the functions
    and classes reachable from `symbol` through names and imports."""
    modules: dict[str, _Module] = {}
    done: set[tuple[str, str | None]] = set()
    todo: list[tuple[str, str | None]] = [(module, symbol)]
    while todo:
        name, symbol_ = todo.pop()
        path = module_file(root, name)
        if (name, symbol_) in done or path is None:
            continue
        done.add((name, symbol_))
        if name not in modules:
            modules[name] = _Module(path)
            todo += [(package, None) for package in _with_parents(name)]
        mod = modules[name]
        for part in [*mod.definitions, None] if symbol_ == "*" else [symbol_]:
            nodes = mod.nodes(part)
            todo += [(name, ref) for ref in mod.references(nodes)]
            for target, target_symbol in _targets(nodes):
                todo += [(target, None), (target, target_symbol), (f"{target}.{target_symbol}", "*")]
    files = {m.path for m in modules.values()} | {f for m in modules.values() for f in _beside_files(m.tree, m.path)}
    return {f.relative_to(root) for f in files}


def stage_code(root: Path, stage_function: object) -> set[Path]:
    """The code files of a stage function (e.g. tasks.train_stages.grpo)."""
    return code_files(root, stage_function.__module__, stage_function.__name__)


def declared_deps(root: Path, stage: str) -> list[str]:
    """The deps of `stage` in dvc.yaml, as written."""
    stages = yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    return [str(d) for d in stages[stage].get("deps", [])]


def _covered(path: Path, deps: Iterable[str]) -> bool:
    return any(path == Path(d) or Path(d) in path.parents for d in deps)


def code_deps(deps: Iterable[str]) -> list[str]:
    """The deps that are project code (under models/, tasks/ or flows/)."""
    return [d for d in deps if Path(d).parts[0] in CODE_PACKAGES]


def graph_problems(root: Path, stage: str, function: object) -> list[str]:
    """What dvc.yaml gets wrong about `stage`'s code: files it runs but does not declare, and declared
    code files or folders it never runs (editing those would re-run it for nothing)."""
    code = stage_code(root, function)
    deps = declared_deps(root, stage)
    problems = [f"{stage}: runs {p} but dvc.yaml does not declare it" for p in sorted(code) if not _covered(p, deps)]
    for dep in code_deps(deps):
        target = root / dep
        files = [p.relative_to(root) for p in target.rglob("*") if p.is_file()] if target.is_dir() else [Path(dep)]
        unused = [f for f in files if f not in code and "__pycache__" not in f.parts]
        if unused:
            problems.append(f"{stage}: declares {dep} but never runs {', '.join(map(str, sorted(unused)))}")
    return problems


def code_cover(root: Path, files: set[Path]) -> list[str]:
    """The shortest dvc.yaml dep list for `files`: a folder when every file in it is run, else the files."""
    cover: set[Path] = set()
    for path in files:
        folder = path.parent
        while folder != Path(".") and all(f in files for f in _files_in(root, folder)):
            path, folder = folder, folder.parent
        cover.add(path)
    cover = {p for p in cover if not any(q in p.parents for q in cover)}
    return sorted(map(str, cover))


def _files_in(root: Path, folder: Path) -> list[Path]:
    """The files under `folder` that dvc would hash, relative to `root` (caches left out)."""
    found = (p.relative_to(root) for p in (root / folder).rglob("*") if p.is_file())
    return [p for p in found if "__pycache__" not in p.parts]


def rewrite_code_deps(text: str, stage: str, deps: list[str]) -> str:
    """dvc.yaml `text` with the code deps of `stage` replaced by `deps` (other deps and comments kept)."""
    lines = text.splitlines(keepends=True)
    start = lines.index(f"  {stage}:\n")
    deps_at = next(i for i in range(start, len(lines)) if lines[i] == "    deps:\n")
    end = next(i for i in range(deps_at + 1, len(lines)) if not lines[i].startswith("      - "))
    kept = [line for line in lines[deps_at + 1 : end] if Path(line.split("- ", 1)[1].split("#")[0].strip()).parts[0]
            not in CODE_PACKAGES]  # fmt: skip
    return "".join(lines[: deps_at + 1] + kept + [f"      - {d}\n" for d in deps] + lines[end:])
