"""Examiner throughput: queries/s and the examiner's own time as a share of render + forward.

Two objectives:
- ``--target <shapes target.pt>``: the worst-case loop on ShapeWorld (render, forward, true-class
  probability), N test instances x budget queries; quality = mean final true-class probability
  (the lowest found) and E_T (the true-class probability of the last proposal, mean over instances).
- ``--planted``: a synthetic objective with a known answer and no model: each instance's loss is a
  smooth background plus a bump of height 0.5 on a planted interval of one factor
  (``u[k] in [0.7, 0.9]``, like the planted elevation weakness); quality = the best loss found and
  the share of the last 100 proposals inside the planted interval (random search: 0.2).
  ``--planted-at wrap`` moves the interval to straddle the seam of factor 0 (``u[0] within 0.1 of
  0 = 1`` around the circle: an angle's 324-36 deg), ``--periodic 0`` declares factor 0 a circle
  (the examiners search it as one; without it they see a box with two far edges).

``--baseline REV`` also runs BO as it was at git revision ``REV`` (its package checked out of git) on the
same problem in the same process (old vs new under the same machine load); ``--profile`` prints the
top cProfile entries of the BO examiner.

    .venv/bin/python benchmarks/worst_case/examiner_speed.py --target <shapes target.pt> [--examiners random,rl,bo,tpe] \
        [--instances 55] [--budget 500] [--threads 1] [--baseline main] [--profile 100]
    .venv/bin/python benchmarks/worst_case/examiner_speed.py --planted --examiners bo --baseline main
    .venv/bin/python benchmarks/worst_case/examiner_speed.py --planted --planted-at wrap --periodic 0 --examiners bo,tpe,cmaes,rl
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any, Callable

import torch

from advaudit.examiners import build_examiner
from advaudit.runtime import configure_threads
import sys
from pathlib import Path
sys.path[:0] = [str(p) for p in Path(__file__).resolve().parents[1].iterdir() if p.is_dir()]  # benchmarks/*/
from revision import package_module_at_revision  # benchmarks/ is on sys.path

DEFAULTS = {"random": {"q": 32}, "rl": {"q": 32}, "bo": {"q": 1}, "tpe": {"q": 1}, "cmaes": {"q": 1}}
PLANTED_FACTOR, PLANTED = 0, (0.7, 0.9)
N_DIMS_PLANTED = 9


def in_planted(x: torch.Tensor, at: str = "middle") -> torch.Tensor:
    """Whether factor values ``x`` lie in the planted interval (``wrap``: within 0.1 of the seam)."""
    if at == "wrap":
        return torch.minimum(x, 1 - x) <= 0.1
    return (x >= PLANTED[0]) & (x <= PLANTED[1])


def planted_loss(u: torch.Tensor, phase: torch.Tensor, at: str = "middle") -> torch.Tensor:
    """``[N, q, C] -> [N, q]``: background ``0.2 + 0.1 sum_c sin(3 u_c + phase)/C`` plus a smooth
    step of 0.5 on ``u[PLANTED_FACTOR] in PLANTED`` (``at=wrap``: within 0.1 of 0 = 1 around the circle)."""
    low, high = PLANTED
    x = u[..., PLANTED_FACTOR]
    if at == "wrap":
        bump = torch.sigmoid((0.1 - torch.minimum(x, 1 - x)) * 80)
    else:
        bump = torch.sigmoid((x - low) * 80) * torch.sigmoid((high - x) * 80)
    background = 0.2 + 0.1 * torch.sin(3 * u + phase[:, None]).mean(-1)
    return background + 0.5 * bump


def loop(examiner, evaluate: Callable[[torch.Tensor], torch.Tensor], budget: int) -> dict[str, float]:
    """Ask/tell for ``budget`` queries; ``evaluate`` ``[N, q, C] -> [N, q]`` loss (higher = worse)."""
    t_examiner = t_model = 0.0
    for _ in range(math.ceil(budget / examiner.q)):
        start = time.perf_counter()
        u = examiner.ask()
        t_examiner += time.perf_counter() - start
        start = time.perf_counter()
        loss = evaluate(u)
        t_model += time.perf_counter() - start
        start = time.perf_counter()
        examiner.tell(u, loss)
        t_examiner += time.perf_counter() - start
    return {"queries": examiner.Y.shape[1] * examiner.n_instances, "seconds": t_examiner + t_model,
            "examiner_s": t_examiner, "model_s": t_model}


def make_examiner(name: str, n: int, dims: int, seed: int, baseline: type | None, options: dict[str, Any],
                  periodic: list[bool] | None = None):
    if baseline is not None:
        return baseline(n, dims, seed=seed, **options)
    return build_examiner({"name": name, **DEFAULTS[name], **options}, n, dims, seed=seed, periodic=periodic)


def run_planted(examiner, n: int, budget: int, seed: int, at: str = "middle") -> dict[str, float]:
    phase = torch.rand(n, N_DIMS_PLANTED, generator=torch.Generator().manual_seed(seed + 1)) * 6.28
    result = loop(examiner, lambda u: planted_loss(u.double(), phase.double(), at), budget)
    late = examiner.X[:, -100:, PLANTED_FACTOR]
    result["best"] = float(examiner.Y.max(1).values.mean())
    result["late_in_planted"] = float(in_planted(late, at).double().mean())
    return result


def run_target(examiner, world, target, z, space, budget: int) -> dict[str, float]:
    n = len(z)
    labels = z.labels

    def evaluate(u: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            x = world.render(z, space.assemble(u))
            p = target.predict_proba(x, calibrated=False)
        return 1 - p.gather(1, labels.repeat_interleave(u.shape[1]).view(-1, 1)).view(n, -1).cpu()

    result = loop(examiner, evaluate, budget)
    result["best"] = float(1 - examiner.Y.max(1).values.mean())       # lowest true-class prob found
    result["E_T"] = float(1 - examiner.Y[:, -examiner.q:].mean())      # at the final proposal(s)
    return result


def profile_bo(make: Callable[[], Any], evaluate_factory: Callable[[Any], dict], top: int = 14) -> None:
    """cProfile's top functions by cumulative time (torch.profiler's table took minutes to aggregate
    the many small ops of a 100-step run)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    evaluate_factory(make())
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


def acquisition_gap(n_instances: int, n_points: int, seed: int, repeats: int = 3) -> None:
    """How close each ``refine`` setting gets to the acquisition's maximum, and what one ``ask`` costs.

    A BO examiner is told ``n_points`` random observations of the planted objective per instance
    (hyperparameters fitted once); then, from the same screened starts, each setting proposes a
    point. Share = (reached - screen's best) / (reference - screen's best), the share of the possible
    improvement over the screened starts each setting realises, where the reference is the best UCB
    found by any setting or by 200 Adam steps from the default's result; mean over instances and
    ``repeats`` asks; ``ask s`` is the median time of screen + refinement.
    """
    import statistics

    phase = torch.rand(n_instances, N_DIMS_PLANTED, generator=torch.Generator().manual_seed(seed + 1)) * 6.28
    u = torch.rand(n_instances, n_points, N_DIMS_PLANTED, generator=torch.Generator().manual_seed(seed + 2)).double()
    settings = {"local (default: 4 rounds x 24)": {}, "adam 15 steps (previous default)": {"refine": "adam"},
                "local, 3 rounds x 16 [0.3, 0.1, 0.03]": {"local_scales": [0.3, 0.1, 0.03], "local_samples": 16},
                "local, 5 rounds x 32 [0.5 ... 0.02]": {"local_scales": [0.5, 0.2, 0.1, 0.05, 0.02], "local_samples": 32},
                "local, 128 raw samples": {"raw_samples": 128}, "local, 2 restarts": {"restarts": 2},
                "screen only": {"local_scales": []}}
    print(f"\nacquisition maximisation at n = {n_points}, N = {n_instances} (planted objective):")
    print("| refine | share of the possible UCB improvement | ask s |\n|---|---|---|")
    examiners = {}
    for name, options in settings.items():
        examiner = make_examiner("bo", n_instances, N_DIMS_PLANTED, seed, None, options)
        examiner.tell(u.float(), planted_loss(u, phase.double()))
        examiner._sync_posterior()
        examiners[name] = examiner
    shares: dict[str, list[float]] = {name: [] for name in settings}
    seconds: dict[str, list[float]] = {name: [] for name in settings}
    for r in range(repeats):
        reached = {}
        for name, examiner in examiners.items():
            examiner.generator.manual_seed(seed + 10 + r)  # same screen for every setting
            with torch.no_grad():
                start = time.perf_counter()
                context = examiner._factor.context()
                x, value = examiner._screen(context)
                if examiner.refine == "adam":
                    x, value = examiner._refine_adam(x, context)
                elif examiner.local_scales:
                    x, value = examiner._refine_local(x, value, context)
                seconds[name].append(time.perf_counter() - start)
                reached[name] = value.max(1).values.double()
                if name.startswith("local (default"):
                    examiner.adam_steps, examiner.adam_lr = 200, 0.01
                    strong = examiner._refine_adam(x, context)[1].max(1).values.double()
                    examiner.adam_steps, examiner.adam_lr = 15, 0.03
        best = torch.stack([strong, *reached.values()]).max(0).values
        screen = reached["screen only"]
        for name in settings:
            shares[name].append(float(((reached[name] - screen) / (best - screen).clamp_min(1e-9)).mean()))
    for name in settings:
        print(f"| {name} | {statistics.mean(shares[name]):.3f} | {statistics.median(seconds[name]):.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target")
    parser.add_argument("--planted", action="store_true", help="synthetic planted-interval objective, no model")
    parser.add_argument("--planted-at", choices=("middle", "wrap"), default="middle")
    parser.add_argument("--periodic", default="", help="comma-separated dims declared periodic (e.g. 0)")
    parser.add_argument("--examiners", default="random,rl,bo,tpe")
    parser.add_argument("--instances", type=int, default=55)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline", default=None, help="git revision of bo.py to run as well (same run)")
    parser.add_argument("--profile", type=int, default=0, metavar="BUDGET",
                        help="cProfile top entries for BO over a run of BUDGET queries (0: no profile)")
    parser.add_argument("--bo-options", default="", help="k=v,... passed to the current BOExaminer")
    parser.add_argument("--acquisition-gap", default="", metavar="N_POINTS,...",
                        help="only compare the refine settings at these history sizes (see acquisition_gap)")
    args = parser.parse_args()
    if args.acquisition_gap:
        configure_threads(args.threads)
        for n_points in args.acquisition_gap.split(","):
            acquisition_gap(args.instances, int(n_points), args.seed)
        return
    if not args.planted and not args.target:
        parser.error("give --target <target.pt> or --planted")
    threads = configure_threads(args.threads)
    options = {k: (float(v) if "." in v else int(v) if v.lstrip("-").isdigit() else v)
               for k, v in (kv.split("=") for kv in args.bo_options.split(",") if kv)}
    n, budget = args.instances, args.budget
    if args.planted:
        dims = N_DIMS_PLANTED
        task = lambda ex, b=budget: run_planted(ex, n, b, args.seed, args.planted_at)  # noqa: E731
    else:
        from advaudit.audits.worst_case import ConditionSpace
        from advaudit.models import load_target
        from advaudit.worlds.shapes import ShapeWorld

        target = load_target(args.target)
        world = ShapeWorld(image_size=target.input_shape[-1])
        z = world.instances("test")
        z = z.subset(torch.randperm(len(z), generator=torch.Generator().manual_seed(args.seed))[:n])
        n = len(z)
        space = ConditionSpace(list(world.factors), ["sun_rot_x", "sun_rot_y", "sun_rot_z"], n,
                               torch.Generator().manual_seed(args.seed))
        dims = len(space.free)
        periodic_free = [space.factors[i].periodic for i in space.free]
        task = lambda ex, b=budget: run_target(ex, world, target, z, space, b)  # noqa: E731
    print(f"N={n}, budget={budget} queries/instance, {threads} torch threads, "
          f"{'planted objective' if args.planted else args.target}")
    print("| examiner | queries/s | total s | model s | examiner s | examiner / model | best | quality |")
    print("|---|---|---|---|---|---|---|---|")
    runs = [(name, None, options if name == "bo" else {}) for name in args.examiners.split(",")]
    if args.baseline and "bo" in args.examiners.split(","):
        old_bo = package_module_at_revision("advaudit.examiners.bo", args.baseline).BOExaminer
        runs.insert(0, (f"bo@{args.baseline}", old_bo, {}))
    flagged = {int(d) for d in args.periodic.split(",") if d}
    periodic = [d in flagged for d in range(dims)] if args.planted else periodic_free
    for name, baseline, opts in runs:
        examiner = make_examiner(name.split("@")[0], n, dims, args.seed, baseline, opts, periodic)
        r = task(examiner)
        quality = (f"late in planted {r['late_in_planted']:.2f}" if args.planted else f"E_T {r['E_T']:.4f}")
        extra = ""
        if hasattr(examiner, "n_fits"):
            extra = f" (fits {examiner.n_fits}, fit s {examiner.fit_seconds:.1f}"
            extra += f", failed {getattr(examiner, 'failed_fits', 'n/a')}"
            if hasattr(examiner, "seconds"):  # the examiner's own split of its time
                extra += ", " + ", ".join(f"{k} {v:.1f}" for k, v in examiner.seconds.items() if k != "fit")
            extra += ")"
        print(f"| {name} | {r['queries'] / r['seconds']:,.0f} | {r['seconds']:.1f} | {r['model_s']:.1f} | "
              f"{r['examiner_s']:.1f}{extra} | {100 * r['examiner_s'] / max(r['model_s'], 1e-9):.1f}% | "
              f"{r['best']:.4f} | {quality} |", flush=True)
    if args.profile:
        for name, baseline, opts in runs:
            if name.startswith("bo"):
                print(f"\ncProfile, {name}, {args.profile} queries (cumulative time):")
                profile_bo(lambda: make_examiner("bo", n, dims, args.seed, baseline, opts),
                           lambda ex: task(ex, args.profile))


if __name__ == "__main__":
    main()
