"""The fault-test audit: confident targeted failing tests from a generator's feature space, beside
pixel-space PGD tests from the same seeds.

``python examine.py audit=fault_tests target=<classifier.pt> generator=<generator.pt>
audit.source_class=... audit.target_class=...``

Writes ``fault_tests.json`` (success rate, steps, time per test, pixel distances per kind),
``tests.pt`` (seeds and tests), galleries of seed -> test pairs, L2 / Linf distance histograms
(the paper's Fig. 2), ``report.md``, and logs them to W&B. ``audit.transfer_targets`` re-scores
the tests on other classifiers (e.g. a PGD-trained one: the paper's RQ3).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from advaudit.audits.common import load_audit_target
from advaudit.audits.lifecycle import RunDir
from advaudit.config import typed
from advaudit.audits.settings import FaultBudget, FaultTestsAuditConf
from advaudit.confutil import plain
from advaudit.core.plots import image_grid, plt, save_figure
from advaudit.core.records import write_json
from advaudit.data.split import class_index
from advaudit.errors import require
from advaudit.faults.features import feature_shift
from advaudit.faults.foolbox_pgd import foolbox_pixel_tests
from advaudit.faults.search import FaultResult, generator_tests, pixel_distances, pixel_tests
from advaudit.faults.seeds import sample_seeds
from advaudit.models import load_target
from advaudit.models.targets.classes import align_target
from advaudit.models.generators.generator import load_generator
from advaudit.models.generators.generator_training import require_gate_passed
from advaudit.models.targets.tracking import open_wandb
from advaudit.core.intervals import mean_with_ci

log = logging.getLogger(__name__)

# the pixel baseline: foolbox 3's PGD with the margin loss, or advaudit's PGD that stops each image at success
PIXEL_ENGINES = {"foolbox": foolbox_pixel_tests, "advaudit": pixel_tests}


# audit keys that only steer what is reported from the tests (re-scored from the saved tests by a rerun)
REPORT_KEYS = ("transfer_targets", "fault_feature")
SECTIONS = FaultTestsAuditConf.card.sections  # the config sections besides the audit that change its results


@dataclass
class FaultSetup:
    """What the tests are searched with: the target and the generator (on the target's device), the generator's
    ``meta`` and ``classes``, and each direction ``(summary prefix, seed class, target class, feature sign)``."""

    audit: FaultTestsAuditConf
    target: Any
    generator: Any
    meta: dict[str, Any]
    classes: list[str]
    source: int
    destination: int | None
    directions: list[tuple[str, int, int | None, float]]


@dataclass
class Seeds:
    """The seeds of every direction in one batch: latents ``z`` ``[S, L]``, classes ``y0`` ``[S]``, images
    ``images`` ``[S, C, H, W]`` and the target classes ``y1`` ``[S]`` (None: untargeted)."""

    z: torch.Tensor
    y0: torch.Tensor
    images: torch.Tensor
    y1: torch.Tensor | None


def run(cfg: DictConfig) -> dict[str, Any]:
    """Search ``cfg.target``'s fault tests with ``cfg.generator`` and the pixel baselines; returns the summary."""
    audit = typed(FaultTestsAuditConf, cfg.audit)
    run_dir = RunDir(Path(cfg.paths.output_dir), cfg, SECTIONS, REPORT_KEYS)
    out = run_dir.out
    setup = _set_up(cfg, audit)
    target, device = setup.target, setup.target.device
    judge = None
    if audit.judge:
        judge = align_target(load_target(audit.judge, device=str(device)).eval(), setup.classes,
                             "the generator's classes (as the judge audit.judge sees them)")
    seeds = _draw_seeds(setup, int(cfg.seed))
    kinds = _search(run_dir, setup, seeds)
    summary: dict[str, Any] = {"faults/n_seeds": audit.n_seeds, "faults/source": target.class_names[setup.source],
                               "faults/target": (None if setup.destination is None
                                                 else target.class_names[setup.destination]),
                               "faults/budget": audit.budget.value, "faults/pixel_engine": audit.pixel_engine.value,
                               "faults/eps": audit.eps, "faults/k": audit.k,
                               "faults/both_directions": audit.both_directions,
                               # the generator's quality gate as recorded at training (None: not gated)
                               "faults/generator_class_agreement": (setup.meta.get("quality") or {}).get(
                                   "class_agreement"),
                               "faults/generator_gate": (setup.meta.get("quality") or {}).get("gate")}
    # reporting runs on the CPU: seeds, labels and tests come back once, after the search
    images, y0 = seeds.images.cpu(), seeds.y0.cpu()
    kinds = {kind: result.cpu() for kind, result in kinds.items()}
    others = {Path(str(path)).parent.parent.name: align_target(
        load_target(str(path), device=str(device)).eval(), setup.classes,
        f"the generator's classes (as the transfer target {path} sees them)") for path in audit.transfer_targets}
    views, distances, titles = _measure(summary, setup, images, y0, kinds, judge, others)
    torch.save({"seeds": images, "y0": y0, "z": seeds.z.cpu(), **{f"{k}_tests": r.tests for k, r in kinds.items()},
                **{f"{k}_success": r.success for k, r in kinds.items()}}, out / "tests.pt")
    with open_wandb(cfg, job_type="examine", name="fault_tests") as wandb_run:
        plots = _plots(out, views, distances, titles)
        write_json(out / "fault_tests.json", summary)
        _write_report(out / "report.md", summary, list(views), plots)
        wandb_run.log(summary)
        for key, path in plots.items():
            wandb_run.log_image(key, path)
    return summary


def _set_up(cfg: DictConfig, audit: FaultTestsAuditConf) -> FaultSetup:
    """Load the target and the generator, pair their classes by name and check the directions asked for."""
    target = load_audit_target(cfg).eval()
    require(hasattr(target, "net"), "fault tests need a torch target (gradients through the model)")
    require(cfg.get("generator") is not None, "no generator given; add generator=<path/to/generator.pt> "
            "(train one with train.py model=generator dataset=<the target's dataset>)")
    device = target.device  # generator, seeds, judge and transfer targets join the target there
    generator, meta = load_generator(str(cfg.generator), map_location=str(device))
    require_gate_passed(meta, str(cfg.generator))
    classes = list(meta["class_names"])  # the generator's labels: every model here is paired with them by name
    align_target(target, classes, "the generator's classes")
    require(list(meta["image_shape"]) == list(target.input_shape), f"the generator makes images of shape "
            f"{meta['image_shape']}, the target takes {list(target.input_shape)}")
    source = class_index(audit.source_class, target.class_names)
    destination = None if audit.target_class is None else class_index(audit.target_class, target.class_names)
    require(destination != source, f"source and target class are both {target.class_names[source]!r}; pick a "
            "different audit.target_class (or null for untargeted tests)")
    both = audit.both_directions
    require(not both or destination is not None, "audit.both_directions=true needs audit.target_class (the "
            "reverse direction tests target_class seeds towards source_class); set one or turn it off")
    for p in generator.parameters():
        p.requires_grad_(False)
    # each direction: (prefix in the summary, seed class, target class, sign of the fault's direction);
    # its seeds are rows [i n, (i + 1) n) of the one batch that both directions walk together
    directions = [("", source, destination, 1.0)] + [("reverse/", destination, source, -1.0)] * both
    return FaultSetup(audit, target, generator, meta, classes, source, destination, directions)


def _draw_seeds(setup: FaultSetup, seed: int) -> Seeds:
    """``audit.n_seeds`` seeds per direction that the target classifies as the direction's seed class."""
    n, device = setup.audit.n_seeds, setup.target.device
    drawn = [sample_seeds(setup.generator, setup.target, y, n, seed=seed + i)
             for i, (_, y, _, _) in enumerate(setup.directions)]
    y1 = None if setup.destination is None else torch.cat([
        torch.full((n,), to, dtype=torch.long, device=device) for _, _, to, _ in setup.directions])
    return Seeds(torch.cat([d[0] for d in drawn]), torch.cat([d[1] for d in drawn]), torch.cat([d[2] for d in drawn]),
                 y1)


def _search(run_dir: RunDir, setup: FaultSetup, seeds: Seeds) -> dict[str, FaultResult]:
    """The generator tests and each pixel baseline's tests of every seed, ``audit.chunk`` seeds a unit."""
    audit, model, y0, y1 = setup.audit, setup.target, seeds.y0, seeds.y1  # model: forward gives uncalibrated logits
    kinds = {"generator": _chunked(run_dir, "generator", len(seeds.z), audit.chunk, lambda s: generator_tests(
        setup.generator, model, seeds.z[s], y0[s], None if y1 is None else y1[s], k=audit.k, eps=audit.eps,
        kappa=audit.kappa, lr=audit.lr, max_steps=audit.max_steps,
        anneal=audit.budget == FaultBudget.annealed, show_progress=True))}
    engine = PIXEL_ENGINES[audit.pixel_engine.value]
    for norm, settings in audit.pixel.items():
        kinds[f"pixel_{norm}"] = _chunked(run_dir, f"pixel_{norm}", len(seeds.z), audit.chunk,
                                          lambda s, st=settings, nm=norm: engine(
            model, seeds.images[s], y0[s], None if y1 is None else y1[s], eps=float(st["eps"]), norm=nm,
            kappa=audit.kappa, steps=int(st["steps"])))
    return kinds


def _measure(summary: dict[str, Any], setup: FaultSetup, seeds: torch.Tensor, y0: torch.Tensor,
             kinds: dict[str, FaultResult], judge: Any, others: dict[str, Any]) -> tuple[dict, dict, dict]:
    """Each direction's and kind's measures into ``summary``; returns the gallery views, the pixel distances
    and the gallery titles by ``<prefix><kind>`` (``seeds`` ``[S, C, H, W]`` and ``y0`` ``[S]`` on the CPU)."""
    n, target = setup.audit.n_seeds, setup.target
    features = _fault_features(setup.audit.fault_feature)
    judged = {kind: _judge_keeps(judge, result.tests, y0) for kind, result in kinds.items()}
    judged_seeds = _judge_keeps(judge, seeds, y0)
    # the target's class probabilities on seeds and tests, for the galleries' titles
    probabilities = {"seeds": target.predict_proba(seeds).cpu(),
                     **{kind: target.predict_proba(result.tests).cpu() for kind, result in kinds.items()}}
    distances: dict[str, dict[str, torch.Tensor]] = {}
    views: dict[str, tuple[torch.Tensor, FaultResult]] = {}
    titles: dict[str, list[str]] = {}
    for i, (prefix, _, _, sign) in enumerate(setup.directions):
        rows = slice(i * n, (i + 1) * n)
        if judged_seeds is not None:  # the judge on the unperturbed seeds: the ceiling of valid_share
            _share(summary, f"faults/{prefix}seeds/valid_share", judged_seeds[rows])
        for kind, result in kinds.items():
            name = f"{prefix}{kind}"
            views[name] = (seeds[rows], result.subset(rows))
            titles[name] = _pair_titles(probabilities["seeds"][rows], probabilities[kind][rows], y0[rows],
                                        views[name][1], target.class_names)
            distances[name] = pixel_distances(seeds[rows], views[name][1].tests)
            _summarise(summary, f"faults/{name}", seeds[rows], y0[rows], views[name][1], distances[name],
                       None if judge is None else judged[kind][rows], features, sign, others)
        for other_name, other in others.items():
            # the other model's accuracy on the unperturbed seeds: how much of its error the tests cause
            _share(summary, f"faults/{prefix}seeds/transfer_acc/{other_name}",
                   other.predict_proba(seeds[rows]).argmax(1).cpu() == y0[rows])
    return views, distances, titles


def _pair_titles(seed_probs: torch.Tensor, test_probs: torch.Tensor, y0: torch.Tensor, result: FaultResult,
                 class_names: list[str]) -> list[str]:
    """Gallery titles of the failing tests' (seed, test) pairs: for both images, the target's probability
    of the seed's class and of the class the test ended in (``*_probs`` ``[n, K]``, ``y0`` ``[n]``)."""
    titles = []
    for i in result.success.nonzero().squeeze(1).tolist():
        own, reached = int(y0[i]), int(result.final_label[i])
        for label, probs in (("seed", seed_probs[i]), ("test", test_probs[i])):
            titles.append(f"{label}\n{class_names[own]} {float(probs[own]):.2f}\n"
                          f"{class_names[reached]} {float(probs[reached]):.2f}")
    return titles


def _judge_keeps(judge: Any, tests: torch.Tensor, y0: torch.Tensor) -> torch.Tensor | None:
    """``[B]`` bool: the independent judge still gives each test the seed's class (None without a judge)."""
    return None if judge is None else judge.predict_proba(tests).argmax(1).cpu() == y0


def _summarise(summary: dict[str, Any], key: str, seeds: torch.Tensor, y0: torch.Tensor, result: FaultResult,
               distances: dict[str, torch.Tensor], keeps: torch.Tensor | None, features: list[dict[str, Any]],
               sign: float, others: dict[str, Any]) -> None:
    """One kind of test in one direction under ``key`` (``faults/[reverse/]<kind>``): success, steps,
    time, distances, validity, the injected features' moved shares (``sign`` -1 flips each feature's
    direction for the reverse tests) and the transfer accuracies (valid tests only when judged)."""
    ok = result.success
    n = len(ok)
    summary[f"{key}/success"] = float(ok.float().mean())
    summary[f"{key}/steps_mean"] = float(result.steps[ok].float().mean()) if ok.any() else None
    summary[f"{key}/seconds_per_test"] = result.seconds / n
    summary[f"{key}/tests_per_second"] = float(ok.sum()) / max(result.seconds, 1e-9)
    for name, values in distances.items():
        summary[f"{key}/{name}_median"] = float(values[ok].median()) if ok.any() else None
    valid = ok
    if keeps is not None:  # the independent classifier still sees the seed's class: the test kept its label
        valid = ok & keeps
        _share(summary, f"{key}/valid_share", keeps[ok])
    for feature in features:  # share of failing tests that moved the injected feature the fault's way
        shift = feature_shift(seeds, result.tests, str(feature["kind"]), sign * float(feature["direction"]))
        for label, members in (("", ok), ("_valid", valid)):
            name = f"{key}/feature/{feature['kind']}{label}"
            _share(summary, f"{name}/moved_share", shift[members] > 0)
            summary[f"{name}/shift_mean"] = float(shift[members].mean()) if members.any() else None
    if features and ok.any():  # the first feature under the report's column names
        first = f"{key}/feature/{features[0]['kind']}"
        summary[f"{key}/feature_moved_share"] = summary[f"{first}/moved_share"]
        summary[f"{key}/feature_shift_mean"] = summary[f"{first}/shift_mean"]
    for other_name, other in others.items():
        # RQ3 on valid tests only: a test that changed class cannot count as transfer
        if valid.any():
            _share(summary, f"{key}/transfer_acc/{other_name}",
                   other.predict_proba(result.tests[valid]).argmax(1).cpu() == y0[valid])


def _fault_features(setting: Any) -> list[dict[str, Any]]:
    """``audit.fault_feature`` as a list of ``{kind, direction}`` (one mapping or a list of them)."""
    value = plain(setting)
    features = [] if not value else [value] if isinstance(value, dict) else list(value)
    for feature in features:
        require(isinstance(feature, dict) and {"kind", "direction"} <= set(feature), f"audit.fault_feature entry "
                f"{feature!r} needs kind and direction, e.g. {{kind: brightness, direction: -1}}")
    return features


def _share(summary: dict[str, Any], key: str, hits: torch.Tensor) -> None:
    """``key`` = share of ``hits`` ``[n]`` (bool), with its 95% bootstrap interval over the tests
    (each test comes from its own seed: independent units) under ``key/lo``, ``key/hi``, and ``key/n``."""
    if not len(hits):
        summary[key] = None
        return
    stats = mean_with_ci(hits.float().numpy())
    summary[key], summary[f"{key}/lo"], summary[f"{key}/hi"], summary[f"{key}/n"] = (
        stats["mean"], stats["lo"], stats["hi"], stats["n"])


def _chunked(run_dir: RunDir, kind: str, n: int, chunk: int, make: Any) -> FaultResult:
    """Run ``make(slice)`` over seed chunks and concatenate the results.

    Each finished chunk is a unit ``<kind>/<start>-<stop>`` of the claimed run dir; a rerun of the same
    audit loads finished chunks instead of searching again.
    """
    parts = []
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        saved = run_dir.load(kind, f"{start}-{stop}")
        if saved is not None:
            parts.append(FaultResult(**saved))
            log.info("resumed %s chunk %d-%d", kind, start, stop)
            continue
        part = make(slice(start, stop)).cpu()
        run_dir.save(kind, f"{start}-{stop}", vars(part))
        parts.append(part)
    return FaultResult.concat(parts)


def _write_report(path: Path, summary: dict[str, Any], kinds: list[str], plots: dict[str, Path]) -> Path:
    """``report.md``: one row per kind of test (success, steps, time, pixel distances, RQ1 / RQ3 columns)."""
    columns = ["success", "steps_mean", "seconds_per_test", "tests_per_second", "l2_median", "linf_median",
               "valid_share", "feature_moved_share", "feature_shift_mean"]
    transfer = sorted({k.split("/transfer_acc/")[1].split("/")[0] for k in summary if "/transfer_acc/" in k})
    header = columns + [f"acc on {name}" for name in transfer]

    def cell(value: Any) -> str:
        return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)

    lines = [f"# Fault tests: {summary['faults/source']} -> {summary['faults/target'] or 'any other class'}", "",
             f"{summary['faults/n_seeds']} seeds; generator budget {summary['faults/budget']} "
             f"(eps {summary['faults/eps']}, first {summary['faults/k']} blocks); pixel engine "
             f"{summary['faults/pixel_engine']}.", "",
             f"Generator quality gate (recorded at training): class agreement "
             f"{cell(summary.get('faults/generator_class_agreement'))}, gate {cell(summary.get('faults/generator_gate'))}.", "",
             "| kind | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
    seeds_measured = bool(transfer) or summary.get("faults/seeds/valid_share") is not None
    rows: list[str] = []
    for kind in kinds:  # each direction's seeds row (the judge's and transfer targets' baseline) above its tests
        seeds_row = f"{kind.rpartition('/')[0]}/seeds".lstrip("/")
        rows += [seeds_row] * (seeds_measured and seeds_row not in rows) + [kind]
    for kind in rows:
        values = [summary.get(f"faults/{kind}/{c}") for c in columns]
        values += [summary.get(f"faults/{kind}/transfer_acc/{name}") for name in transfer]
        lines.append(f"| {kind} | " + " | ".join(cell(v) for v in values) + " |")
    lines += [""] + [f"![{key}]({p.name})" for key, p in plots.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def _plots(out: Path, views: dict[str, tuple[torch.Tensor, FaultResult]],
           distances: dict[str, dict[str, torch.Tensor]], titles: dict[str, list[str]]) -> dict[str, Path]:
    """Seed -> test galleries of the first 12 failing tests per kind of test and direction (``views``:
    name -> (seeds, result); ``titles``: name -> two titles per failing test, as :func:`_pair_titles`)
    and the L2 / Linf histograms."""
    plots: dict[str, Path] = {}
    for kind, (seeds, result) in views.items():
        index = result.success.nonzero().squeeze(1)[:12]
        if len(index):
            pairs = torch.stack([seeds[index], result.tests[index]], 1).flatten(0, 1)
            stem = kind.replace("/", "_")
            plots[f"faults/{stem}_pairs"] = image_grid(pairs, out / f"{stem}_pairs.png", titles[kind][:2 * len(index)],
                                                       columns=8, scale=1.6)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, name in zip(axes, ("l2", "linf")):
        found = {kind: distances[kind][name][result.success].double().numpy() for kind, (_, result) in views.items()}
        found = {kind: values for kind, values in found.items() if len(values)}
        if not found:
            continue
        # shared bins; a kind that always ends on its ball's surface (one value) still gets a bar
        low = min(float(v.min()) for v in found.values())
        high = max(float(v.max()) for v in found.values())
        bins = np.linspace(low, max(high, low + 1e-3), 31)
        for kind, values in found.items():
            ax.hist(values, bins=bins, alpha=0.5, label=kind)
        ax.set_xlabel(f"{name} pixel distance, seed to test")
        ax.legend(fontsize=7)
    plots["faults/distances"] = save_figure(fig, out / "distances.png")
    return plots
