"""GAD's pseudo-model fit: the plain loop gives the weights Lightning's ``Trainer.fit`` gave, to the bit, and a
pool design's labels the caller knows give the model asking for them gives."""

from __future__ import annotations

import copy

import pytest
import pytorch_lightning as pl
import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset

from advaudit.errors import AdvauditError
from advaudit.search.pseudo_model import PseudoModel, extract_pseudo_model, fit_pseudo_model
from advaudit.search.settings import PseudoModelConf


class _LightningFit(pl.LightningModule):
    """The pseudo-model as Lightning fitted it before (MSE, Adam at the model's rate)."""

    def __init__(self, model: PseudoModel) -> None:
        super().__init__()
        self.model = model

    def training_step(self, batch: tuple[Tensor, Tensor], _: int) -> Tensor:
        x, c = batch
        return nn.functional.mse_loss(self.model(x), c)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.model.parameters(), lr=self.model.lr)


def _loader(x: Tensor, c: Tensor) -> DataLoader:
    return DataLoader(TensorDataset(x, c), batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(4))


def test_the_plain_fit_gives_lightnings_weights_to_the_bit() -> None:
    x = torch.rand(200, 2, 3, generator=torch.Generator().manual_seed(1))
    c = torch.sigmoid(4 * (x[:, 0, 0] - x[:, 1, 2]))                  # a smooth black box's confidence [200]
    torch.manual_seed(2)
    model = PseudoModel((2, 3), [16, 8], x.mean(0), x.std(0), lr=3e-3)
    before = copy.deepcopy(model.state_dict())
    reference = copy.deepcopy(model)
    fit_pseudo_model(model, _loader(x, c), epochs=3)                    # 7 batches (the last one short) x 3
    pl.Trainer(max_epochs=3, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
               enable_model_summary=False).fit(_LightningFit(reference), _loader(x, c))
    for key, value in model.state_dict().items():
        assert torch.equal(value, reference.state_dict()[key]), key
    untrained = PseudoModel((2, 3), [16, 8], x.mean(0), x.std(0))
    untrained.load_state_dict(before)
    with torch.no_grad():                                               # it did learn
        assert float(nn.functional.mse_loss(model(x), c)) < float(nn.functional.mse_loss(untrained(x), c))


def test_known_labels_of_a_pool_design_give_the_model_asking_gives() -> None:
    data = torch.rand(120, 4, generator=torch.Generator().manual_seed(6))
    asked: list[int] = []

    def black_box(b: Tensor) -> Tensor:
        asked.append(len(b))
        return torch.sigmoid(3 * (b[:, 0] - b[:, 3]))

    settings = PseudoModelConf(design="pool", hidden=[8], epochs=2, batch_size=16)
    torch.manual_seed(0)
    model, r2 = extract_pseudo_model(black_box, data, settings)
    assert asked == [120]
    torch.manual_seed(0)
    again, r2_again = extract_pseudo_model(black_box, data, settings, known=black_box(data))
    assert asked == [120, 120] and r2_again == r2                      # the known labels, not asked again
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in model.state_dict().items())
    with pytest.raises(AdvauditError, match="known labels"):
        extract_pseudo_model(black_box, data, settings, known=torch.zeros(5))
