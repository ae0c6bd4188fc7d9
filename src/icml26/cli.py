"""`icml26 list | show SLUG | run SLUG | reproduce [SLUG ...] | report` (also `python -m icml26`).

A paper package is imported only when it is run or shown, so `icml26 list` is fast and imports no paper and no
torch, and a missing optional extra only affects the paper that needs it (named before any compute). User errors
(unknown slug, unimplemented paper, missing extra, bad `--set`, a config the experiment rejects, an unwritable
`--out`) print one line and exit with status 2; Ctrl-C stops within seconds with status 130 and never leaves a
half-written file.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import icml26
from icml26.registry import PAPERS, MissingExtraError, Paper, get_paper
from icml26.results import SCALES, Result, config_hash, load_result, save_result


class UserError(Exception):
    """A mistake in the command line: reported as one line, exit status 2."""


def runs_root(out: str | None = None) -> Path:
    return Path(out or os.environ.get("ICML26_RUNS", "runs"))


def result_dir(root: Path, slug: str, scale: str, overrides: dict[str, Any] | None = None) -> Path:
    """`<root>/<slug>/<scale>` for the canonical config; `<root>/<slug>/<scale>+<tag>` for a run with overrides."""
    if not overrides:
        return root / slug / scale
    return root / slug / f"{scale}+{override_tag(overrides)}"


def override_tag(overrides: dict[str, Any]) -> str:
    """A folder-safe name for a set of overrides, e.g. `seed=7,T=200` (a hash when that would be long)."""
    from icml26.results import config_hash as _h

    text = ",".join(f"{k}={json.dumps(v, sort_keys=True, default=str)}" for k, v in sorted(overrides.items()))
    safe = re.sub(r"[^A-Za-z0-9=,._-]", "", text.replace('"', ""))
    return safe if safe and len(safe) <= 48 else f"cfg-{_h(overrides)[:10]}"


# ------------------------------------------------------------------------------------------ papers and configs
def _paper(slug: str) -> Paper:
    try:
        return get_paper(slug)
    except KeyError as e:
        raise UserError(e.args[0]) from None


def _implemented() -> list[str]:
    return [p.slug for p in PAPERS.values() if p.is_implemented()]


def _experiment(paper: Paper):
    """Import the paper's experiment module, turning a missing extra into one line that names it."""
    try:
        return paper.load_experiment()
    except NotImplementedError as e:
        raise UserError(f"{e}; implemented: {', '.join(_implemented())}") from None
    except MissingExtraError as e:
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


def config_overrides(exp, scale: str, config: dict) -> dict[str, Any]:
    """The keys whose value differs from `CONFIGS[scale]` (what `--seed`/`--set` changed)."""
    base = exp.CONFIGS[scale]
    return {k: v for k, v in config.items() if k != "scale" and (k not in base or json.dumps(base[k], sort_keys=True,
            default=str) != json.dumps(v, sort_keys=True, default=str))}


def validate(exp, slug: str, config: dict) -> None:
    """The experiment's own `validate_config`, before any compute: a rejected value is a one-line user error."""
    check = getattr(exp, "validate_config", None)
    if check is None:
        return
    try:
        check(config)
    except (ValueError, TypeError) as e:
        raise UserError(f"invalid config for '{slug}': {e}") from None


def check_writable(root: Path) -> None:
    """Fail now, not after an hour of compute, when results could not be saved under `root`."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".icml26-write-test-"):
            pass
    except OSError as e:
        raise UserError(f"--out {root}: cannot write results there ({e.strerror or e})") from None


# ------------------------------------------------------------------------------------------ saved results
def read_status(root: Path, paper: Paper) -> tuple[str, Result | None, str]:
    """(scale, result, problem) of the best saved canonical result: small, then medium, paper, smoke.

    `problem` is "" for a readable result, else "unreadable: reason". scale is "" when nothing was saved.
    """
    for scale in ("small", "medium", "paper", "smoke"):
        f = result_dir(root, paper.slug, scale) / "result.json"
        if f.exists():
            try:
                return scale, load_result(f), ""
            except (OSError, ValueError) as e:
                return scale, None, f"unreadable: {_reason(e)}"
    return "", None, ""


def _reason(e: Exception) -> str:
    if isinstance(e, json.JSONDecodeError):
        return f"not valid JSON ({e.msg} at line {e.lineno})"
    return str(e).splitlines()[0][:160]


def is_stale(paper: Paper, result: Result) -> bool:
    """True when the code the paper runs changed since `result` was made (or the result predates code hashes)."""
    from icml26.provenance import is_stale as _stale

    return _stale(paper, result)


def _verdict_counts(r: Result, colour: bool = False) -> str:
    """Gates only: "held h · not held n · inconclusive i" (sanity and report claims never count)."""
    c = r.counts()
    if not colour:
        return f"held {c['held']} · not held {c['not held']} · inconclusive {c['inconclusive']}"
    return (f"[green]held {c['held']}[/] · [red]not held {c['not held']}[/] · "
            f"[yellow]inconclusive {c['inconclusive']}[/]")


_VERDICT_STYLE = {"held": "[green]held[/]", "not held": "[red]not held[/]", "inconclusive": "[yellow]inconclusive[/]"}


# ------------------------------------------------------------------------------------------ printing
def _console():
    from rich.console import Console

    # logs (not a terminal) get wide tables instead of rich's 80-column default
    return Console(highlight=False, width=None if sys.stdout.isatty() else 140)


def _e(text: Any) -> str:
    """Escape rich markup: `pip install 'icml26[usb]'` must print its [usb]."""
    from rich.markup import escape

    return escape(str(text))


def print_claims(result: Result) -> None:
    from rich.table import Table

    from icml26.report import format_ours, measured_only

    table = Table(title=f"{result.slug} ({result.scale}) - {result.runtime_s:.1f} s - gates: "
                        f"{_verdict_counts(result)}")
    for col in ("claim", "paper", "ours", "threshold", "verdict", "kind"):
        table.add_column(col, overflow="fold")
    for c in sorted(result.claims, key=lambda c: c.kind == "sanity"):  # sanity checks last, apart
        verdict = "measured" if measured_only(c) else _VERDICT_STYLE[c.verdict]
        table.add_row(_e(f"{c.id}: {c.statement}"), _e(c.paper or "-"), _e(format_ours(c)), _e(c.threshold),
                      verdict, c.kind)
    _console().print(table)
    for c in result.claims:
        if c.gate and c.verdict == "inconclusive":
            _console().print(_e(f"{c.id} inconclusive: {c.decision.hint or c.decision.text()}"))
    if result.scale == "smoke":
        _console().print("[dim]smoke checks plumbing only: its verdicts say nothing about the paper's claims[/]")


# ------------------------------------------------------------------------------------------ commands
def cmd_list(args) -> int:
    from rich.table import Table

    root = runs_root(args.out)
    table = Table(title="icml26 papers")
    table.add_column("slug", no_wrap=True, min_width=19)
    table.add_column("title", overflow="fold", ratio=3)
    table.add_column("arXiv", no_wrap=True, min_width=10)
    table.add_column("status", overflow="fold", ratio=2)
    for p in PAPERS.values():
        table.add_row(_e(p.slug), _e(p.title), _e(p.arxiv), _status_line(root, p))
    _console().print(table)
    return 0


def _status_line(root: Path, p: Paper) -> str:
    """The status cell of `icml26 list` (rich markup; every piece of text in it is escaped)."""
    if not p.is_implemented():
        return "not implemented"
    missing = p.missing_requirements()
    need = _e(f" [needs {p.install_hint()}]") if missing else ""
    scale, r, problem = read_status(root, p)
    if problem:
        return _e(f"{scale}: {problem}") + need
    if r is None:
        return "not run" + need
    label = "smoke only (plumbing)" if scale == "smoke" else scale
    stale = " (stale: code changed)" if is_stale(p, r) else ""
    return f"{_e(label)}: {_verdict_counts(r, colour=scale != 'smoke')}{stale}{need}"


def cmd_show(args) -> int:
    paper = _paper(args.slug)
    con = _console()
    con.print(f"[bold]{_e(paper.slug)}[/]: {_e(paper.title)}")
    con.print(_e(f"arXiv: {paper.arxiv} · package: {paper.module} · extra: {paper.extra or '-'} "
                 f"({paper.install_hint()})"))
    if not paper.is_implemented():
        con.print("not implemented yet")
        return 0
    missing = paper.missing_requirements()
    if missing:
        con.print(f"[yellow]{_e(f'missing optional packages: {chr(44).join(missing)}; {paper.install_hint()}')}[/]")
        return 0
    exp = _experiment(paper)
    help_ = getattr(exp, "CONFIG_HELP", {}) or {}
    expected = getattr(exp, "EXPECTED_RUNTIME_S", {}) or {}
    doc = (exp.__doc__ or "").strip().splitlines()
    if doc:
        con.print(_e(doc[0]))
    from rich.table import Table

    for scale, cfg in exp.CONFIGS.items():
        runtime = f" · expected runtime ~{expected[scale]:.0f} s on 2 CPU cores" if scale in expected else ""
        table = Table(title=f"{scale} config{runtime}", title_justify="left")
        table.add_column("key", no_wrap=True)
        table.add_column("value", overflow="fold")
        table.add_column("meaning", overflow="fold")
        for k, v in cfg.items():
            text = v if isinstance(v, str) else json.dumps(v, default=str)
            table.add_row(_e(k), _e(text if len(text) <= 400 else text[:397] + "..."), _e(help_.get(k, "")))
        con.print(table)
    root = runs_root(args.out)
    folders = sorted(d for d in (root / paper.slug).glob("*") if (d / "result.json").exists()) \
        if (root / paper.slug).is_dir() else []
    if not folders:
        con.print(_e(f"no saved results under {root / paper.slug}"))
    for d in folders:
        try:
            r = load_result(d)
        except (OSError, ValueError) as e:
            con.print(_e(f"{d}: unreadable: {_reason(e)}"))
            continue
        stale = " [yellow](stale: code changed)[/]" if is_stale(paper, r) else ""
        con.print(_e(f"{d}: {r.created}, {r.runtime_s:.0f} s, {_verdict_counts(r)}") + stale)
    return 0


def run_paper(slug: str, scale: str, seed: int | None, sets: list[str], out: str | None) -> Result:
    """Check everything, run one reproduction in this process, save it, print its claims; returns the Result."""
    from icml26 import provenance

    if scale not in SCALES:
        raise UserError(f"--scale must be one of {', '.join(SCALES)}, got '{scale}'")
    paper = _paper(slug)
    exp = _experiment(paper)
    config = resolve_config(exp, slug, scale, seed, sets)
    validate(exp, slug, config)
    overrides = config_overrides(exp, scale, config)
    root = runs_root(out)
    check_writable(root)
    where = f" with overrides {overrides}" if overrides else ""
    _console().print(f"[bold]{_e(slug)}[/] " + _e(f"({scale}){where}: {paper.title}"))
    t0 = time.perf_counter()
    result = exp.run(config)
    if not isinstance(result, Result):
        raise TypeError(f"{paper.experiment_module}.run must return a Result, got {type(result).__name__}")
    if not result.runtime_s:
        result.runtime_s = time.perf_counter() - t0
    result.config = config
    result.overrides = overrides
    result.provenance = {**provenance.collect(paper), **result.provenance}
    path = save_result(result, result_dir(root, slug, scale, overrides))
    print_claims(result)
    _console().print(_e(f"saved {path}"))
    return result


def cmd_run(args) -> int:
    run_paper(args.slug, args.scale, args.seed, args.set or [], args.out)
    return 0


def _plan(paper: Paper, scale: str, root: Path, force: bool) -> tuple[str, str, float | None]:
    """What `reproduce` does with one paper: ("run" | "reuse" | "skip", reason, expected seconds)."""
    if not paper.is_implemented():
        return "skip", "not implemented yet", None
    missing = paper.missing_requirements()
    if missing:
        return "skip", f"needs {', '.join(missing)}: {paper.install_hint()}", None
    try:
        exp = paper.load_experiment()
    except MissingExtraError as e:
        return "skip", str(e), None
    except Exception as e:  # noqa: BLE001 - a paper that cannot even be imported is reported, the rest go on
        return "skip", f"import failed: {type(e).__name__}: {e}", None
    try:
        config = resolve_config(exp, paper.slug, scale)
        validate(exp, paper.slug, config)
    except UserError as e:
        return "skip", str(e), None
    expected = (getattr(exp, "EXPECTED_RUNTIME_S", {}) or {}).get(scale)
    f = result_dir(root, paper.slug, scale) / "result.json"
    if not f.exists():
        return "run", "no saved result", expected
    try:
        old = load_result(f)
    except (OSError, ValueError) as e:
        return "run", f"saved result unreadable ({_reason(e)})", expected
    expected = old.runtime_s or expected
    if force:
        return "run", "--force", expected
    if old.config_hash != config_hash(config):
        return "run", "config changed", expected
    if is_stale(paper, old):
        return "run", f"stale: the code changed since {old.created}", expected
    return "reuse", f"saved {old.created}", expected


def _run_child(cmd: list[str]) -> int:
    """Run one paper in a child process; on Ctrl-C stop it (SIGINT, then SIGTERM, then SIGKILL) and re-raise."""
    child = subprocess.Popen(cmd)
    try:
        return child.wait()
    except KeyboardInterrupt:
        for sig, grace in ((None, 2.0), (signal.SIGINT, 4.0), (signal.SIGTERM, 3.0), (signal.SIGKILL, 2.0)):
            if sig is not None:
                child.send_signal(sig)
            try:
                child.wait(grace)
                break
            except subprocess.TimeoutExpired:
                continue
        raise


def cmd_reproduce(args) -> int:
    root = runs_root(args.out)
    if args.slugs:
        papers = [_paper(s) for s in args.slugs]
    else:
        papers = list(PAPERS.values())
    check_writable(root)
    con = _console()
    plans = [(p, *_plan(p, args.scale, root, args.force)) for p in papers]
    todo = [x for x in plans if x[1] == "run"]
    skipped = [x for x in plans if x[1] == "skip"]
    if args.slugs and any(x[2] == "not implemented yet" for x in skipped):
        names = [x[0].slug for x in skipped if x[2] == "not implemented yet"]
        raise UserError(f"not implemented yet: {', '.join(names)}; implemented: {', '.join(_implemented())}")
    if not todo and not any(x[1] == "reuse" for x in plans):
        reasons = "; ".join(f"{p.slug}: {why}" for p, _, why, _ in skipped[:5])
        raise UserError(f"no paper can be run: {reasons}")
    summary: list[tuple[str, str]] = []
    for p, action, why, _ in plans:
        if action == "reuse":
            con.print(f"[dim]{_e(f'{p.slug}: reusing saved result ({why})')}[/]")
            summary.append((p.slug, f"reused ({why})"))
    t_start = time.perf_counter()
    done_s: list[float] = []
    for k, (p, _, why, expected) in enumerate(todo, start=1):
        elapsed = time.perf_counter() - t_start
        left = [e for _, _, _, e in todo[k - 1:]]
        mean_done = sum(done_s) / len(done_s) if done_s else None
        est = sum(e if e is not None else (mean_done or 0.0) for e in left)
        est_txt = f"~{_fmt_s(est)}" if (mean_done is not None or all(e is not None for e in left)) else "unknown"
        con.print(f"[bold]paper {k}/{len(todo)}: {_e(p.slug)}[/] " + _e(f"({why}) · elapsed {_fmt_s(elapsed)} · "
                                                                      f"estimated remaining {est_txt}"))
        # each paper in its own process: a crash or a leak in one cannot take the others down
        cmd = [sys.executable, "-m", "icml26", "run", p.slug, "--scale", args.scale, "--out", str(root)]
        t0 = time.perf_counter()
        rc = _run_child(cmd)
        dt = time.perf_counter() - t0
        done_s.append(dt)
        if rc == 130:
            raise KeyboardInterrupt
        status = "ok" if rc == 0 else f"FAILED (exit {rc})"
        summary.append((p.slug, f"{status} in {dt:.0f} s"))
        if rc != 0:
            con.print(f"[red]{p.slug}: failed with exit {rc}; continuing with the rest[/]")
    for p, _, why, _ in skipped:
        summary.append((p.slug, f"not run: {why}"))
    con.print(f"\n[bold]reproduce summary[/] ({_fmt_s(time.perf_counter() - t_start)})")
    for slug, status in summary:
        con.print(_e(f"  {slug:20s} {status}"))
    from icml26.report import build_report

    md, html = build_report(root)
    con.print(_e(f"report: {md} and {html}"))
    failed = any(s.startswith("FAILED") for _, s in summary)
    cannot = any(s.startswith("not run") and "not implemented" not in s for _, s in summary)
    return 1 if failed or cannot else 0


def _fmt_s(s: float) -> str:
    s = max(0.0, s)
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


def cmd_report(args) -> int:
    from icml26.report import build_report, summary_markdown

    root = runs_root(args.out)
    if args.readme_table:
        print(summary_markdown(root))
        return 0
    if args.update_readme:
        from icml26.report import update_readme

        readme = Path(args.readme)
        if not readme.is_file():
            raise UserError(f"--readme {readme}: no such file")
        try:
            changed = update_readme(root, readme)
        except ValueError as e:
            raise UserError(str(e)) from None
        _console().print(_e(f"{'updated' if changed else 'unchanged'}: the papers table of {readme} from {root}"))
    md, html = build_report(root)
    _console().print(_e(f"wrote {md} and {html}"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="icml26", description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="version", version=f"icml26 {icml26.__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="table of the papers and the status of their saved results")
    p.add_argument("--out", help="runs folder (default: runs or $ICML26_RUNS)")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="one paper: each scale's config with the meaning of each key, extra, runtime, "
                                    "saved results")
    p.add_argument("slug")
    p.add_argument("--out", help="runs folder (default: runs or $ICML26_RUNS)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("run", help="run one reproduction")
    p.add_argument("slug")
    p.add_argument("--scale", default="small", help="smoke | small | medium | paper (default small)")
    p.add_argument("--seed", type=int, default=None, help="base seed (overrides the config's 'seed')")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config value (repeatable)")
    p.add_argument("--out", help="runs folder (default: runs or $ICML26_RUNS)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("reproduce", help="run several reproductions, then write the report")
    p.add_argument("slugs", nargs="*", help="papers to run (default: every paper; unimplemented ones are listed)")
    p.add_argument("--scale", default="small", choices=SCALES)
    p.add_argument("--force", action="store_true", help="re-run even when a fresh result for the same config exists")
    p.add_argument("--out", help="runs folder (default: runs or $ICML26_RUNS)")
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("report", help="build runs/report.html and runs/report.md from saved results")
    p.add_argument("--out", help="runs folder (default: runs or $ICML26_RUNS)")
    p.add_argument("--readme-table", action="store_true", help="print the summary table for the README")
    p.add_argument("--update-readme", action="store_true",
                   help="rewrite the README's papers table (between its markers) from the saved small results")
    p.add_argument("--readme", default="README.md", help="the README to update (default README.md)")
    p.set_defaults(func=cmd_report)
    return ap


def _sigterm_as_interrupt(signum, frame):  # pragma: no cover - exercised through subprocess tests
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    old = signal.getsignal(signal.SIGTERM)
    in_main_thread = True
    try:
        # SIGTERM (sent by `reproduce` to a child that ignores Ctrl-C) unwinds like Ctrl-C: workers are stopped
        signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    except ValueError:  # not the main thread (e.g. called from a test runner thread)
        in_main_thread = False
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
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, old)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
