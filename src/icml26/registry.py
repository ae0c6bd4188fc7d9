"""The papers icml26 implements: slug, title, arXiv id and the module holding each paper's code.

Nothing paper-specific beyond these facts lives here, and importing this module imports no paper package:
`icml26 list` stays fast and a missing optional extra only affects the paper that needs it.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import os
import re
from importlib import metadata
from pathlib import Path
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Paper:
    slug: str
    title: str
    arxiv: str  # arXiv id, or "n/a" where none was found
    extra: str | None = None  # the pip extra with this paper's third-party dependencies, if any
    package: str | None = None  # dotted path of the paper's package; default icml26.<slug>
    requires: tuple[str, ...] | None = None  # distributions the paper needs; default: icml26's [extra] metadata
    imports: str = ""  # the import line a user needs (the README shows it)

    @property
    def module(self) -> str:
        """Dotted path of the paper's package."""
        return self.package or f"icml26.{self.slug}"

    @property
    def experiment_module(self) -> str:
        return f"{self.module}.experiment"

    def experiment_file(self) -> Path | None:
        """The file of the paper's `experiment` module, found without importing the paper's package."""
        parts = self.experiment_module.split(".")
        try:
            spec = importlib.util.find_spec(parts[0])  # a top-level name: imports nothing
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        dirs = [Path(d) for d in spec.submodule_search_locations]
        for part in parts[1:-1]:
            dirs = [d / part for d in dirs if (d / part / "__init__.py").is_file()]
        for d in dirs:
            f = d / f"{parts[-1]}.py"
            if f.is_file():
                return f
        return None

    def is_implemented(self) -> bool:
        """True when the paper's package has an `experiment` module (decided from files; nothing is imported)."""
        return self.experiment_file() is not None

    def package_dir(self) -> Path | None:
        """Folder of the paper's package (None when not implemented)."""
        f = self.experiment_file()
        return f.parent if f is not None else None

    def extra_requirements(self) -> list[str]:
        """Distribution names declared in icml26's `[extra]` for this paper (from the installed metadata)."""
        if self.requires is not None:
            return list(self.requires)
        if not self.extra:
            return []
        try:
            reqs = metadata.requires("icml26") or []
        except metadata.PackageNotFoundError:  # running from a source tree that was never installed
            return []
        def norm(x: str) -> str:  # PEP 685: extras compare after this normalisation
            return re.sub(r"[-_.]+", "-", x).lower()

        out = []
        for r in reqs:
            name, _, marker = r.partition(";")
            extras = re.findall(r"""extra\s*==\s*["']([^"']+)["']""", marker)
            if norm(self.extra) in {norm(x) for x in extras}:
                dist = re.split(r"[\s<>=!~\[(]", name.strip(), maxsplit=1)[0]
                if dist and dist != "icml26":
                    out.append(dist)
        return out

    def missing_requirements(self) -> list[str]:
        """The extra's distributions that are not installed (checked by metadata, nothing is imported)."""
        missing = []
        for dist in self.extra_requirements():
            try:
                metadata.version(dist)
            except metadata.PackageNotFoundError:
                missing.append(dist)
        return missing

    def install_hint(self) -> str:
        return f"pip install 'icml26[{self.extra}]'" if self.extra else "pip install 'icml26[all]'"

    def load_experiment(self) -> ModuleType:
        """Import the paper's experiment module; a missing optional dependency names the extra to install.

        The extra's declared distributions are checked first, so a missing one is reported before any compute
        (and before a half-imported package fails somewhere deep).
        """
        if not self.is_implemented():
            raise NotImplementedError(f"paper '{self.slug}' is not implemented yet")
        missing = self.missing_requirements()
        if missing:
            raise MissingExtraError(self, missing)
        try:
            return importlib.import_module(self.experiment_module)
        except ModuleNotFoundError as e:
            if e.name and not e.name.startswith("icml26") and e.name != self.module.split(".")[0]:
                raise MissingExtraError(self, [e.name]) from e
            raise


class MissingExtraError(ModuleNotFoundError):
    """A paper's optional dependency is not installed; the message names the extra to install."""

    def __init__(self, paper: Paper, missing: list[str]) -> None:
        self.paper, self.missing = paper, list(missing)
        what = ", ".join(f"'{m}'" for m in missing)
        super().__init__(f"paper '{paper.slug}' needs the optional package{'s' if len(missing) > 1 else ''} "
                         f"{what}: {paper.install_hint()}", name=missing[0])


PAPERS: dict[str, Paper] = {
    p.slug: p
    for p in [
        Paper("gradpower", "GradPower: Powering Gradients for Faster Language Model Pre-Training", "2505.24275",
              "gradpower"),
        Paper("pope", "Decoupling the 'What' and 'Where' With Polar Coordinate Positional Embeddings",
              "2509.10534", "pope"),
        Paper("tie", "Scheduling LLM Inference with Uncertainty-Aware Output Length Predictions", "2604.00499",
              "tie"),
        Paper("cqacp", "Conditional Quantile Adjusted Conformal Prediction for Time Series", "n/a", "cqacp"),
        Paper("lsd", "Speculative Sampling For Faster Molecular Dynamics", "2606.02455", "lsd"),
        Paper("usb", "Beyond Continuity: Simulation-free Reconstruction of Discrete Branching Dynamics from "
              "Single-cell Snapshots", "2605.00545", "usb"),
        Paper("matching_bandits", "Adaptive Bandit Algorithms for Contextual Matching Markets", "2605.28290",
              "matching_bandits"),
        Paper("visioned", "VisionED: Electron-Density Images for Molecular Property Prediction", "n/a",
              "visioned"),
        Paper("active_attacks", "Active Attacks: Red-teaming LLMs via Adaptive Environments", "2509.21947",
              "active_attacks"),
        Paper("analogy", "Feature Resemblance: Towards a Theoretical Understanding of Analogical Reasoning in "
              "Transformers", "2603.05143", "analogy"),
        Paper("dataset_compression", "Unifying Dataset Pruning and Distillation for Efficient Large-scale "
              "Compression", "2502.06434", "dataset_compression"),
        Paper("lingua", "Bridging the Grounding Gap in VideoQA via Typed Memory for Language-based Belief-State "
              "Reasoning", "n/a", "lingua"),
        Paper("mepoi", "Mobility-Embedded POIs: Learning What A Place Is and How It Is Used from Human Movement",
              "2601.21149", "mepoi"),
        Paper("meshtok", "MeshTok: Efficient Multi-Scale Tokenization for Scalable PDE Transformers",
              "2606.04366", "meshtok"),
        Paper("murgat", "Multimodal Fact-Level Attribution for Verifiable Reasoning (MuRGAt)", "2602.11509",
              "murgat"),
        Paper("robust_u1", "Robust-U1: Can MLLMs Self-Recover Corrupted Visual Content for Robust "
              "Understanding?", "2606.08063", "robust_u1"),
        Paper("sparse_transfer", "Domain Transfer Becomes Identifiable via a Single Alignment", "2605.17918",
              "sparse_transfer"),
        Paper("ssdcn", "Spatial-Spectral Dual-Clustering Network for Hyperspectral Image Super-Resolution", "n/a",
              "ssdcn"),
        Paper("verbalization", "Do Activation Verbalization Methods Convey Privileged Information?", "2509.13316",
              "verbalization"),
    ]
}

# The import line of each paper's public API, shown in the README's papers table.
_IMPORTS = {
    "gradpower": "from icml26.gradpower import AdamWPower, GradPower",
    "pope": "from icml26.pope import PoPE, attention, patch_llama_attention",
    "tie": "from icml26.tie import LogTLengthPredictor, TIEQueue, ServingSimulator",
    "cqacp": "from icml26.cqacp import CQACPRegressor",
    "lsd": "from icml26.lsd import LangevinSpeculativeDynamics",
    "usb": "from icml26.usb import UnbalancedSchrodingerBridge",
    "matching_bandits": "from icml26.matching_bandits import AdaptiveCertifiedGS, ContextualMarket, simulate",
    "visioned": "from icml26.visioned import EDCalculator, render_multishot, VisionEDViT",
    "active_attacks": "from icml26.active_attacks import ActiveAttacks, GFlowNetRedTeamer",
    "analogy": "from icml26.analogy import AnalogyWorld, TwoHopWorld, FactorizedTransformer, CurriculumTrainer",
    "dataset_compression": "from icml26.dataset_compression import PCACompressor, ScoreSelector, evaluate",
    "lingua": "from icml26.lingua import LinguaAgent",
    "mepoi": "from icml26.mepoi import MEPOITrainer, VisitTable, POITable, EmbedProbe",
    "meshtok": "from icml26.meshtok import MeshTok, MultiScaleTokenizer",
    "murgat": "from icml26.murgat import parse_citations, MurgatEvaluator, LLMJudge",
    "robust_u1": "from icml26.robust_u1 import RobustU1, corrupt, ssim, GRPORestorationTrainer",
    "sparse_transfer": "from icml26.sparse_transfer import AnchoredSparseTransfer, JacobianSparsityPenalty",
    "ssdcn": "from icml26.ssdcn import SSDCN, SSDCB, FRRB, PyramidJointLoss",
    "verbalization": "from icml26.verbalization import PatchscopesVerbalizer, LITVerbalizer, ZeroShotBaseline, read_activations",
}
for _slug, _line in _IMPORTS.items():
    PAPERS[_slug] = dataclasses.replace(PAPERS[_slug], imports=_line)


def _register_extra_papers() -> None:
    """Papers outside this package (your own reproductions, or test fixtures) can join the CLI and the report:
    set `ICML26_EXTRA_PAPERS` to a JSON list of {"slug", "title", "arxiv", "package"} objects (optionally
    "extra" and "requires", a list of distribution names checked before import), where `package` is an
    importable package with an `experiment` module following the icml26 contract."""
    raw = os.environ.get("ICML26_EXTRA_PAPERS")
    if not raw:
        return
    try:
        entries = json.loads(raw)
        for e in entries:
            req = e.get("requires")
            PAPERS[e["slug"]] = Paper(e["slug"], e.get("title", e["slug"]), e.get("arxiv", "n/a"),
                                      e.get("extra"), e["package"], tuple(req) if req is not None else None)
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"ICML26_EXTRA_PAPERS must be a JSON list of objects with 'slug' and 'package': {err}") \
            from None


_register_extra_papers()


def get_paper(slug: str) -> Paper:
    """Look a paper up by slug; raises `KeyError` with the list of known slugs."""
    try:
        return PAPERS[slug]
    except KeyError:
        raise KeyError(f"unknown paper '{slug}'; known: {', '.join(sorted(PAPERS))}") from None
