"""Factor gallery: what each factor of S does, before anyone audits anything.

``python examine.py audit=gallery world=shapes`` writes ``gallery.png``: one row per factor, its
range swept left to right, every other factor held at ``audit.base`` (unit-cube position), for each
of a few instances. No target needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from advaudit.config import typed
from advaudit.audits.settings import GalleryAuditConf
from advaudit.core.plots import plt, save_figure
from advaudit.models.targets.tracking import open_wandb
from advaudit.worlds import build_world
from advaudit.worlds.protocol import offered, unit_to_factor


def sweep_conditions(n_factors: int, steps: int, base: float, overrides: dict[int, float]) -> torch.Tensor:
    """``[C, steps, C]`` unit-cube conditions: row c sweeps factor c over [0, 1]."""
    u = torch.full((n_factors, steps, n_factors), base)
    for index, value in overrides.items():
        u[:, :, index] = value
    u[torch.arange(n_factors), :, torch.arange(n_factors)] = torch.linspace(0, 1, steps)
    return u


def run(cfg: DictConfig) -> dict[str, Any]:
    audit = typed(GalleryAuditConf, cfg.audit)
    world = build_world(cfg.world)
    steps = audit.steps
    z = world.instances(audit.split.value)
    index = torch.linspace(0, len(z) - 1, audit.n_instances).round().long()
    z = z.subset(index)
    names = [f.name for f in world.factors]
    overrides = {names.index(k): float(v) for k, v in (audit.base_overrides or {}).items()}
    u = sweep_conditions(len(names), steps, audit.base, overrides)
    out = Path(cfg.paths.output_dir)
    paths = []
    for i in range(len(z)):
        one = z.subset(torch.tensor([i]).to(z.labels.device))
        s = unit_to_factor(u.reshape(1, -1, len(names)), world.factors)
        images = world.render(one, s.to(offered(world, "device"))).cpu().view(len(names), steps, *world.image_shape)
        fig, axes = plt.subplots(len(names), steps, figsize=(steps * 1.0, len(names) * 1.05), squeeze=False)
        for r, factor in enumerate(world.factors):
            for c in range(steps):
                ax = axes[r, c]
                image = images[r, c]
                ax.imshow(image[0] if image.shape[0] == 1 else image.permute(1, 2, 0), cmap="gray", vmin=0, vmax=1)
                ax.set_xticks([])
                ax.set_yticks([])
                if c == 0:
                    ax.set_ylabel(factor.name, fontsize=6, rotation=0, ha="right", va="center")
                ax.set_title(f"{float(s[0, r * steps + c, r]):.3g}", fontsize=5)
        fig.suptitle(f"{world.class_names[int(one.labels[0])]} (instance {int(one.ids[0])})", fontsize=8)
        paths.append(save_figure(fig, out / f"gallery_{i}.png"))
    with open_wandb(cfg, job_type="examine", name="gallery") as wb:
        for i, path in enumerate(paths):
            wb.log_image(f"gallery/{i}", path)
    return {"galleries": [str(p) for p in paths], "factors": names}
