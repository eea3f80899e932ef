"""Label preservation, measured: which conditions ``s`` still show an instance as its class.

The examiner paper requires S to be chosen so that every condition preserves the label as a
human would judge it (its Sec. 2.1); a failure found outside that set is not a weakness of the
model. advaudit checks every proposal and counts failures only on valid ones:

- **geometric checks** from the world itself (``world.render_checked(z, s, rules)``, computed in
  the same pass as the images): ShapeWorld asks that the whole object is in frame and spans at
  least ``min_extent`` of the frame; TransformWorld that at least ``min_content_kept`` of the image's content
  stays in frame. A world without ``render_checked`` has no geometric check (all pass).
- a **reference judge**: a strong model, trained on the same world with many fresh renders, whose
  *confident correct* answer (probability of the true class >= ``reference_min_prob``; unset, the
  world's own threshold, :func:`min_prob`) stands in for the human. ``reference=world`` (the default) is the world's own (``world.reference_judge()``:
  ShapeWorld's packaged judge where it was trained; none for a world without one),
  ``reference=<target.pt>`` another, ``reference=null`` none. When the reference takes another
  image size than the target, the world renders the same scenes again at its size
  (``world.with_image_size``), or takes every k-th pixel of its own renders where that gives the same
  image (``world.subsample``: ShapeWorld at 224 px for a 32-px judge). The worst-case audit asks it
  only about the proposals that can change a reported number (:mod:`advaudit.audits.lazy_validity`).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor

from advaudit.worlds.settings import ValidityConf, WORLD_REFERENCE
from advaudit.errors import require
from advaudit.models import load_target
from advaudit.models.targets.classes import align_target
from advaudit.worlds.protocol import Instances, World, offered

REFERENCE_CHECK = "reference"


class ValidityJudge:
    """Renders conditions and says which of them preserve the label.

    Args:
        world: the world under examination.
        rules: the ``audit.validity`` settings (:class:`advaudit.worlds.settings.ValidityConf`).
        device: where the reference judge runs (the target's device).
    """

    def __init__(self, world: World, rules: ValidityConf, device: str | torch.device = "cpu") -> None:
        self.world, self.rules = world, rules
        self.reference = None
        self.reference_world = world
        self.reference_path = reference_path(world, rules.reference)
        self.min_prob = min_prob(world, rules)
        if self.reference_path is not None:
            path = self.reference_path
            self.reference = align_target(load_target(path, device=str(device)), list(world.class_names),
                                          "the world (as the reference judge audit.validity.reference sees it)")
            shape = tuple(self.reference.input_shape)
            if shape != tuple(world.image_shape):
                resize = offered(world, "with_image_size")
                require(resize is not None and shape[0] == world.image_shape[0] and shape[1] == shape[2],
                        f"the reference judge takes images of shape {list(shape)} and this world renders "
                        f"{list(world.image_shape)} and cannot change its size; give a reference of the world's size")
                self.reference_world = resize(int(shape[-1]))

    @property
    def checks(self) -> list[str]:
        """Names of the checks this judge applies, in report order."""
        names = []
        if offered(self.world, "render_checked") is not None:
            names += ["in_frame"] if self.rules.in_frame else []
            names += ["min_extent"] if self.rules.min_extent > 0 and _has_height(self.world) else []
        return names + ([REFERENCE_CHECK] if self.reference is not None else [])

    def render(self, z: Instances, s: Tensor) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
        """Render ``s`` ``[N, q, C]`` (factor units) and judge all of it.

        Returns images ``[N*q, ...]``, ``valid`` ``[N, q]`` bool (every check passed) and each check
        ``{name: [N, q] bool}`` (True = passed).
        """
        images, checks = self.render_geometric(z, s)
        if self.reference is not None:
            checks[REFERENCE_CHECK] = self.reference_verdicts(z, s, images)
        valid = torch.ones(s.shape[:2], dtype=torch.bool)
        for passed in checks.values():
            valid &= passed
        return images, valid, checks

    def render_geometric(self, z: Instances, s: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Render ``s`` ``[N, q, C]``: images ``[N*q, ...]`` and the geometric checks ``{name: [N, q] bool}``
        (computed in the same pass; the reference judge's verdicts come from :meth:`reference_verdicts`)."""
        n, q = s.shape[:2]
        render_checked = offered(self.world, "render_checked")
        if render_checked is not None:
            images, raw = render_checked(z, s, self.rules)
        else:
            images, raw = self.world.render(z, s), {}
        return images, {name: raw[name].reshape(n, q).cpu() for name in self.checks if name in raw}

    def reference_verdicts(self, z: Instances, s: Tensor, images: Tensor, which: Tensor | None = None) -> Tensor:
        """The reference judge's verdicts ``[N, q]`` bool on the conditions ``s`` ``[N, q, C]`` rendered as
        ``images`` ``[N*q, ...]``: the true class, at least :attr:`min_prob` sure. With ``which``
        ``[N, q]`` bool only those are judged (one batch) and the others are False."""
        n, q = s.shape[:2]
        everything = which is None
        which = torch.ones(n, q, dtype=torch.bool) if which is None else which.cpu()
        verdicts = torch.zeros(n, q, dtype=torch.bool)
        if not bool(which.any()):
            return verdicts
        rows, cols = which.nonzero(as_tuple=True)
        small = None if images is None or self.reference_world is self.world else self._subsampled(images)
        if self.reference_world is self.world or small is not None:
            images = images if small is None else small
            shown = images if everything else images[(rows * q + cols).to(images.device)]
        else:  # the reference's own size: render the judged conditions again, one per pseudo-instance
            shown = self.reference_world.render(z.subset(rows.to(z.labels.device)), s[rows, cols][:, None])
        probs = self.reference.predict_proba(shown, calibrated=True)
        labels = z.labels[rows.to(z.labels.device)].to(probs.device)
        confident = probs.gather(1, labels[:, None]).squeeze(1) >= self.min_prob
        verdicts[rows, cols] = (confident & (probs.argmax(1) == labels)).cpu()
        return verdicts

    def _subsampled(self, images: Tensor) -> Tensor | None:
        """``images`` at the reference's own size taken from the world's own renders where the world can
        (``world.subsample``: the same pixels as rendering again), else None."""
        subsample = offered(self.world, "subsample")
        return None if subsample is None else subsample(images, int(self.reference.input_shape[-1]))


def min_prob(world: World, rules: ValidityConf) -> float:
    """The reference judge's threshold: ``audit.validity.reference_min_prob`` where set, else the world's own
    ``reference_min_prob`` (declared where the world's judge was measured), else :data:`advaudit.worlds.protocol.DEFAULT_MIN_PROB`."""
    if rules.reference_min_prob is not None:
        return float(rules.reference_min_prob)
    return float(offered(world, "reference_min_prob"))


def reference_path(world: World, reference: str | None) -> Path | None:
    """The reference judge's file named by ``audit.validity.reference``: ``world`` -> the world's own
    (None for a world without one), a path -> that file, null -> None."""
    if not reference:
        return None
    if str(reference) == WORLD_REFERENCE:
        own = offered(world, "reference_judge")
        return own() if own is not None else None
    return Path(str(reference)).expanduser()


def independent_verdicts(world: World, judge_path: str | Path, z: Instances, worst_s: Tensor, random_s: Tensor,
                         device: str | torch.device = "cpu") -> tuple[Tensor, Tensor]:
    """An independent judge's own verdicts (argmax = true class; no geometric check, no threshold):
    on each instance's worst condition ``worst_s`` ``[N, C]`` -> ``[N]`` bool, and on the same instances under
    ``random_s`` ``[N, R, C]`` -> ``[N, R]`` bool (its baseline: their mean is its accuracy there)."""
    rules = ValidityConf(in_frame=False, min_extent=0.0, min_content_kept=0.0, reference=str(judge_path),
                         reference_min_prob=0.0)
    judge = ValidityJudge(world, rules, device=device)
    _, _, checks = judge.render(z, worst_s.unsqueeze(1).to(device))
    _, _, random_checks = judge.render(z, random_s.to(device))
    return checks[REFERENCE_CHECK][:, 0], random_checks[REFERENCE_CHECK]


def mask_checks(masks: Tensor, min_extent: float) -> dict[str, Tensor]:
    """The geometric checks of a rendered 3D world from its object masks ``[B, H, W]`` bool.

    Returns ``{"in_frame", "min_extent"}``, each ``[B]`` bool (True = passed): no object pixel on
    the image border, and an object extent of at least ``min_extent`` of the frame's side along its
    longer image axis (the share of rows or of columns it spans; 0 for an empty mask).
    """
    border = masks[:, 0].any(1) | masks[:, -1].any(1) | masks[:, :, 0].any(1) | masks[:, :, -1].any(1)
    rows, cols = masks.any(2), masks.any(1)
    extent = torch.maximum(_span(rows) / masks.shape[1], _span(cols) / masks.shape[2])
    return {"in_frame": ~border, "min_extent": extent >= float(min_extent) - 1e-9}


def _span(occupied: Tensor) -> Tensor:
    """Extent in pixels ``[B]`` of the True entries of ``occupied`` ``[B, L]`` (0 where none)."""
    index = torch.arange(occupied.shape[1], device=occupied.device)
    first = torch.where(occupied, index, occupied.shape[1]).amin(1)
    last = torch.where(occupied, index, -1).amax(1)
    return (last - first + 1).clamp_min(0)


def _has_height(world: World) -> bool:
    """Whether the world's geometric checks include an object height (rendered 3D worlds do)."""
    return bool(offered(world, "checks_object_height"))
