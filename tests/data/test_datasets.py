"""Dataset readers on real data: Fashion-MNIST, sklearn's bundled sets, folders, torchvision, CSV."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from advaudit.data.fashion_mnist import FashionMNISTDataModule, read_idx
from advaudit.data.folders import ImageFolderDataModule, TorchvisionDataModule
from advaudit.data.sklearn_sets import DigitsDataModule, TabularDataModule
from advaudit.errors import AdvauditError
from tests.conftest import FMNIST_ROOT


def test_fashion_mnist_real_splits_and_seeded_val_carve() -> None:
    a = FashionMNISTDataModule(limit={"train": 1000}, seed=3)
    b = FashionMNISTDataModule(limit={"train": 1000}, seed=3)
    a.setup(), b.setup()
    train, test = a.split("train"), a.split("test")
    assert train.x.shape == (1000, 1, 28, 28) and len(test) == 10_000 and len(a.split("val")) == 6000
    assert 0.0 <= float(train.x.min()) and float(train.x.max()) <= 1.0
    assert torch.equal(train.y, b.split("train").y)  # same seed, same carve
    assert sorted(test.y.unique().tolist()) == list(range(10))
    assert a.class_names[0] == "t-shirt" and a.input_shape == (1, 28, 28)


def test_fashion_mnist_missing_root_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(AdvauditError, match="apt-get install -y dataset-fashion-mnist"):
        FashionMNISTDataModule(root=str(tmp_path)).setup()


def test_classes_option_keeps_and_renumbers() -> None:
    dm = FashionMNISTDataModule(classes=["sneaker", "sandal"], limit={"train": 500})
    dm.setup()
    assert dm.class_names == ["sneaker", "sandal"]
    assert set(dm.split("test").y.unique().tolist()) == {0, 1} and len(dm.split("test")) == 2000
    with pytest.raises(AdvauditError, match="does not exist"):
        FashionMNISTDataModule(classes=["sock"]).setup()


def test_digits_and_bundled_tables() -> None:
    digits = DigitsDataModule()
    assert digits.input_shape == (1, 8, 8) and digits.num_classes == 10
    wine = TabularDataModule(name="wine")
    assert wine.input_shape == (13,) and wine.num_classes == 3 and "alcohol" in wine.split("train").attributes
    total = sum(len(wine.split(s)) for s in ("train", "val", "test"))
    assert total == 178
    with pytest.raises(AdvauditError, match="unknown bundled table"):
        TabularDataModule(name="titanic").setup()


def test_csv_tables_and_non_numeric_columns(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    good = tmp_path / "good.csv"
    rows = ["a,b,label"] + [f"{rng.normal()},{rng.normal()},{'yes' if i % 2 else 'no'}" for i in range(60)]
    good.write_text("\n".join(rows))
    dm = TabularDataModule(path=str(good))
    assert dm.class_names == ["no", "yes"] and dm.input_shape == (2,)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,colour,label\n1,red,0\n2,blue,1\n")
    with pytest.raises(AdvauditError, match=r"non-numeric feature column\(s\) \['colour'\]"):
        TabularDataModule(path=str(bad)).setup()
    with pytest.raises(AdvauditError, match="does not exist"):
        TabularDataModule(path=str(tmp_path / "nope.csv")).setup()


def test_image_folder_reads_classes_and_resizes(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for cls, level in (("dark", 30), ("light", 220)):
        (tmp_path / cls).mkdir()
        for i in range(10):
            pixels = np.clip(rng.normal(level, 10, (20, 24, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(tmp_path / cls / f"{i}.png")
    dm = ImageFolderDataModule(root=str(tmp_path), image_size=16, channels=3, test_fraction=0.2, val_fraction=0.0)
    dm.setup()
    assert dm.class_names == ["dark", "light"] and dm.input_shape == (3, 16, 16)
    x, y = dm.split("train").x, dm.split("train").y
    assert len(dm.split("test")) == 4 and len(x) == 16
    assert (x[y == 1].mean() > 0.7) and (x[y == 0].mean() < 0.3)
    with pytest.raises(AdvauditError, match="does not exist"):
        ImageFolderDataModule(root=str(tmp_path / "missing")).setup()


def _write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


def test_torchvision_dataset_class_on_disk(tmp_path: Path) -> None:
    """torchvision's own FashionMNIST class over a 200-image slice of the real files."""
    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    for prefix, n in (("train", 200), ("t10k", 100)):
        images = read_idx(FMNIST_ROOT / f"{prefix}-images-idx3-ubyte.gz")[:n]
        labels = read_idx(FMNIST_ROOT / f"{prefix}-labels-idx1-ubyte.gz")[:n]
        _write_idx(raw / f"{prefix}-images-idx3-ubyte", images)
        _write_idx(raw / f"{prefix}-labels-idx1-ubyte", labels)
    dm = TorchvisionDataModule(name="FashionMNIST", root=str(tmp_path), image_size=28, channels=1)
    dm.setup()
    assert dm.input_shape == (1, 28, 28) and len(dm.split("test")) == 100
    reference = torch.from_numpy(read_idx(FMNIST_ROOT / "t10k-images-idx3-ubyte.gz")[:100].copy()).float() / 255
    assert torch.allclose(dm.split("test").x[:, 0], reference, atol=1e-6)
    assert dm.class_names[0].lower().startswith("t-shirt")
    with pytest.raises(AdvauditError, match="no dataset class"):
        TorchvisionDataModule(name="NotADataset", root=str(tmp_path)).setup()
