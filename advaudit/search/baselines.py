"""The published error-search methods, each batched over ``R`` pools (see :mod:`advaudit.search.policy`).

Each is one class here plus one YAML ``conf/search/method/<name>.yaml`` naming it with ``_target_``
(:mod:`advaudit.search.methods`). Choices the papers leave open are constructor arguments, declared
with their defaults and ranges in :mod:`advaudit.search.settings` (the YAML names that dataclass) and
listed in docs/audits/error-search.md:

``random`` (:class:`RandomOrder`, a seeded permutation), ``low_confidence`` (:class:`LowConfidence`,
    confidence ascending) and a scorer's ranking (:class:`ScoreOrder`: adversarial distance, GAD):
    static orders.
``lakkaraju``: Bansal & Weld's re-implementation of Lakkaraju et al. (2017), which is what the
    papers ran: k-means clusters of the derived feature space as arms of a UCB1 bandit whose
    reward is "high-confidence error found" (uniform oracle cost only shifts every arm equally);
    within an arm the item is drawn at random.
``bansal_weld``: Bansal & Weld's (2018) adaptive greedy as their code (run by the adversarial-distance
    paper) does it: clusters on confidence then features, prior ``1 - c`` updated per cluster, next
    query ``argmax P(error) * U(Q + x)`` on the coverage utility (see :class:`BansalWeldCoverage`).
``facility_locations``: Maurer & Bennette (2019): utility ``a sum log(1/(1-c))`` over found errors
    ``- (1-a)/n sum_x min-distance(x, found errors)``; next query maximises ``P(error) * gain``, with
    ``P(error)`` from a ridge logistic-regression meta-model on [features, confidence] refitted after
    every answer once both outcomes are seen, ``1 - c`` before that.

Facility distances sum over ``anchors`` seeded random items per pool; Bansal & Weld's coverage over each
item's nearest neighbours (exact for their narrow kernel; :mod:`advaudit.search.coverage`).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from advaudit.config import typed
from advaudit.search.coverage import NeighbourCoverage
from advaudit.search.policy import PoolBatch
from advaudit.search.settings import BansalWeldConf, FacilityLocationsConf, LakkarajuConf


class _Masked:
    """Shared state: which items of each pool were queried."""

    name = "policy"

    def start(self, pools: PoolBatch, generator: torch.Generator) -> None:
        self.pools, self.generator = pools, generator
        self.queried = torch.zeros(pools.shape, dtype=torch.bool)
        self.rows = torch.arange(pools.shape[0])

    def _pick(self, value: Tensor) -> Tensor:
        """``[R]`` argmax of ``value`` ``[R, P]`` over unqueried items."""
        return value.masked_fill(self.queried, -math.inf).argmax(1)

    def observe(self, positions: Tensor, is_error: Tensor) -> None:
        self.queried[self.rows, positions] = True


class RankingPolicy(_Masked):
    """Query in ascending order of a per-item key ``[R, P]`` (:meth:`key`); ties are broken at random."""

    def key(self, pools: PoolBatch) -> Tensor | None:
        """``[R, P]`` the value each pool is queried in ascending order of (``None``: random order)."""
        raise NotImplementedError

    def start(self, pools: PoolBatch, generator: torch.Generator) -> None:
        super().start(pools, generator)
        noise = torch.rand(pools.shape, generator=generator, dtype=torch.float64)
        key = self.key(pools)
        self.order = (noise if key is None else key.double() + 1e-9 * noise).argsort(1)
        self.step = 0

    def next(self) -> Tensor:
        chosen = self.order[:, self.step]
        self.step += 1
        return chosen


class RandomOrder(RankingPolicy):
    """The baseline every method is measured against: each pool in a seeded random order."""

    name = "random"

    def key(self, pools: PoolBatch) -> None:
        return None  # the tie-breaking noise alone: a uniform random permutation per pool


class LowConfidence(RankingPolicy):
    """Each pool in ascending calibrated confidence of the predicted class."""

    name = "low_confidence"

    def key(self, pools: PoolBatch) -> Tensor:
        return pools.confidence


class ScoreOrder(RankingPolicy):
    """Each pool in ascending order of a scorer's per-item score ``pools.scores[score]`` (``[R, P]``):
    how the audit queries with a :class:`advaudit.search.methods.Scorer`."""

    def __init__(self, score: str) -> None:
        self.name = self.score = score

    def key(self, pools: PoolBatch) -> Tensor:
        return pools.scores[self.score]


def kmeans(features: Tensor, k: int, generator: torch.Generator, iterations: int = 25) -> Tensor:
    """Batched Lloyd's k-means: ``features`` ``[R, P, D]`` -> cluster ids ``[R, P]`` (seeded init)."""
    r, p, _ = features.shape
    k = min(k, p)
    start = torch.rand(r, p, generator=generator).argsort(1)[:, :k]
    centers = features.gather(1, start[..., None].expand(-1, -1, features.shape[2])).clone()
    for _ in range(iterations):
        assign = torch.cdist(features, centers).argmin(2)
        one_hot = torch.nn.functional.one_hot(assign, k).to(features.dtype)  # [R, P, k]
        counts = one_hot.sum(1)[..., None]
        updated = one_hot.transpose(1, 2) @ features / counts.clamp_min(1)
        centers = torch.where(counts > 0, updated, centers)
    return torch.cdist(features, centers).argmin(2)


class LakkarajuBandit(_Masked):
    """UCB1 over k-means clusters (Bansal & Weld's re-implementation of Lakkaraju et al. 2017)."""

    name = "lakkaraju"

    def __init__(self, **settings: Any) -> None:
        """``settings``: :class:`~advaudit.search.settings.LakkarajuConf`'s fields (``clusters``, ``exploration``)."""
        own = typed(LakkarajuConf, settings)
        self.clusters, self.exploration = own.clusters, own.exploration

    def start(self, pools: PoolBatch, generator: torch.Generator) -> None:
        super().start(pools, generator)
        self.assign = kmeans(pools.features, self.clusters, generator)
        k = int(self.assign.max()) + 1
        self.pulls = torch.zeros(pools.shape[0], k)
        self.rewards = torch.zeros(pools.shape[0], k)
        self.priority = torch.rand(pools.shape, generator=generator)
        self.k = k

    def next(self) -> Tensor:
        one_hot = torch.nn.functional.one_hot(self.assign, self.k).bool()        # [R, P, k]
        remaining = (one_hot & ~self.queried[..., None]).any(1)                   # [R, k]
        total = self.pulls.sum(1, keepdim=True).clamp_min(1)
        ucb = self.rewards / self.pulls.clamp_min(1) + torch.sqrt(
            self.exploration * total.log() / self.pulls.clamp_min(1))
        ucb = torch.where(self.pulls == 0, torch.full_like(ucb, 1e9), ucb)
        ucb = ucb + 1e-6 * torch.rand(ucb.shape, generator=self.generator)       # random tie-break
        arm = ucb.masked_fill(~remaining, -math.inf).argmax(1)                    # [R]
        in_arm = self.assign == arm[:, None]
        return self._pick(self.priority.masked_fill(~in_arm, -1.0))

    def observe(self, positions: Tensor, is_error: Tensor) -> None:
        arm = self.assign[self.rows, positions]
        self.pulls[self.rows, arm] += 1
        self.rewards[self.rows, arm] += is_error.float()
        super().observe(positions, is_error)


def _anchor_distances(features: Tensor, anchors: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Distances ``[R, P, A]`` from every item to ``A`` seeded random items of the same pool, and
    those anchors' positions ``[R, A]``."""
    r, p, d = features.shape
    pick = torch.rand(r, p, generator=generator).argsort(1)[:, :min(anchors, p)]
    anchor_features = features.gather(1, pick[..., None].expand(-1, -1, d))
    return torch.cdist(features, anchor_features), pick


def masked_kmeans(features: Tensor, mask: Tensor, k: int, generator: torch.Generator,
                  iterations: int = 25) -> tuple[Tensor, Tensor]:
    """Lloyd's k-means in ``G`` groups at once, each over its own items.

    ``features`` ``[G, P, D]``, ``mask`` ``[G, P]`` (which items belong to the group). Returns cluster
    ids ``[G, P]`` (meaningless outside the mask) and each group's mean squared distance to its
    centres ``[G]`` (sklearn's inertia / n, the elbow's score). Seeded random initial centres.
    """
    g, p, d = features.shape
    key = torch.rand(g, p, generator=generator).masked_fill(~mask, -1.0)
    start = key.topk(min(k, p), dim=1).indices
    centers = features.gather(1, start[..., None].expand(-1, -1, d)).clone()
    weight = mask.to(features.dtype)[..., None]
    for _ in range(iterations):
        assign = torch.cdist(features, centers).argmin(2)
        one_hot = torch.nn.functional.one_hot(assign, centers.shape[1]).to(features.dtype) * weight
        counts = one_hot.sum(1)[..., None]
        updated = one_hot.transpose(1, 2) @ features / counts.clamp_min(1)
        centers = torch.where(counts > 0, updated, centers)
    distance = torch.cdist(features, centers)
    assign = distance.argmin(2)
    sse = (distance.amin(2) ** 2 * mask).sum(1) / mask.sum(1).clamp_min(1)
    return assign, sse


def elbow_kmeans(features: Tensor, mask: Tensor, generator: torch.Generator, max_k: int = 5) -> Tensor:
    """Bansal & Weld's ``elbow``: fit k = 2..max_k, pick ``k = K[argmax(diff ratio)] + 1`` per group.

    ``diff = SSE_{k+1} - SSE_k``; the chosen k is where ``diff_{k+1} / diff_k`` peaks, plus one (their
    code, ``clustering.elbow``). Returns the chosen fit's cluster ids ``[G, P]``.
    """
    ks = list(range(2, max_k + 1))
    fits = [masked_kmeans(features, mask, k, generator) for k in ks]
    sse = torch.stack([f[1] for f in fits], 1)                           # [G, len(ks)]
    diff = sse.diff(dim=1)
    ratio = torch.nan_to_num(diff[:, 1:] / diff[:, :-1], nan=-math.inf, posinf=-math.inf)
    chosen = ratio.argmax(1) + 1                                          # index into ks of K[argmax] + 1
    assigns = torch.stack([f[0] for f in fits], 1)                        # [G, len(ks), P]
    return assigns[torch.arange(len(chosen)), chosen]


def confidence_then_feature_clusters(features: Tensor, confidence: Tensor, generator: torch.Generator,
                                     max_k: int = 5) -> Tensor:
    """Bansal & Weld's ``kmeans_both`` clusters ``[R, P]``: k-means on the confidence (elbow), then
    k-means on the features inside each confidence cluster (elbow). ``features`` ``[R, P, D]``."""
    r, p, d = features.shape
    everything = torch.ones(r, p, dtype=torch.bool)
    by_confidence = elbow_kmeans(confidence.float()[..., None], everything, generator, max_k)   # [R, P]
    groups = int(by_confidence.max()) + 1
    member = torch.stack([by_confidence == c for c in range(groups)], 1)                      # [R, C, P]
    inner = elbow_kmeans(features[:, None].expand(-1, groups, -1, -1).reshape(r * groups, p, d),
                         member.reshape(r * groups, p), generator, max_k).view(r, groups, p)
    return by_confidence * max_k + inner.gather(1, by_confidence[:, None]).squeeze(1)


class BansalWeldCoverage(_Masked):
    """Bansal & Weld (2018) adaptive greedy on their coverage utility, as the paper ran it.

    From their code (``optim.adap_greedy('conf', submod, B, 'cluster', k, clusters)``):
    clusters = k-means on confidence, then on the features within each (:func:`confidence_then_feature_clusters`);
    prior ``P(error | x) = 1 - c_x``, updated per cluster after every answer to
    ``(2 (1 - c_x) + errors in x's cluster) / (2 + queries in x's cluster)``; next query
    ``argmax_x P(error | x) * U(Q + x)`` with ``U`` the coverage utility of :mod:`advaudit.search.coverage`
    (``score: published``). ``score: expected_gain`` uses ``P(error | x) * (U(Q + x) - U(Q))`` instead,
    the expected marginal gain of the greedy in their paper's text.
    """

    name = "bansal_weld"

    def __init__(self, **settings: Any) -> None:
        """``settings``: :class:`~advaudit.search.settings.BansalWeldConf`'s fields (``variance``,
        ``neighbours``, ``max_k``, ``prior_strength``, ``score``)."""
        own = typed(BansalWeldConf, settings)
        self.variance, self.neighbours, self.max_k = own.variance, own.neighbours, own.max_k
        self.prior_strength, self.score = own.prior_strength, own.score

    def start(self, pools: PoolBatch, generator: torch.Generator) -> None:
        super().start(pools, generator)
        self.assign = confidence_then_feature_clusters(pools.features, pools.confidence, generator, self.max_k)
        k = int(self.assign.max()) + 1
        self.errors = torch.zeros(pools.shape[0], k, dtype=torch.float64)
        self.trials = torch.zeros(pools.shape[0], k, dtype=torch.float64)
        self.prior = 1 - pools.confidence.double()
        self.coverage = NeighbourCoverage(pools.features, pools.confidence, self.neighbours, self.variance)

    def p_error(self) -> Tensor:
        """``[R, P]`` the cluster-updated prior."""
        errors, trials = self.errors.gather(1, self.assign), self.trials.gather(1, self.assign)
        return (self.prior_strength * self.prior + errors) / (self.prior_strength + trials)

    def next(self) -> Tensor:
        gain = self.coverage.gain_if_error()
        if self.score == "published":
            gain = gain + self.coverage.utility()[:, None]
        return self._pick(self.p_error() * gain)

    def observe(self, positions: Tensor, is_error: Tensor) -> None:
        cluster = self.assign[self.rows, positions]
        self.trials[self.rows, cluster] += 1
        self.errors[self.rows, cluster] += is_error.double()
        self.coverage.add_errors(positions, is_error)
        super().observe(positions, is_error)


def fit_logistic(x: Tensor, y: Tensor, weight: Tensor, ridge: float = 1.0, iterations: int = 8) -> Tensor:
    """Batched ridge logistic regression by Newton's method.

    ``x`` ``[R, n, F]`` (a bias column included by the caller), ``y`` ``[R, n]`` in {0, 1}, ``weight``
    ``[R, n]`` (0 for padding rows). Returns coefficients ``[R, F]``.
    """
    r, _, f = x.shape
    w = torch.zeros(r, f, dtype=x.dtype)
    eye = torch.eye(f, dtype=x.dtype) * ridge
    for _ in range(iterations):
        p = torch.sigmoid((x @ w[..., None]).squeeze(-1))
        grad = (x * ((p - y) * weight)[..., None]).sum(1) + ridge * w
        hess = x.transpose(1, 2) @ (x * (p * (1 - p) * weight)[..., None]) + eye
        w = w - torch.linalg.solve(hess, grad[..., None]).squeeze(-1)
    return w


class FacilityLocations(_Masked):
    """Maurer & Bennette (2019): facility-locations utility with a logistic meta-model of error."""

    name = "facility_locations"

    def __init__(self, **settings: Any) -> None:
        """``settings``: :class:`~advaudit.search.settings.FacilityLocationsConf`'s fields (``alpha``,
        ``anchors``, ``ridge``)."""
        own = typed(FacilityLocationsConf, settings)
        self.alpha, self.anchors, self.ridge = own.alpha, own.anchors, own.ridge

    def start(self, pools: PoolBatch, generator: torch.Generator) -> None:
        super().start(pools, generator)
        r, p = pools.shape
        self.distance, _ = _anchor_distances(pools.features, self.anchors, generator)  # [R, P, A]
        self.nearest_error = self.distance.amax((1, 2))[:, None].expand(r, self.distance.shape[2]).clone()
        confidence = pools.confidence.double().clamp(max=1 - 1e-6)
        self.confidence_gain = self.alpha * torch.log(1 / (1 - confidence))        # [R, P]
        self.meta_x = torch.cat([torch.ones(r, p, 1, dtype=torch.float64), pools.features.double(),
                                 confidence[..., None]], 2)                          # [R, P, F]
        mean, std = self.meta_x.mean(1, keepdim=True), self.meta_x.std(1, keepdim=True).clamp_min(1e-8)
        self.meta_x[..., 1:] = ((self.meta_x - mean) / std)[..., 1:]
        self.labels = torch.zeros(r, p, dtype=torch.float64)
        self.p_error = (1 - confidence).clone()
        self.asked: list[Tensor] = []                                                  # [R] per query so far

    def next(self) -> Tensor:
        shrink = (self.nearest_error[:, None, :] - self.distance).clamp_min(0).sum(2)   # [R, P]
        facility = (1 - self.alpha) * shrink / self.distance.shape[2]
        return self._pick(self.p_error * (self.confidence_gain + facility))

    def observe(self, positions: Tensor, is_error: Tensor) -> None:
        super().observe(positions, is_error)
        found = is_error[:, None]
        self.nearest_error = torch.where(found, torch.minimum(self.nearest_error, self.distance[self.rows, positions]),
                                         self.nearest_error)
        self.labels[self.rows, positions] = is_error.double()
        self.asked.append(positions)
        asked = torch.stack(self.asked, 1)                                            # [R, t] queried positions
        answers = self.labels.gather(1, asked)                                        # [R, t]
        seen_error = answers.sum(1)
        both = (seen_error > 0) & (seen_error < asked.shape[1])
        if bool(both.any()):
            # the meta-model's data are the t queried items of each pool (the others would enter with weight 0)
            x = self.meta_x[both].gather(1, asked[both][..., None].expand(-1, -1, self.meta_x.shape[2]))
            w = fit_logistic(x, answers[both], torch.ones_like(answers[both]), ridge=self.ridge)
            fitted = torch.sigmoid((self.meta_x[both] @ w[..., None]).squeeze(-1))
            self.p_error[both] = fitted
