"""Adam without ``torch.optim``, whose optimisers' first call imports ``torch._dynamo`` (~2 s, with the inductor and
sympy): for what runs in every examination and every shard of a split audit (the RL examiner's policies, GAD's
pseudo-model), which would otherwise pay that import.

The update is ``torch.optim.Adam``'s on CPU and CUDA alike (its single-tensor path, no weight decay, no AMSGrad),
operation for operation: the same parameters to the bit, and the same state dict, so a checkpoint written with
either resumes with the other (``tests/examiners/test_adam.py``)."""

from __future__ import annotations

from typing import Any, Iterable

import torch
from torch import nn


class Adam:
    """Adam (Kingma and Ba, 2015) over ``params``: per element, ``m <- b1 m + (1 - b1) g``,
    ``v <- b2 v + (1 - b2) g^2``, ``p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``."""

    def __init__(self, params: Iterable[nn.Parameter], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.params = list(params)
        self.lr, self.betas, self.eps = float(lr), (float(betas[0]), float(betas[1])), float(eps)
        self.state: dict[int, dict[str, torch.Tensor]] = {}

    def zero_grad(self) -> None:
        for param in self.params:
            param.grad = None

    @torch.no_grad()
    def step(self) -> None:
        beta1, beta2 = self.betas
        for i, param in enumerate(self.params):
            if param.grad is None:
                continue
            grad = param.grad
            state = self.state.setdefault(i, {"step": torch.tensor(0.0), "exp_avg": torch.zeros_like(param),
                                              "exp_avg_sq": torch.zeros_like(param)})
            state["step"] += 1
            state["exp_avg"].lerp_(grad, 1 - beta1)
            state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            step = state["step"].item()
            step_size = self.lr / (1 - beta1 ** step)
            denom = (state["exp_avg_sq"].sqrt() / (1 - beta2 ** step) ** 0.5).add_(self.eps)
            param.addcdiv_(state["exp_avg"], denom, value=-step_size)

    def state_dict(self) -> dict[str, Any]:
        """``torch.optim.Adam``'s layout: ``state`` per parameter index and one parameter group."""
        group = {"lr": self.lr, "betas": self.betas, "eps": self.eps, "weight_decay": 0, "amsgrad": False,
                 "maximize": False, "foreach": None, "capturable": False, "differentiable": False, "fused": None,
                 "decoupled_weight_decay": False, "params": list(range(len(self.params)))}
        return {"state": {i: {k: v.clone() for k, v in s.items()} for i, s in self.state.items()},
                "param_groups": [group]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """A state dict of :meth:`state_dict` or of ``torch.optim.Adam`` over the same parameters."""
        group = state_dict["param_groups"][0]
        self.lr, self.betas, self.eps = float(group["lr"]), tuple(map(float, group["betas"])), float(group["eps"])
        self.state = {}
        for i, s in state_dict["state"].items():
            param = self.params[int(i)]
            self.state[int(i)] = {"step": s["step"].detach().to(torch.float32).cpu().clone(),
                                  "exp_avg": s["exp_avg"].detach().to(param).clone(),
                                  "exp_avg_sq": s["exp_avg_sq"].detach().to(param).clone()}
