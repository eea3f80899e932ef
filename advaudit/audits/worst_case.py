"""The worst-case audit: Algorithm 1 of the adversarial-examiner paper, batched over instances.

Each step (one examiner *iteration*) asks every instance's examiner for ``q`` candidates, renders
all of them in one call, judges which preserve the label (:mod:`advaudit.worlds.validity`), runs
one forward pass and tells each examiner its losses (1 - true-class probability; the true-class
probability itself in ``mode=strength``). Budgets are honoured to the query: ``audit.budget`` is
in queries per instance (or in iterations of ``q`` queries with ``audit.budget_unit=iterations``),
and a budget that is not a multiple of ``q`` ends with a partial last iteration.

Per-step records are appended to ``steps.jsonl`` as they come and the examiner state is
checkpointed every ``checkpoint_every`` steps, so a killed run resumes where it stopped and ends
with the same numbers as an uninterrupted one. The metrics are computed from ``steps.jsonl`` by
:mod:`advaudit.audits.examiner_metrics`.
"""

from __future__ import annotations

import copy
import importlib
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig
from torch import Tensor

from advaudit.audits.common import load_audit_target
from advaudit.audits.examiner_metrics import window_iterations
from advaudit.audits.instance_selection import select_instances
from advaudit.audits.lazy_validity import LazyJudging
from advaudit.audits.lifecycle import RunDir, fingerprint
from advaudit.audits.shards import finish_shard, shard_rows, start_shard
from advaudit.audits.worst_case_fresh import record_fresh_conditions
from advaudit.audits.worst_case_record import ExaminationRecord, save_history
from advaudit.audits.worst_case_history import load_history
from advaudit.config import typed
from advaudit.audits.settings import BudgetUnit, Mode, WorstCaseAuditConf
from advaudit.core.progress import progress
from advaudit.core.records import append_jsonl, read_jsonl
from advaudit.errors import AdvauditError, require
from advaudit.examiners import build_examiner
from advaudit.worlds import build_world, fit_target_to_world
from advaudit.worlds.protocol import Factor, Instances, offered, periodic_mask, unit_to_factor
from advaudit.worlds.settings import InLoss
from advaudit.worlds.validity import REFERENCE_CHECK, ValidityJudge

BUDGET_UNITS = ("queries", "iterations")

STATE_FILE, STEPS_FILE = "examiner_state.pt", "steps.jsonl"


class ConditionSpace:
    """Splits the world's factors into searched ones and ones fixed per instance.

    Fixed: factors with ``low == high`` and the ``fixed_random`` ones (drawn once per instance,
    as the paper does for the 3 sun angles). ``assemble`` maps the examiner's unit-cube points
    ``[N, q, C_free]`` to full conditions ``[N, q, C]`` in factor units.
    """

    def __init__(self, factors: list[Factor], fixed_random: list[str], n: int, generator: torch.Generator) -> None:
        names = [f.name for f in factors]
        unknown = [name for name in fixed_random if name not in names]
        require(not unknown, f"audit.fixed_random names unknown factors {unknown}; factors are {names}")
        self.factors = factors
        self.free = [i for i, f in enumerate(factors) if not f.fixed and f.name not in fixed_random]
        require(self.free, "all factors are fixed: nothing to search; free at least one factor "
                "(world.factors / audit.fixed_random)")
        full = unit_to_factor(torch.rand(n, len(factors), generator=generator), factors)
        self.fixed_values = full  # [N, C]: used for every non-free factor

    @property
    def free_factors(self) -> list[Factor]:
        return [self.factors[i] for i in self.free]

    def assemble(self, u: Tensor, rows: Tensor | None = None) -> Tensor:
        """``u`` ``[n, q, C_free]`` for all instances (or those at ``rows``) -> ``[n, q, C]``."""
        n, q, _ = u.shape
        fixed = self.fixed_values if rows is None else self.fixed_values[rows]
        s = fixed[:, None, :].expand(n, q, -1).clone()
        s[:, :, self.free] = unit_to_factor(u, self.free_factors)
        return s

    def take(self, rows: Tensor) -> "ConditionSpace":
        """The same space for the instances at ``rows`` ``[n]`` only (a shard: their fixed values)."""
        part = copy.copy(self)
        part.fixed_values = self.fixed_values[rows]
        return part


# audit keys that say how long to examine and what to report, not what is examined: a run dir whose examination
# matches in everything else resumes, or is extended to a larger budget (no examiner's proposals depend on the
# budget, so 300 iterations extended to 500 equal a 500-iteration run)
_LENGTH_KEYS = ("budget", "budget_unit", "report_budgets")
SECTIONS = WorstCaseAuditConf.card.sections  # the config sections besides the audit that change its results


def examination_key(cfg: DictConfig) -> str:
    """The key of the whole examination a shard belongs to (the same for every shard, different for another budget;
    the merge groups by it)."""
    return fingerprint(cfg, SECTIONS, keep=())


def _resume(out: Path, examiner: Any, budget: int) -> tuple[int, float]:
    """Load a matching checkpoint; keep step records up to it. Returns the next step and the seconds
    the examination has run up to it (so queries/s stays true over interruptions and extensions).

    A finished examination resumes too when ``budget`` (queries per instance) is larger: it is
    extended, and its report then covers the new budget. Refused: a smaller budget than the one already
    run (the later records would not belong to it), and extending a budget that ended with a partial
    iteration (its examiner was told fewer than ``q`` queries at that step, a longer run would not). The run
    dir was claimed for this examination (:class:`advaudit.audits.lifecycle.RunDir`) before."""
    state_path = out / STATE_FILE
    if not state_path.exists():
        (out / STEPS_FILE).unlink(missing_ok=True)
        return 0, 0.0
    state = torch.load(state_path, weights_only=True)
    step, q = int(state["step"]), examiner.q
    done = min(step * q, int(state.get("budget", step * q)))
    if done > budget:
        raise AdvauditError(f"{out} already holds {done} queries per instance of this examination, more than "
                            f"audit.budget asks for ({budget}); raise audit.budget to at least that (its "
                            "reports can name smaller budgets in audit.report_budgets) or use a new run dir")
    if budget > done and done % q:
        raise AdvauditError(f"{out} ended its budget of {done} queries with a partial iteration (q={q}), so it "
                            "cannot be extended to the same result as a longer run; use a new run dir")
    examiner.load_state_dict(state["examiner"])
    kept = [r for r in read_jsonl(out / STEPS_FILE) if r["step"] < step]
    (out / STEPS_FILE).unlink(missing_ok=True)
    if kept:
        append_jsonl(out / STEPS_FILE, kept)
    return step, float(state.get("seconds", float("nan")))  # NaN: a checkpoint that predates the count


def _checkpoint(out: Path, examiner: Any, step: int, budget: int, seconds: float) -> None:
    tmp = out / (STATE_FILE + ".tmp")
    torch.save({"step": step, "budget": budget, "seconds": seconds,
                "examiner": examiner.state_dict()}, tmp)
    tmp.replace(out / STATE_FILE)


def budget_in_queries(audit: WorstCaseAuditConf, q: int) -> tuple[int, list[int]]:
    """``audit.budget`` and ``audit.report_budgets`` in queries per instance (:func:`advaudit.config.validate`
    has refused budgets that cannot be honoured)."""
    per = q if audit.budget_unit == BudgetUnit.iterations else 1
    return audit.budget * per, sorted({b * per for b in audit.report_budgets} | {audit.budget * per})


@dataclass
class Examination:
    """What an examination is set up with before its first step: the target, the world, the instances
    ``z`` of this job (all of them, or one shard's ``rows`` of the examination's), their conditions'
    space, the validity judge and where the records go."""

    cfg: DictConfig
    audit: WorstCaseAuditConf
    out: Path
    target: Any
    world: Any
    z: Instances
    space: ConditionSpace
    judge: ValidityJudge
    device: torch.device
    rows: Tensor  # [n] rows of this job's instances among the examination's N
    n_all: int


def prepare(cfg: DictConfig, shard: int | None = None) -> Examination:
    """Load the target and world, select the instances and set up their conditions and the judge; with
    ``audit.shards`` > 1, keep the shard's rows (``shard`` overrides ``audit.shard``: the merge's 0 of 1)."""
    audit = typed(WorstCaseAuditConf, cfg.audit)
    out = Path(cfg.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = load_audit_target(cfg)
    world = build_world(cfg.world)
    target = fit_target_to_world(world, target)
    seed = int(cfg.seed)
    z = select_instances(world, target, audit.selection_split.value, audit.selection.value, audit.n_instances,
                         audit.selection_renders, seed, audit.calibrated)
    space = ConditionSpace(list(world.factors), list(audit.fixed_random), len(z),
                           torch.Generator().manual_seed(seed + 1))
    device = torch.device(offered(world, "device"))
    judge = ValidityJudge(world, audit.validity, device=target.device if hasattr(target, "device") else device)
    require(not (audit.judge and judge.reference_path is not None
                 and Path(str(audit.judge)).expanduser().resolve() == judge.reference_path.resolve()),
            f"audit.judge={audit.judge} is the validity check's own reference judge, so it would measure nothing; "
            "give an independent judge (e.g. train.py experiment=examiner/train_judge seed=1 dataset.world_seed=1) "
            "or set audit.validity.reference=null")
    rows = shard_rows(len(z), audit.shard if shard is None else shard, audit.shards if shard is None else 1)
    n_all = len(z)
    if len(rows) < n_all:
        z, space = z.subset(rows.to(z.labels.device)), space.take(rows)
    return Examination(cfg, audit, out, target, world, z, space, judge, device, rows, n_all)


def run(cfg: DictConfig) -> dict[str, Any]:
    """Examine ``cfg.target`` in ``cfg.world`` with ``cfg.examiner``; returns the examination's metrics."""
    ex = prepare(cfg)
    audit, z, out = ex.audit, ex.z, ex.out
    examiner = build_examiner(cfg.examiner, ex.n_all, len(ex.space.free), seed=int(cfg.seed), device=ex.device,
                              periodic=periodic_mask(ex.space.free_factors))
    sharded = len(ex.rows) < ex.n_all
    if sharded:
        require(hasattr(examiner, "restrict"), f"examiner {cfg.examiner.name} cannot examine a shard of the instances "
                "alone (its instances' searches are not independent); use audit.shards=1 or another examiner")
        examiner.restrict(ex.rows)
    budget, report_budgets = budget_in_queries(audit, examiner.q)
    steps = math.ceil(budget / examiner.q)
    windows = window_iterations(examiner.q, report_budgets, budget)   # judged in full when lazy: E_T inside S
    RunDir(out, cfg, SECTIONS, _LENGTH_KEYS)
    if sharded:
        start_shard(out, "worst_case", audit.shard, audit.shards, examination_key(cfg), rows=ex.rows.tolist(),
                    n_instances=ex.n_all)
    start_step, seconds_before = _resume(out, examiner, budget)
    lazy = None
    if ex.judge.reference is not None and audit.validity.lazy and audit.validity.in_loss != InLoss.barrier:
        lazy = LazyJudging(z.ids, audit.mode == Mode.strength, int(cfg.seed), audit.validity.share_sample)
        lazy.replay(read_jsonl(out / STEPS_FILE), {int(i): row for row, i in enumerate(z.ids.tolist())})
    stop_after = audit.stop_after_steps
    started = time.perf_counter()
    done = min(start_step * examiner.q, budget)
    bar = progress(total=budget * len(z), initial=done * len(z),
                   desc=f"examining {len(z)} instances ({cfg.examiner.name})", unit="query")
    for step in range(start_step, steps):
        if stop_after is not None and step - start_step >= stop_after:
            bar.close()
            raise KeyboardInterrupt(f"stopped after {stop_after} steps (audit.stop_after_steps)")
        take = min(examiner.q, budget - step * examiner.q)  # a partial last iteration honours the budget
        append_jsonl(out / STEPS_FILE, examine_step(ex, examiner, step, take, lazy, step in windows))
        bar.update(take * len(z))
        if (step + 1) % audit.checkpoint_every == 0 or step + 1 == steps:
            _checkpoint(out, examiner, step + 1, budget, seconds_before + time.perf_counter() - started)
    bar.close()
    seconds = seconds_before + time.perf_counter() - started
    history = load_history(out, len(z))
    record_fresh_conditions(ex, history, examiner.q)
    record = ExaminationRecord.of(ex)
    if sharded:  # the report of the whole examination is written once, by the merge, from the shards' records
        save_history(history, out)
        finish_shard(out, q=examiner.q, seconds=seconds, record=record.facts())
        return {"shard": audit.shard, "shards": audit.shards, "n_instances": len(z), "q": examiner.q,
                "queries_per_instance": budget, "seconds_examination": round(seconds, 2)}
    # the report's module (matplotlib, scipy.stats, t-SNE: ~2 s) is imported here, never by a shard
    report = importlib.import_module("advaudit.audits.worst_case_report")
    return report.summarise_and_report(record, seconds, examiner.q, report_budgets, history)


def examine_step(ex: Examination, examiner: Any, step: int, take: int, lazy: LazyJudging | None,
                 in_window: bool) -> list[dict[str, Any]]:
    """One iteration for every instance: ask, render, judge, predict, tell; returns its records. ``in_window``:
    the iteration is in a report budget's final window (:func:`advaudit.audits.examiner_metrics.window_iterations`),
    so a lazy judge sees every proposal the geometric checks pass."""
    z, labels = ex.z, ex.z.labels.cpu()
    u = examiner.ask()[:, :take]
    s = ex.space.assemble(u)
    true_prob, predicted, checks, images = _score(ex, s, step, judge_all=lazy is None)
    loss = true_prob if ex.audit.mode == Mode.strength else 1 - true_prob
    geometric = torch.ones(len(z), take, dtype=torch.bool)
    for name, passed in checks.items():
        if name != REFERENCE_CHECK:
            geometric &= passed
    valid, judged = geometric, torch.ones_like(geometric)
    if ex.judge.reference is not None:
        wrong = predicted != labels[:, None]
        if lazy is not None:
            judged = lazy.needed(step * examiner.q, true_prob, wrong, geometric, in_window)
            checks[REFERENCE_CHECK] = _judge_lazily(ex, s, judged, images)
        valid = geometric & checks[REFERENCE_CHECK]
        if lazy is not None:
            lazy.update(true_prob, wrong, valid)
    # barrier: a proposal outside S is no weakness (every proposal was judged: lazy judging is off)
    examiner.tell(u, loss * valid if ex.audit.validity.in_loss == InLoss.barrier else loss)
    known = judged | ~geometric  # a proposal the geometric checks throw out is invalid, judged or not
    return [{"step": step, "instance": int(z.ids[i]), "label": int(labels[i]), "s": s[i].tolist(),
             "true_prob": true_prob[i].tolist(), "predicted": predicted[i].tolist(),
             "valid": _known(valid[i], known[i]),
             "checks": {name: _known(c[i], judged[i]) if name == REFERENCE_CHECK else c[i].tolist()
                        for name, c in checks.items()}}
            for i in range(len(z))]


#: ``audit.chunk=null``: as many images as hold the pixels of 2048 32-px images (the target's own forward batch)
CHUNK_PIXELS = 2048 * 32 * 32


def chunk_size(ex: Examination) -> int:
    """Queries rendered and scored together: ``audit.chunk``, or (null) :data:`CHUNK_PIXELS` over the world's
    image area."""
    if ex.audit.chunk is not None:
        return int(ex.audit.chunk)
    shape = tuple(getattr(ex.world, "image_shape", (1, 32, 32)))
    return max(1, CHUNK_PIXELS // max(1, math.prod(shape[1:])))


def _chunks(n: int, q: int, chunk: int) -> list[tuple[Tensor, Tensor]]:
    """The step's ``n x q`` queries in pieces of at most ``chunk``: ``[(rows [m], cols [m]), ...]`` in row-major
    order (one piece holding every query when they fit)."""
    rows = torch.arange(n).repeat_interleave(q)
    cols = torch.arange(q).repeat(n)
    return [(rows[a:a + chunk], cols[a:a + chunk]) for a in range(0, n * q, chunk)]


def _score(ex: Examination, s: Tensor, step: int,
           judge_all: bool) -> tuple[Tensor, Tensor, dict[str, Tensor], Tensor | None]:
    """Render and score the conditions ``s`` ``[N, q, C]`` at most ``audit.chunk`` images at a time: the true
    class's probability ``[N, q]``, the predicted class ``[N, q]`` and the geometric checks (with the reference
    judge's verdicts on every query when ``judge_all``), each ``[N, q]``, and the images ``[N*q, ...]`` when all
    fit in one chunk (else None). One chunk renders ``[N, q]`` as one batch; smaller chunks render each query as
    its own pseudo-instance (a scene's pixels do not depend on the batch it is in)."""
    z, labels = ex.z, ex.z.labels.cpu()
    n, q = s.shape[:2]
    true_prob, predicted = torch.empty(n, q), torch.empty(n, q, dtype=torch.long)
    checks: dict[str, Tensor] = {}
    names = [f.name for f in ex.world.factors]
    pieces = _chunks(n, q, chunk_size(ex))
    for rows, cols in pieces:
        part_z, part_s = (z, s) if len(pieces) == 1 else (z.subset(rows.to(z.labels.device)), s[rows, cols][:, None])
        x, part_checks = ex.judge.render_geometric(part_z, part_s.to(ex.device))
        if judge_all and ex.judge.reference is not None:
            part_checks[REFERENCE_CHECK] = ex.judge.reference_verdicts(part_z, part_s.to(ex.device), x)
        probs = ex.target.predict_proba(x, calibrated=ex.audit.calibrated, context={
            "step": step, "instance": part_z.ids.cpu(), "condition": part_s, "factors": names})
        mine = labels[rows].to(probs.device).view(-1, 1)
        true_prob[rows, cols] = probs.gather(1, mine).view(-1).cpu()
        predicted[rows, cols] = probs.argmax(1).cpu()
        for name, passed in part_checks.items():
            checks.setdefault(name, torch.empty(n, q, dtype=torch.bool))[rows, cols] = passed.reshape(-1)
    return true_prob, predicted, checks, x if len(pieces) == 1 else None


def _judge_lazily(ex: Examination, s: Tensor, which: Tensor, images: Tensor | None) -> Tensor:
    """The reference judge's verdicts ``[N, q]`` on the queries ``which`` ``[N, q]`` (False elsewhere): on the
    step's ``images`` ``[N*q, ...]`` when it kept them, else rendered again as pseudo-instances, at most
    ``audit.chunk`` at a time (few queries are judged)."""
    if images is not None:
        return ex.judge.reference_verdicts(ex.z, s.to(ex.device), images, which)
    verdicts = torch.zeros(which.shape, dtype=torch.bool)
    rows, cols = which.nonzero(as_tuple=True)
    chunk = chunk_size(ex)
    for a in range(0, len(rows), chunk):
        r, c = rows[a:a + chunk], cols[a:a + chunk]
        part_z, part_s = ex.z.subset(r.to(ex.z.labels.device)), s[r, c][:, None].to(ex.device)
        same_size = ex.judge.reference_world is ex.judge.world  # else the judge renders at its own size
        images = ex.judge.render_geometric(part_z, part_s)[0] if same_size else None
        verdicts[r, c] = ex.judge.reference_verdicts(part_z, part_s, images)[:, 0]
    return verdicts


def _known(values: Tensor, known: Tensor) -> list[bool | None]:
    """``values`` ``[q]`` as a list with None where the verdict is not known (not judged)."""
    return [bool(v) if k else None for v, k in zip(values.tolist(), known.tolist())]
