"""Error-search policies, the oracle ceiling and the terminal oracle, on pools with planted errors.

The policies are built as the audit builds them: from the blocks ``conf/search/method/*.yaml`` compose to.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from advaudit.search.settings import LowessConf
from advaudit.search.adversarial_distance import pool_scores
from advaudit.errors import AdvauditError
from advaudit.search.baselines import (BansalWeldCoverage, FacilityLocations, LakkarajuBandit, LowConfidence,
                                       RandomOrder, elbow_kmeans, fit_logistic, kmeans)
from advaudit.search.coverage import coverage_utility_curve
from advaudit.search.metrics import oracle_ceiling, sdr_curve
from advaudit.search.oracle import TerminalOracle
from advaudit.search.methods import Scorer, build_method, method_names
from advaudit.search.policy import PoolBatch, QueryPolicy, label_oracle, run_policy
from advaudit.search.scorers import GAD, AdversarialDistance
from tests.conftest import compose_config

METHODS = ["random", "low_confidence", "lakkaraju", "bansal_weld", "facility_locations"]
CLASSES = {"adversarial_distance": AdversarialDistance, "gad": GAD, "random": RandomOrder,
           "low_confidence": LowConfidence, "lakkaraju": LakkarajuBandit, "bansal_weld": BansalWeldCoverage,
           "facility_locations": FacilityLocations}


@pytest.fixture(scope="module")
def search(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The ``search`` block ``audit=error_search`` composes to: every built-in method's block."""
    cfg = compose_config("examine", ["audit=error_search"], tmp_path_factory.mktemp("search"))
    return dict(OmegaConf.to_container(cfg.search, resolve=True))


def build_policy(search: dict, name: str, **options: object) -> QueryPolicy:
    """The policy ``search.<name>`` builds, with ``options`` changed."""
    return build_method({**search, name: {**search[name], **options}}, name)()


def test_every_builtin_method_is_its_yaml_block(search: dict) -> None:
    assert method_names(search) == sorted(CLASSES)  # the registry composes them in name order
    for name, cls in CLASSES.items():
        method = build_method(search, name)()
        assert type(method) is cls and isinstance(method, Scorer) == (name in ("adversarial_distance", "gad"))
    bandit = build_policy(search, "lakkaraju", clusters=4)
    assert (bandit.clusters, bandit.exploration) == (4, 2.0)
    gad = build_method(search, "gad")()
    assert gad.pseudo_settings.seed == 0 and gad.settings.max_steps == 500 and gad.lowess.frac == 0.1


def test_a_setting_a_method_does_not_take_is_refused_when_built(search: dict) -> None:
    with pytest.raises(AdvauditError, match=r"^search.lakkaraju has unknown keys \['clustrs'\] .*did you mean "
                                            r"search.lakkaraju.clusters for search.lakkaraju.clustrs\?"):
        build_policy(search, "lakkaraju", clustrs=4)
    with pytest.raises(AdvauditError, match=r"^search has no method 'lakkaraju2'"):
        build_method(search, "lakkaraju2")


def planted_pools(r: int = 40, p: int = 300, seed: int = 0) -> tuple[PoolBatch, torch.Tensor]:
    """Pools where every error sits in one tight, confident cluster (a blind spot), far from the rest."""
    g = torch.Generator().manual_seed(seed)
    features = torch.randn(r, p, 5, generator=g)
    blind = torch.rand(r, p, generator=g) < 0.1
    features[blind] = torch.randn(int(blind.sum()), 5, generator=g) * 0.2 + 6.0
    confidence = 0.66 + 0.33 * torch.rand(r, p, generator=g)
    truth = blind & (torch.rand(r, p, generator=g) < 0.8)        # errors: most of the blind spot
    truth |= torch.rand(r, p, generator=g) < (1 - confidence) * 0.5  # plus a few ordinary ones
    return PoolBatch(features, confidence), truth


@pytest.mark.parametrize("name", METHODS)
def test_every_policy_queries_distinct_items_reproducibly(search: dict, name: str) -> None:
    pools, truth = planted_pools()
    run = lambda: run_policy(build_policy(search, name), pools, label_oracle(truth), 25, torch.Generator().manual_seed(3))  # noqa: E731
    positions, answers = run()
    assert positions.shape == (40, 25) and answers.dtype == torch.bool
    assert all(len(set(row.tolist())) == 25 for row in positions)
    assert torch.equal(answers, truth.gather(1, positions))
    assert torch.equal(positions, run()[0])


def test_adaptive_policies_reach_their_own_objectives_better_than_random(search: dict) -> None:
    """As in the paper's Figs. 5-7: Bansal & Weld tops its coverage utility and the errors found by
    querying low-confidence items; the bandit and facility locations exploit the blind spot."""
    pools, truth = planted_pools()
    found, utility, confidence = {}, {}, {}
    for name in METHODS:
        positions, answers = run_policy(build_policy(search, name), pools, label_oracle(truth), 30,
                                        torch.Generator().manual_seed(0))
        found[name] = float(answers.float().sum(1).mean())
        utility[name] = float(coverage_utility_curve(pools.features, pools.confidence, positions, answers)[:, -1].mean())
        confidence[name] = float(pools.confidence.gather(1, positions).mean())
    for name in ("lakkaraju", "facility_locations"):  # both exploit the blind spot once they hit it
        assert found[name] > 1.5 * found["random"], found
    assert utility["bansal_weld"] > 1.2 * utility["random"], utility
    assert found["bansal_weld"] > found["random"] and confidence["bansal_weld"] < confidence["random"] - 0.05


def test_bansal_weld_variants_and_its_first_query(search: dict) -> None:
    """With nothing found yet, P(error | x) = 1 - c_x and both scores are (1 - c_x) U({x}), with
    U({x}) = sum_y c_y exp(-(d(x, y) / d_max)^2 / var) (Bansal & Weld's code)."""
    pools, truth = planted_pools(r=5, p=200)
    distance = torch.cdist(pools.features, pools.features)
    scaled = distance / distance.flatten(1).amax(1)[:, None, None]
    alone = (pools.confidence[:, None, :].double() * torch.exp(-scaled.double() ** 2 / 0.001)).sum(2)
    for score in ("published", "expected_gain"):
        positions, _ = run_policy(build_policy(search, "bansal_weld", score=score, neighbours=200), pools,
                                  label_oracle(truth), 3, torch.Generator().manual_seed(0))
        assert torch.equal(positions[:, 0], ((1 - pools.confidence.double()) * alone).argmax(1))


def test_elbow_follows_bansal_weld_rule() -> None:
    """k = K[argmax(diff ratio)] + 1 over k = 2..5: for three separated 1-D blobs the rule picks 4."""
    g = torch.Generator().manual_seed(0)
    values = torch.cat([torch.randn(60, generator=g) * 0.1 + c for c in (0.0, 5.0, 10.0)])[None, :, None]
    assign = elbow_kmeans(values, torch.ones(1, 180, dtype=torch.bool), torch.Generator().manual_seed(1))
    assert len(set(assign[0].tolist())) == 4
    for blob in range(3):  # no cluster straddles two blobs
        assert not set(assign[0, 60 * blob:60 * blob + 60].tolist()) & set(assign[0, :60 * blob].tolist())


def test_low_confidence_queries_in_ascending_confidence(search: dict) -> None:
    pools, truth = planted_pools()
    positions, _ = run_policy(build_policy(search, "low_confidence"), pools, label_oracle(truth), 10, torch.Generator())
    queried = pools.confidence.gather(1, positions)
    assert bool((queried[:, 1:] >= queried[:, :-1]).all())
    assert torch.allclose(queried[:, 0], pools.confidence.min(1).values)


def test_adversarial_distance_ranking_puts_failed_attacks_last() -> None:
    rng = np.random.default_rng(0)
    confidence = torch.tensor(rng.uniform(0.66, 1.0, 200))
    distance = torch.log(0.05 + confidence) + torch.tensor(rng.normal(0, 0.01, 200))
    distance[:10] -= 1.0          # ten items far closer to the boundary than their confidence predicts
    distance[10:15] = float("nan")  # failed attacks
    pools = torch.arange(200)[None].repeat(2, 1)
    scores = pool_scores(distance, confidence, pools, LowessConf(frac=0.3))
    order = scores[0].argsort()
    assert set(order[:10].tolist()) == set(range(10))
    assert set(order[-5:].tolist()) == set(range(10, 15)) and torch.isinf(scores[0, 10:15]).all()
    once = pool_scores(distance, confidence, pools, LowessConf(frac=0.3, per_pool=False))
    assert set(once[0].argsort()[:10].tolist()) == set(range(10))


def test_oracle_ceiling_matches_brute_force() -> None:
    g = torch.Generator().manual_seed(1)
    confidence = 0.65 + 0.35 * torch.rand(3, 8, generator=g)
    is_error = torch.rand(3, 8, generator=g) < 0.3
    is_error[0] = False  # a pool without errors has ceiling 0
    ceiling = oracle_ceiling(is_error, confidence, 5)
    for r in range(3):
        for k in range(1, 6):
            best = max(float(sdr_curve(is_error[r, list(s)][None], confidence[r, list(s)][None])[0, -1])
                       for s in itertools.combinations(range(8), k))
            assert abs(float(ceiling[r, k - 1]) - best) < 1e-9


def test_batched_logistic_regression_matches_sklearn() -> None:
    from sklearn.linear_model import LogisticRegression

    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 60, 3, generator=g, dtype=torch.float64)
    y = (x[..., 0] + 0.5 * torch.randn(2, 60, generator=g, dtype=torch.float64) > 0).double()
    design = torch.cat([torch.ones(2, 60, 1, dtype=torch.float64), x], 2)
    w = fit_logistic(design, y, torch.ones(2, 60, dtype=torch.float64), ridge=1e-6, iterations=25)
    for r in range(2):
        reference = LogisticRegression(C=1e6, max_iter=1000).fit(x[r].numpy(), y[r].numpy())
        assert np.allclose(w[r, 1:].numpy(), reference.coef_[0], atol=1e-3)


def test_kmeans_separates_two_blobs() -> None:
    g = torch.Generator().manual_seed(0)
    features = torch.cat([torch.randn(1, 50, 2, generator=g), torch.randn(1, 50, 2, generator=g) + 10], 1)
    assign = kmeans(features, 2, torch.Generator().manual_seed(0))[0]
    assert len(set(assign[:50].tolist())) == 1 and len(set(assign[50:].tolist())) == 1 and assign[0] != assign[50]


def test_terminal_oracle_records_answers_and_resumes(tmp_path: Path) -> None:
    items = torch.rand(4, 3)
    asked: list[str] = []
    replies = iter(["maybe", "n", "y"])

    def ask(prompt: str) -> str:
        asked.append(prompt)
        return next(replies)

    make = lambda ask_fn: TerminalOracle(items, torch.tensor([2, 0, 1, 3]), torch.tensor([10, 11, 12, 13]),  # noqa: E731
                                         "benign", torch.full((4,), 0.9), tmp_path, ["a", "b", "c"], ask_fn)
    oracle = make(ask)
    assert oracle(torch.zeros(1), torch.tensor([0])).tolist() == [True]      # item 12: "n" -> an error
    assert oracle(torch.zeros(1), torch.tensor([1])).tolist() == [False]     # item 10: "y"
    assert len(asked) == 3 and "item 12: a=" in asked[0] and "'benign' (0.90)" in asked[0]
    resumed = make(lambda prompt: pytest.fail("a resumed session must not ask again"))
    assert resumed(torch.zeros(1), torch.tensor([0])).tolist() == [True]
    image_oracle = TerminalOracle(torch.rand(2, 1, 5, 5), torch.tensor([0, 1]), torch.tensor([0, 1]), "coat",
                                  torch.full((2,), 0.8), tmp_path / "img", ask=lambda prompt: "y")
    assert image_oracle(torch.zeros(1), torch.tensor([1])).tolist() == [False]
    assert (tmp_path / "img" / "items" / "item_1.png").is_file()
