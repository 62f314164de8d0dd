"""`escrag data`: import and add data, list data versions, restore one, diff two.

`import` and `add` check the new files, validate them together with what is already in data/ (in a
staging copy outside the project), and only then write them into data/, `dvc add data`, `dvc push` and
`git commit data.dvc`. A rejection exits with code 2 and one line naming the file and line (line 0: the
file as a whole), and leaves data/, data.dvc, the DVC cache and remote and git untouched. By default the
steps run in this process; `--flow` runs them as the Prefect flow `data` (flows/data_flow.py).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from flows.cli_support import EXIT_BAD_INPUT, EXIT_OK, project_from
from models.schema import DATASETS
from tasks.data_sources import IMPORT_SOURCES


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "data",
        help="import and add data, list data versions, restore or diff them",
        description="Data in data/ is versioned by data.dvc; every version is a commit of data.dvc.",
    )
    data = parser.add_subparsers(dest="data_command", required=True, metavar="ACTION")

    imp = data.add_parser(
        "import",
        help="convert a public corpus into escrag datasets and add them",
        description="esconv PATH: a folder with train.txt/valid.txt or ESConv.json → data/dialogues/NAME.jsonl "
        "and data/preferences/NAME.jsonl (pairs with off-context negatives). epitome PATH: EPITOME's three "
        "Reddit CSV files → data/ratings/NAME.jsonl (empathy levels 0-2 per mechanism). diasafety PATH: "
        "DiaSafety's train/val/test.json → data/ratings/NAME.jsonl (Safe/Unsafe per category). See "
        "docs/data.md. Personal data in the corpus text is redacted on import; exit 2 and nothing changed "
        "when a record cannot be converted or validated.",
    )
    imp.add_argument("source", choices=IMPORT_SOURCES, help="the corpus format")
    imp.add_argument("path", type=Path, help="the corpus folder (ESConv: or ESConv.json)")
    imp.add_argument("--name", help="file name (without .jsonl) in each dataset (default: the source's name)")
    imp.add_argument("--flow", action="store_true", help="run as the Prefect flow `data`")
    imp.set_defaults(func=_run_import)

    add = data.add_parser(
        "add",
        help="validate new JSONL files together with data/, then version, push and commit them",
        description="Each PATH is a *.jsonl file or a folder of them. Exit code 2 and nothing changed when any "
        "check fails.",
    )
    add.add_argument("dataset", choices=DATASETS)
    add.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    add.add_argument("--as", dest="name", help="file name in data/DATASET/ (one PATH only; default: its name)")
    add.add_argument("--flow", action="store_true", help="run as the Prefect flow `data`")
    add.set_defaults(func=_run_add)

    versions = data.add_parser("versions", help="every data version in git history: revision, date, md5, records")
    versions.add_argument("--json", action="store_true", help="print JSON")
    versions.set_defaults(func=_run_versions)

    checkout = data.add_parser(
        "checkout",
        help="restore data/ and data.dvc to a version (git revision or md5 prefix), verified by md5",
    )
    checkout.add_argument("version", help="git revision (tried first), md5 prefix, or 'workspace'")
    checkout.add_argument("--force", action="store_true", help="discard changes in data/ not recorded in data.dvc")
    checkout.set_defaults(func=_run_checkout)

    diff = data.add_parser("diff", help="records added, removed and changed per dataset between two versions")
    diff.add_argument("a", help="from: git revision or md5 prefix")
    diff.add_argument("b", nargs="?", default="workspace", help="to (default: the current data.dvc)")
    diff.add_argument("--limit", type=int, default=10, help="ids shown per list (default 10; --json lists all)")
    diff.add_argument("--json", action="store_true", help="print JSON with every id")
    diff.set_defaults(func=_run_diff)


def _add(args: Any, verb: str) -> int:
    from tasks.data_ops import records
    from tasks.data_sources import DataRejected

    project = project_from(args)
    project.params  # noqa: B018 - a bad params.yaml stops here
    try:
        if args.flow:
            from flows.data_flow import data as data_flow

            result = data_flow(
                project_dir=str(project.root),
                action=verb,
                dataset=getattr(args, "dataset", None),
                paths=[str(p) for p in getattr(args, "paths", [])] or [str(args.path)],
                name=args.name,
                source=getattr(args, "source", "esconv"),
            )
        else:
            result = _add_in_process(project, args, verb)
    except DataRejected as exc:
        print(f"escrag data {verb}: rejected, nothing changed: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    plan = result.plan
    for f in plan.unchanged:
        print(f"unchanged: data/{f.target} already holds {f.source}")
    if not plan.files:
        print("nothing to add: data/ already holds these files")
        return EXIT_OK
    for f in plan.files:
        print(f"added: data/{f.target}: {records(plan.records[f.target])} from {f.source}")
    totals = ", ".join(f"{d} {n}" for d, n in plan.counts.items())
    print(f"data version {result.md5} ({totals}); pushed {result.pushed} objects")
    print(f"committed data.dvc: {result.commit or 'not committed (see log)'}")
    if result.event:
        print(f"emitted escrag.data.versioned ({result.event}): deployments triggered by new data start now")
    return EXIT_OK


def _add_in_process(project: Any, args: Any, verb: str) -> Any:
    from tasks import data_ops, data_sources

    with tempfile.TemporaryDirectory(prefix="escrag-data-") as tmp:
        if verb == "import":
            files = data_sources.import_files(project, args.source, args.path, Path(tmp), args.name)
        else:
            files = data_sources.collect_sources(args.dataset, args.paths, args.name)
        return data_ops.run_add(project, verb, files, Path(tmp))


def _run_import(args: Any) -> int:
    return _add(args, "import")


def _run_add(args: Any) -> int:
    return _add(args, "add")


def _versions_call(args: Any, fn: Any) -> int:
    from tasks.data_versions import VersionError

    try:
        print(fn(project_from(args).root))
    except VersionError as exc:
        print(f"escrag data {args.data_command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


def _counts(counts: dict[str, int] | None) -> list[str]:
    return [str(counts[d]) if counts else "?" for d in DATASETS]


def _run_versions(args: Any) -> int:
    from tasks.data_versions import list_versions

    def show(root: Path) -> str:
        versions = list_versions(root)
        if args.json:
            keys = ("rev", "date", "md5", "counts", "subject")
            return json.dumps([{k: getattr(v, k) for k in keys} for v in versions], indent=2)
        rows = [("rev", "date", "md5", *DATASETS, "subject")]
        rows += [(v.short, v.date[:19], v.md5[:12], *_counts(v.counts), v.subject[:60]) for v in versions]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] for r in rows]
        note = "\n(? = not in the local DVC cache)" if any(v.counts is None for v in versions) else ""
        return "\n".join(lines) + note

    return _versions_call(args, show)


def _run_checkout(args: Any) -> int:
    from tasks.data_versions import checkout, data_dvc_committed

    def restore(root: Path) -> str:
        v = checkout(root, args.version, force=args.force)
        counts = ", ".join(f"{d} {n}" for d, n in zip(DATASETS, _counts(v.counts), strict=True))
        hint = "" if data_dvc_committed(root) else f"\ndata.dvc is now that of {v.short}; commit it to make it current"
        return f"data/ restored to {v.md5} ({counts}) and verified{hint}"

    return _versions_call(args, restore)


def _run_diff(args: Any) -> int:
    from tasks.data_versions import diff, resolve

    def show(root: Path) -> str:
        a, b = resolve(root, args.a), resolve(root, args.b)
        changes = diff(root, a, b)
        if args.json:
            return json.dumps({"from": a.md5, "to": b.md5, "datasets": changes}, indent=2)
        lines = [f"data diff {a.short} ({a.md5[:12]}) → {b.short} ({b.md5[:12]})"]
        lines.append(f"{'dataset':<12} {'added':>7} {'removed':>7} {'changed':>7}")
        for d, c in changes.items():
            lines.append(f"{d:<12} {len(c['added']):>7} {len(c['removed']):>7} {len(c['changed']):>7}")
        for d, c in changes.items():
            for kind, ids in c.items():
                if ids:
                    more = f" … and {len(ids) - args.limit} more" if len(ids) > args.limit else ""
                    lines.append(f"  {d} {kind}: {', '.join(ids[: args.limit])}{more}")
        return "\n".join(lines)

    return _versions_call(args, show)
