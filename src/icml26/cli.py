"""`icml26 list | run SLUG | reproduce [SLUG ...] | report` (also `python -m icml26`).

A paper package is imported only when it is run, so `icml26 list` is fast and a missing optional extra
only affects the paper that needs it. User errors (unknown slug, unimplemented paper, bad `--set`) print one
line and exit with status 2.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from icml26.registry import PAPERS, Paper, get_paper
from icml26.report import format_measured
from icml26.results import SCALES, Result, config_hash, load_result, save_result


class UserError(Exception):
    """A mistake in the command line: reported as one line, exit status 2."""


def runs_root(out: str | None = None) -> Path:
    return Path(out or os.environ.get("ICML26_RUNS", "runs"))


def result_dir(root: Path, slug: str, scale: str) -> Path:
    return root / slug / scale


# ------------------------------------------------------------------------------------------ configs
def _paper(slug: str) -> Paper:
    try:
        return get_paper(slug)
    except KeyError as e:
        raise UserError(e.args[0]) from None


def _experiment(paper: Paper):
    try:
        return paper.load_experiment()
    except NotImplementedError as e:
        raise UserError(f"{e}; implemented: {', '.join(p.slug for p in PAPERS.values() if p.is_implemented())}")
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("icml26"):
            raise
        raise UserError(str(e)) from None


def parse_value(raw: str, default: Any, key: str) -> Any:
    """Parse a `--set` value to the type of the config's default value."""
    try:
        if isinstance(default, bool):
            low = raw.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, str):
            return raw
        if default is None:
            try:
                return json.loads(raw)
            except json.JSONDecodeError:
                return raw
        value = json.loads(raw)  # lists / dicts
        if isinstance(default, (list, tuple)) and not isinstance(value, list):
            raise ValueError
        if isinstance(default, dict) and not isinstance(value, dict):
            raise ValueError
        return value
    except (ValueError, json.JSONDecodeError):
        kind = type(default).__name__
        raise UserError(f"--set {key}={raw}: expected a {kind} like {json.dumps(default)}") from None


def resolve_config(exp, slug: str, scale: str, seed: int | None = None, sets: list[str] | None = None) -> dict:
    """The experiment's config for `scale`, with `--seed` and `--set key=value` overrides applied."""
    configs = getattr(exp, "CONFIGS", None)
    if not isinstance(configs, dict) or scale not in configs:
        raise UserError(f"paper '{slug}' has no '{scale}' configuration")
    config = copy.deepcopy(configs[scale])
    for item in sets or []:
        if "=" not in item:
            raise UserError(f"--set expects key=value, got '{item}'")
        key, raw = item.split("=", 1)
        key = key.strip()
        if key not in config or key == "scale":
            raise UserError(f"--set {key}: unknown key for '{slug}' ({scale}); keys: {', '.join(sorted(config))}")
        config[key] = parse_value(raw.strip(), config[key], key)
    if seed is not None:
        if "seed" not in config:
            raise UserError(f"paper '{slug}' takes no --seed (its config has no 'seed')")
        if seed < 0:
            raise UserError(f"--seed must be >= 0, got {seed}")
        config["seed"] = seed
    config["scale"] = scale
    return config


# ------------------------------------------------------------------------------------------ printing
def _console():
    import sys

    from rich.console import Console

    # logs (not a terminal) get wide tables instead of rich's 80-column default
    return Console(highlight=False, width=None if sys.stdout.isatty() else 140)




def print_claims(result: Result) -> None:
    from rich.table import Table

    table = Table(title=f"{result.slug} ({result.scale}) - {result.runtime_s:.1f} s")
    for col in ("claim", "measured", "threshold", "verdict", "gate"):
        table.add_column(col, overflow="fold")
    for c in result.claims:
        verdict = "[green]held[/]" if c.held else "[red]not held[/]"
        table.add_row(f"{c.id}: {c.statement}", format_measured(c.measured), c.threshold, verdict,
                      "gate" if c.gate else "report")
    _console().print(table)


# ------------------------------------------------------------------------------------------ commands
def cmd_list(args) -> int:
    from rich.table import Table

    root = runs_root(args.out)
    table = Table(title="icml26 papers")
    table.add_column("slug", no_wrap=True, min_width=19)
    table.add_column("title", overflow="fold", ratio=3)
    table.add_column("arXiv", no_wrap=True, min_width=10)
    table.add_column("impl.", no_wrap=True)
    table.add_column("last result", overflow="fold", ratio=1)
    for p in PAPERS.values():
        last = ""
        for scale in ("small", "paper", "smoke"):
            f = result_dir(root, p.slug, scale) / "result.json"
            if f.exists():
                try:
                    r = load_result(f)
                    gates = [c for c in r.claims if c.gate]
                    rep = [c for c in r.claims if not c.gate]
                    last = (f"{scale}: gates {sum(c.held for c in gates)}/{len(gates)}, "
                            f"reported {sum(c.held for c in rep)}/{len(rep)} held")
                except Exception:  # noqa: BLE001 - a corrupt file should not break listing
                    last = f"{scale}: unreadable result"
                break
        table.add_row(p.slug, p.title, p.arxiv, "yes" if p.is_implemented() else "no", last)
    _console().print(table)
    return 0


def run_paper(slug: str, scale: str, seed: int | None, sets: list[str], out: str | None) -> Result:
    """Run one reproduction in this process, save it, print its claims; returns the Result."""
    if scale not in SCALES:
        raise UserError(f"--scale must be one of {', '.join(SCALES)}, got '{scale}'")
    paper = _paper(slug)
    exp = _experiment(paper)
    config = resolve_config(exp, slug, scale, seed, sets)
    _console().print(f"[bold]{slug}[/] ({scale}): {paper.title}")
    t0 = time.perf_counter()
    result = exp.run(config)
    if not isinstance(result, Result):
        raise TypeError(f"{paper.experiment_module}.run must return a Result, got {type(result).__name__}")
    if not result.runtime_s:
        result.runtime_s = time.perf_counter() - t0
    result.config = config
    path = save_result(result, result_dir(runs_root(out), slug, scale))
    print_claims(result)
    _console().print(f"saved {path}")
    return result


def cmd_run(args) -> int:
    run_paper(args.slug, args.scale, args.seed, args.set or [], args.out)
    return 0


def cmd_reproduce(args) -> int:
    root = runs_root(args.out)
    if args.slugs:
        papers = [_paper(s) for s in args.slugs]
        missing = [p.slug for p in papers if not p.is_implemented()]
        if missing:
            raise UserError(f"not implemented yet: {', '.join(missing)}")
    else:
        papers = [p for p in PAPERS.values() if p.is_implemented()]
    if not papers:
        raise UserError("no paper is implemented yet")
    con = _console()
    summary: list[tuple[str, str]] = []
    for p in papers:
        rdir = result_dir(root, p.slug, args.scale)
        if not args.force and (rdir / "result.json").exists():
            try:
                exp = p.load_experiment()
                want = config_hash(resolve_config(exp, p.slug, args.scale))
                old = load_result(rdir)
                if old.config_hash == want:
                    con.print(f"[dim]{p.slug}: reusing saved result ({old.created})[/]")
                    summary.append((p.slug, "reused"))
                    continue
            except Exception as e:  # noqa: BLE001 - fall through to a fresh run
                con.print(f"[yellow]{p.slug}: cannot reuse saved result ({e}); re-running[/]")
        # each paper in its own process: a crash or a leak in one cannot take the others down
        cmd = [sys.executable, "-m", "icml26", "run", p.slug, "--scale", args.scale, "--out", str(root)]
        t0 = time.perf_counter()
        rc = subprocess.call(cmd)
        dt = time.perf_counter() - t0
        status = "ok" if rc == 0 else f"FAILED (exit {rc})"
        summary.append((p.slug, f"{status} in {dt:.0f} s"))
        if rc != 0:
            con.print(f"[red]{p.slug}: failed with exit {rc}; continuing with the rest[/]")
    con.print("\n[bold]reproduce summary[/]")
    for slug, status in summary:
        con.print(f"  {slug:20s} {status}")
    from icml26.report import build_report

    md, html = build_report(root)
    con.print(f"report: {md} and {html}")
    return 0 if all(not s.startswith("FAILED") for _, s in summary) else 1


def cmd_report(args) -> int:
    from icml26.report import build_report, summary_markdown

    root = runs_root(args.out)
    if args.readme_table:
        print(summary_markdown(root))
        return 0
    md, html = build_report(root)
    _console().print(f"wrote {md} and {html}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="icml26", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="table of the papers")
    p.add_argument("--out", help="runs folder (default: runs or $ICML26_RUNS)")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("run", help="run one reproduction")
    p.add_argument("slug")
    p.add_argument("--scale", default="small", help="smoke | small | paper (default small)")
    p.add_argument("--seed", type=int, default=None, help="base seed (overrides the config's 'seed')")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config value (repeatable)")
    p.add_argument("--out", help="runs folder (default: runs or $ICML26_RUNS)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("reproduce", help="run several reproductions, then write the report")
    p.add_argument("slugs", nargs="*", help="papers to run (default: every implemented paper)")
    p.add_argument("--scale", default="small", choices=SCALES)
    p.add_argument("--force", action="store_true", help="re-run even when a result for the same config exists")
    p.add_argument("--out", help="runs folder (default: runs or $ICML26_RUNS)")
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("report", help="build runs/report.html and runs/report.md from saved results")
    p.add_argument("--out", help="runs folder (default: runs or $ICML26_RUNS)")
    p.add_argument("--readme-table", action="store_true", help="print the summary table for the README")
    p.set_defaults(func=cmd_report)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as e:
        print(f"icml26: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("icml26: interrupted; results saved so far are kept", file=sys.stderr)
        return 130
    except Exception:  # noqa: BLE001 - a bug in a reproduction: show where
        traceback.print_exc()
        return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
