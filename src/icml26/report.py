"""Build `runs/report.md` and a self-contained `runs/report.html` (figures embedded) from saved results only.

Every paper of the registry appears, with its status (not implemented, not run, smoke only, small, paper,
unreadable). Each claim is shown as paper | ours | threshold | verdict, with mean +- std over seeds where the claim
has them. Smoke results are bannered as plumbing checks and their verdicts greyed; runs with `--seed`/`--set`
overrides are marked as such; a result made by code that has changed since is marked stale.
"""

from __future__ import annotations

import base64
import html
import json
import platform
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from icml26.registry import PAPERS, Paper
from icml26.results import SCALES, Claim, Result, atomic_write_bytes, load_result

SCALE_ORDER = ("small", "paper", "smoke")


@dataclass
class Entry:
    """One saved result folder: `<root>/<slug>/<scale>[+<overrides>]`."""

    slug: str
    scale: str
    folder: Path
    result: Result | None
    problem: str = ""  # "unreadable: reason" when the file cannot be loaded
    stale: bool = False

    @property
    def is_override(self) -> bool:
        return "+" in self.folder.name

    @property
    def anchor(self) -> str:
        return f"{self.slug}-{self.folder.name}".replace("+", "-").replace("=", "-").replace(",", "-")


def _reason(e: Exception) -> str:
    if isinstance(e, json.JSONDecodeError):
        return f"not valid JSON ({e.msg} at line {e.lineno})"
    return str(e).splitlines()[0][:160] if str(e) else type(e).__name__


def _folder_scale(name: str) -> str | None:
    base = name.split("+", 1)[0]
    return base if base in SCALES else None


def collect_entries(root: str | Path) -> dict[str, list[Entry]]:
    """Saved results per slug (registry order, then unknown slugs): canonical scales first, then overrides."""
    root = Path(root)
    slugs = list(PAPERS)
    if root.is_dir():
        slugs += sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in PAPERS)
    out: dict[str, list[Entry]] = {}
    for slug in slugs:
        d = root / slug
        if not d.is_dir():
            continue
        folders = [f for f in d.iterdir() if f.is_dir() and _folder_scale(f.name) and (f / "result.json").exists()]
        folders.sort(key=lambda f: (f.name != _folder_scale(f.name), SCALE_ORDER.index(_folder_scale(f.name)),
                                    f.name))
        entries = []
        for f in folders:
            try:
                r = load_result(f)
                e = Entry(slug, _folder_scale(f.name), f, r)
                if slug in PAPERS and PAPERS[slug].is_implemented():
                    from icml26.provenance import is_stale

                    e.stale = is_stale(PAPERS[slug], r)
            except (OSError, ValueError) as err:
                e = Entry(slug, _folder_scale(f.name), f, None, f"unreadable: {_reason(err)}")
            entries.append(e)
        if entries:
            out[slug] = entries
    return out


def collect_results(root: str | Path) -> list[tuple[Path, Result]]:
    """Every readable canonical result, papers in registry order, scales small/paper/smoke."""
    return [(e.folder, e.result) for es in collect_entries(root).values() for e in es
            if e.result is not None and not e.is_override]


def paper_status(paper: Paper | None, entries: list[Entry]) -> str:
    """not implemented / not run / smoke only / small / paper / unreadable, from the canonical results."""
    canon = {e.scale: e for e in entries if not e.is_override}
    if paper is not None and not paper.is_implemented() and not canon:
        return "not implemented"
    for scale in ("small", "paper"):
        if scale in canon:
            e = canon[scale]
            return e.problem and f"{scale}: {e.problem}" or (scale + (" (stale)" if e.stale else ""))
    if "smoke" in canon:
        e = canon["smoke"]
        return f"smoke: {e.problem}" if e.problem else "smoke only (plumbing)"
    return "not run"


def format_measured(v, top: bool = True) -> str:
    """Measured values for a table cell: 4 significant digits; nested mappings in braces."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, dict):
        if top:
            return "; ".join(f"{k}={format_measured(x, False)}" for k, x in v.items())
        return "{" + ", ".join(f"{k}: {format_measured(x, False)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(format_measured(x, False) for x in v) + "]"
    return str(v)


def format_ours(c: Claim) -> str:
    """Our measurement: mean +- std (n seeds) first where the claim has seeds, then the measured values."""
    text = format_measured(c.measured)
    s = c.seed_summary
    if s is not None:
        mean, std, n = s
        text = f"{mean:.4g} ± {std:.2g} over {n} seed{'s' if n > 1 else ''}; " + text
    return text


def _title(slug: str) -> tuple[str, str]:
    p = PAPERS.get(slug)
    return (p.title, p.arxiv) if p is not None else (slug, "n/a")


def measured_only(c: Claim) -> bool:
    """A report-only claim whose threshold is just "report only": a number to read, shown as 'measured' and not
    counted as held or not held."""
    return not c.gate and c.threshold.strip().lower().rstrip(".") in ("report only", "report-only")


def verdict_text(c: Claim) -> str:
    return "measured" if measured_only(c) else c.verdict


def _counts(r: Result) -> tuple[int, int, int, int]:
    g = [c for c in r.claims if c.gate]
    rep = [c for c in r.claims if not c.gate and not measured_only(c)]
    return sum(c.held for c in g), len(g), sum(c.held for c in rep), len(rep)


def _main_entry(entries: list[Entry]) -> Entry | None:
    canon = [e for e in entries if not e.is_override]
    return canon[0] if canon else None


def summary_rows(root: str | Path) -> list[dict[str, str]]:
    """One row per registry paper (and any unknown slug with results): status, verdict counts, runtime."""
    entries = collect_entries(root)
    rows = []
    for slug in list(PAPERS) + [s for s in entries if s not in PAPERS]:
        es = entries.get(slug, [])
        main = _main_entry(es)
        row = {"slug": slug, "status": paper_status(PAPERS.get(slug), es), "gates": "", "reported": "",
               "runtime": ""}
        if main is not None and main.result is not None:
            gh, gn, rh, rn = _counts(main.result)
            row.update(gates=f"{gh}/{gn}", reported=f"{rh}/{rn}", runtime=f"{main.result.runtime_s:.0f} s")
        rows.append(row)
    return rows


def summary_markdown(root: str | Path) -> str:
    """The summary table: every paper with its status, gating and reported claims held, runtime."""
    lines = ["| paper | status | gating claims held | reported claims held | runtime |", "|---|---|---|---|---|"]
    for r in summary_rows(root):
        lines.append(f"| {r['slug']} | {r['status']} | {r['gates'] or '-'} | {r['reported'] or '-'} | "
                     f"{r['runtime'] or '-'} |")
    return "\n".join(lines)


def report_header() -> dict[str, str]:
    """Commit, date and machine of the report itself."""
    from icml26.provenance import cpu_model, git_info, package_version

    g = git_info()
    commit = (g["commit"][:12] + (" (dirty)" if g.get("dirty") else "")) if g else "not a git checkout"
    import os

    return {"commit": commit, "icml26": package_version(),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": f"{cpu_model()}, {os.cpu_count()} cores, {platform.platform()}"}


def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _run_line(e: Entry) -> str:
    r = e.result
    prov = r.provenance
    commit = prov.get("commit", "")
    bits = [f"runtime {r.runtime_s:.1f} s", f"run {r.created}", f"config hash {r.config_hash}"]
    if commit:
        bits.append(f"commit {commit[:12]}{' (dirty)' if prov.get('dirty') else ''}")
    cpu = (prov.get("machine") or {}).get("cpu")
    if cpu:
        bits.append(cpu)
    return " · ".join(bits)


def _banners(e: Entry) -> list[str]:
    out = []
    if e.scale == "smoke":
        out.append("Smoke run: checks the plumbing only, at a size where the claims cannot be decided; its "
                   "verdicts say nothing about the paper.")
    if e.is_override:
        out.append(f"Run with overrides {json.dumps(e.result.overrides)}: not the canonical configuration.")
    if e.stale:
        out.append("Stale: the paper's code differs from the code that made this result (or the result records no code "
                   "hash); `icml26 reproduce` re-runs it.")
    return out


def build_markdown(root: Path, entries: dict[str, list[Entry]], header: dict[str, str]) -> str:
    out = ["# icml26 reproduction report", "",
           f"commit {header['commit']} · icml26 {header['icml26']} · {header['date']} · {header['machine']}", "",
           "Each paper's headline claims, re-measured at CPU scale, beside the paper's own figure. Verdicts are "
           "computed from the measured values of the saved run; 'report' claims are shown but do not gate.", ""]
    if not entries:
        out += [f"No saved results under `{root}` yet: run `icml26 reproduce` (or `icml26 run SLUG`).", ""]
    out += [summary_markdown(root), ""]
    for slug, es in entries.items():
        title, arxiv = _title(slug)
        for e in es:
            out += [f"## {slug} ({e.folder.name}): {title}", ""]
            if e.result is None:
                out += [f"**{e.problem}** (`{e.folder / 'result.json'}`)", ""]
                continue
            r = e.result
            link = f"arXiv: [{arxiv}](https://arxiv.org/abs/{arxiv}) · " if arxiv != "n/a" else ""
            out += [link + _run_line(e), ""]
            out += [f"> {b}" for b in _banners(e)] + ([""] if _banners(e) else [])
            out += ["| claim | statement | paper | ours | threshold | verdict | gate |",
                    "|---|---|---|---|---|---|---|"]
            for c in r.claims:
                verdict = verdict_text(c) if e.scale == "smoke" or measured_only(c) else f"**{c.verdict}**"
                out.append(f"| {c.id} | {_md_cell(c.statement)} | {_md_cell(c.paper or '-')} | "
                           f"{_md_cell(format_ours(c))} | {_md_cell(c.threshold)} | {verdict} | "
                           f"{'gate' if c.gate else 'report'} |")
            details = [c for c in r.claims if c.details]
            if details:
                out.append("")
                out += [f"- {c.id}: {c.details}" for c in details]
            if r.notes:
                out += ["", r.notes]
            for fig in r.figures:
                rel = (e.folder / fig).relative_to(root)
                cap = r.figure_captions.get(fig, fig)
                out += ["", f"![{cap}]({rel.as_posix()})", f"*{cap}*"]
            out += ["", "<details><summary>config, provenance and versions</summary>", "", "```json",
                    json.dumps({"config": r.config, "provenance": r.provenance, "versions": r.versions}, indent=2,
                               default=str), "```", "", "</details>", ""]
    return "\n".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
table{border-collapse:collapse;margin:.8em 0;width:100%}th,td{border:1px solid #ccc;padding:.35em .6em;
vertical-align:top;text-align:left;font-size:.92em}th{background:#f3f3f3}
.held{color:#137333;font-weight:600}.nothold{color:#b3261e;font-weight:600}.muted{color:#666;font-size:.9em}
.grey{color:#888;font-weight:400}
.banner{background:#fff7e0;border-left:4px solid #e0a800;padding:.5em .8em;margin:.6em 0}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}pre{background:#f7f7f7;padding:.6em;overflow-x:auto;
font-size:.85em}section{border-top:2px solid #ddd;margin-top:2em}figcaption{color:#444;font-size:.9em}
.notes table{width:auto}
"""


def render_markdown(text: str) -> str:
    """Markdown (tables included) to HTML for a result's notes; raw HTML in the notes is escaped."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def build_html(root: Path, entries: dict[str, list[Entry]], header: dict[str, str]) -> str:
    e_ = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>icml26 report</title>",
             f"<style>{_CSS}</style></head><body><h1>icml26 reproduction report</h1>",
             f"<p class='muted' id='header'>commit {e_(header['commit'])} · icml26 {e_(header['icml26'])} · "
             f"{e_(header['date'])} · {e_(header['machine'])}</p>",
             "<p>Each paper's headline claims, re-measured at CPU scale, beside the paper's own figure. Verdicts are "
             "computed from the measured values of the saved run; <em>report</em> claims are shown but do not "
             "gate.</p>"]
    if not entries:
        parts.append(f"<p class='banner'>No saved results under <code>{e_(str(root))}</code> yet: run "
                     "<code>icml26 reproduce</code> (or <code>icml26 run SLUG</code>).</p>")
    parts.append("<table id='summary'><tr><th>paper</th><th>status</th><th>gating claims held</th>"
                 "<th>reported claims held</th><th>runtime</th></tr>")
    for row in summary_rows(root):
        es = entries.get(row["slug"], [])
        main = _main_entry(es)
        name = e_(row["slug"])
        if main is not None:
            name = f"<a href='#{e_(main.anchor)}'>{name}</a>"
        cls = ""
        if main is not None and main.result is not None and main.scale != "smoke":
            gh, gn, _, _ = _counts(main.result)
            cls = " class='held'" if gh == gn else " class='nothold'"
        parts.append(f"<tr><td>{name}</td><td>{e_(row['status'])}</td><td{cls}>{e_(row['gates'] or '-')}</td>"
                     f"<td>{e_(row['reported'] or '-')}</td><td>{e_(row['runtime'] or '-')}</td></tr>")
    parts.append("</table>")
    for slug, es in entries.items():
        title, arxiv = _title(slug)
        for en in es:
            parts.append(f"<section id='{e_(en.anchor)}' data-scale='{e_(en.scale)}'>"
                         f"<h2>{e_(slug)} ({e_(en.folder.name)})</h2>")
            if en.result is None:
                parts.append(f"<p class='banner'>{e_(en.problem)}</p></section>")
                continue
            r = en.result
            link = f" · <a href='https://arxiv.org/abs/{e_(arxiv)}'>arXiv {e_(arxiv)}</a>" if arxiv != "n/a" else ""
            parts.append(f"<p>{e_(title)}{link}<br><span class='muted'>{e_(_run_line(en))}</span></p>")
            parts += [f"<p class='banner'>{e_(b)}</p>" for b in _banners(en)]
            parts.append("<table class='claims'><tr><th>claim</th><th>statement</th><th>paper</th><th>ours</th>"
                         "<th>threshold</th><th>verdict</th><th>gate</th></tr>")
            for c in r.claims:
                cls = "grey" if en.scale == "smoke" or measured_only(c) else ("held" if c.held else "nothold")
                det = f"<br><span class='muted'>{e_(c.details)}</span>" if c.details else ""
                parts.append(f"<tr><td>{e_(c.id)}</td><td>{e_(c.statement)}{det}</td><td>{e_(c.paper or '-')}</td>"
                             f"<td>{e_(format_ours(c))}</td><td>{e_(c.threshold)}</td>"
                             f"<td class='verdict {cls}'>{e_(verdict_text(c))}</td>"
                             f"<td>{'gate' if c.gate else 'report'}</td></tr>")
            parts.append("</table>")
            if r.notes:
                parts.append(f"<div class='notes'>{render_markdown(r.notes)}</div>")
            for fig in r.figures:
                f = en.folder / fig
                if f.exists():
                    b64 = base64.b64encode(f.read_bytes()).decode()
                    cap = r.figure_captions.get(fig, fig)
                    parts.append(f"<figure><img alt='{e_(cap)}' src='data:image/png;base64,{b64}'>"
                                 f"<figcaption>{e_(cap)} <span class='muted'>({e_(fig)})</span></figcaption></figure>")
            blob = json.dumps({"config": r.config, "metrics": r.metrics, "provenance": r.provenance,
                               "versions": r.versions}, indent=2, default=str)
            parts.append(f"<details><summary>config, metrics, provenance, versions</summary><pre>{e_(blob)}</pre>"
                         "</details></section>")
    parts.append("</body></html>")
    return "\n".join(parts)


def build_report(root: str | Path = "runs") -> tuple[Path, Path]:
    """Write `<root>/report.md` and `<root>/report.html`; returns their paths."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    entries = collect_entries(root)
    header = report_header()
    md, htm = root / "report.md", root / "report.html"
    atomic_write_bytes(md, build_markdown(root, entries, header).encode())
    atomic_write_bytes(htm, build_html(root, entries, header).encode())
    return md, htm
