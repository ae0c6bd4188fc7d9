"""Build `runs/report.md` and a self-contained `runs/report.html` (figures embedded) from saved results only."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from icml26.registry import PAPERS
from icml26.results import Result, atomic_write_bytes, load_result

SCALE_ORDER = ("small", "paper", "smoke")


def collect_results(root: str | Path) -> list[tuple[Path, Result]]:
    """Every readable `<root>/<slug>/<scale>/result.json`, papers in registry order, scales small/paper/smoke."""
    root = Path(root)
    found: list[tuple[Path, Result]] = []
    slugs = list(PAPERS) + sorted(p.name for p in root.glob("*") if p.is_dir() and p.name not in PAPERS)
    for slug in slugs:
        for scale in SCALE_ORDER:
            f = root / slug / scale / "result.json"
            if f.exists():
                try:
                    found.append((f.parent, load_result(f)))
                except (OSError, ValueError, TypeError, json.JSONDecodeError):
                    continue
    return found


def format_measured(v, top: bool = True) -> str:
    """Measured values for a table cell: 4 significant digits; nested mappings in braces."""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, dict):
        if top:
            return "; ".join(f"{k}={format_measured(x, False)}" for k, x in v.items())
        return "{" + ", ".join(f"{k}: {format_measured(x, False)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(format_measured(x, False) for x in v) + "]"
    return str(v)


def _title(slug: str) -> tuple[str, str]:
    p = PAPERS.get(slug)
    if p is None:
        return slug, "n/a"
    return p.title, p.arxiv


def summary_markdown(root: str | Path) -> str:
    """One row per paper with a saved result: gating claims held, reported claims held, runtime."""
    rows = ["| paper | scale | gating claims held | reported claims held | runtime |",
            "|---|---|---|---|---|"]
    seen = set()
    for _, r in collect_results(root):
        if r.slug in seen:
            continue
        seen.add(r.slug)
        gates = [c for c in r.claims if c.gate]
        rep = [c for c in r.claims if not c.gate]
        rows.append(f"| {r.slug} | {r.scale} | {sum(c.held for c in gates)}/{len(gates)} | "
                    f"{sum(c.held for c in rep)}/{len(rep)} | {r.runtime_s:.0f} s |")
    return "\n".join(rows)


def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def build_markdown(root: Path, results: list[tuple[Path, Result]]) -> str:
    out = ["# icml26 reproduction report", "",
           "Each paper's headline claims, re-measured at CPU scale. Verdicts are computed from the measured "
           "values of the saved run; 'report' claims are shown but do not gate.", "", summary_markdown(root), ""]
    for rdir, r in results:
        title, arxiv = _title(r.slug)
        out += [f"## {r.slug} ({r.scale}): {title}", ""]
        if arxiv != "n/a":
            out.append(f"arXiv: [{arxiv}](https://arxiv.org/abs/{arxiv}) · ")
        out += [f"runtime {r.runtime_s:.1f} s · run {r.created} · config hash `{r.config_hash}`", "",
                "| claim | paper's statement | measured | threshold | verdict | gate |", "|---|---|---|---|---|---|"]
        for c in r.claims:
            out.append(f"| {c.id} | {_md_cell(c.statement)} | {_md_cell(format_measured(c.measured))} | "
                       f"{_md_cell(c.threshold)} | **{c.verdict}** | {'gate' if c.gate else 'report'} |")
        details = [c for c in r.claims if c.details]
        if details:
            out.append("")
            out += [f"- {c.id}: {c.details}" for c in details]
        if r.notes:
            out += ["", r.notes]
        for fig in r.figures:
            rel = (rdir / fig).relative_to(root)
            out += ["", f"![{fig}]({rel.as_posix()})"]
        out += ["", "<details><summary>config and versions</summary>", "", "```json",
                json.dumps({"config": r.config, "versions": r.versions}, indent=2, default=str), "```",
                "", "</details>", ""]
    return "\n".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
table{border-collapse:collapse;margin:.8em 0;width:100%}th,td{border:1px solid #ccc;padding:.35em .6em;
vertical-align:top;text-align:left;font-size:.92em}th{background:#f3f3f3}
.held{color:#137333;font-weight:600}.nothold{color:#b3261e;font-weight:600}.muted{color:#666;font-size:.9em}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}pre{background:#f7f7f7;padding:.6em;overflow-x:auto;
font-size:.85em}section{border-top:2px solid #ddd;margin-top:2em}
"""


def build_html(root: Path, results: list[tuple[Path, Result]]) -> str:
    e = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>icml26 report</title>",
             f"<style>{_CSS}</style></head><body><h1>icml26 reproduction report</h1>",
             "<p>Each paper's headline claims, re-measured at CPU scale. Verdicts are computed from the measured "
             "values of the saved run; <em>report</em> claims are shown but do not gate.</p>",
             "<table><tr><th>paper</th><th>scale</th><th>gating claims held</th><th>reported claims held</th>"
             "<th>runtime</th></tr>"]
    seen = set()
    for _, r in results:
        if r.slug in seen:
            continue
        seen.add(r.slug)
        g = [c for c in r.claims if c.gate]
        rep = [c for c in r.claims if not c.gate]
        cls = "held" if all(c.held for c in g) else "nothold"
        parts.append(f"<tr><td><a href='#{e(r.slug)}-{e(r.scale)}'>{e(r.slug)}</a></td><td>{e(r.scale)}</td>"
                     f"<td class='{cls}'>{sum(c.held for c in g)}/{len(g)}</td>"
                     f"<td>{sum(c.held for c in rep)}/{len(rep)}</td><td>{r.runtime_s:.0f} s</td></tr>")
    parts.append("</table>")
    for rdir, r in results:
        title, arxiv = _title(r.slug)
        link = f" · <a href='https://arxiv.org/abs/{e(arxiv)}'>arXiv {e(arxiv)}</a>" if arxiv != "n/a" else ""
        parts += [f"<section id='{e(r.slug)}-{e(r.scale)}'><h2>{e(r.slug)} ({e(r.scale)})</h2>",
                  f"<p>{e(title)}{link}<br><span class='muted'>runtime {r.runtime_s:.1f} s · run {e(r.created)}"
                  f" · config hash {e(r.config_hash)}</span></p>",
                  "<table><tr><th>claim</th><th>paper's statement</th><th>measured</th><th>threshold</th>"
                  "<th>verdict</th><th>gate</th></tr>"]
        for c in r.claims:
            cls = "held" if c.held else "nothold"
            det = f"<br><span class='muted'>{e(c.details)}</span>" if c.details else ""
            parts.append(f"<tr><td>{e(c.id)}</td><td>{e(c.statement)}{det}</td><td>{e(format_measured(c.measured))}</td>"
                         f"<td>{e(c.threshold)}</td><td class='{cls}'>{e(c.verdict)}</td>"
                         f"<td>{'gate' if c.gate else 'report'}</td></tr>")
        parts.append("</table>")
        if r.notes:
            parts.append(f"<p>{e(r.notes)}</p>")
        for fig in r.figures:
            f = rdir / fig
            if f.exists():
                b64 = base64.b64encode(f.read_bytes()).decode()
                parts.append(f"<figure><img alt='{e(fig)}' src='data:image/png;base64,{b64}'>"
                             f"<figcaption class='muted'>{e(fig)}</figcaption></figure>")
        blob = json.dumps({"config": r.config, "metrics": r.metrics, "versions": r.versions}, indent=2,
                          default=str)
        parts.append(f"<details><summary>config, metrics, versions</summary><pre>{e(blob)}</pre></details>"
                     "</section>")
    parts.append("</body></html>")
    return "\n".join(parts)


def build_report(root: str | Path = "runs") -> tuple[Path, Path]:
    """Write `<root>/report.md` and `<root>/report.html`; returns their paths."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    results = collect_results(root)
    md, htm = root / "report.md", root / "report.html"
    atomic_write_bytes(md, build_markdown(root, results).encode())
    atomic_write_bytes(htm, build_html(root, results).encode())
    return md, htm
