"""Small real datasets bundled with scikit-learn (no download) and CSV tables.

``DigitsDataModule``: 1,797 handwritten digits as ``[1, 8, 8]`` images.
``TabularDataModule``: breast cancer, wine, digits-as-table or any numeric CSV, as ``[F]`` rows in
raw units (the target model standardises with the training statistics it stores).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from advaudit.data.base import ArrayDataModule
from advaudit.data.split import Split
from advaudit.errors import AdvauditError, require
from advaudit.files import describe_path, sniff

_BUNDLED = ("breast_cancer", "wine", "digits", "iris")
# real tables statsmodels ships (no download): name -> (loader, label column, label rule, class names)
_STATSMODELS = {
    "fair": ("fair", "affairs", lambda v: (v > 0).astype(int), ["no_affair", "affair"]),
    "anes96": ("anes96", "vote", lambda v: v.astype(int), ["clinton", "dole"]),
}


def _carve_test(x: np.ndarray, y: np.ndarray, fraction: float, seed: int) -> dict[str, Split]:
    """Stratified seeded train/test split of arrays into :class:`Split`s."""
    from sklearn.model_selection import train_test_split  # scikit-learn is slow to import; only this path needs it

    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=fraction, random_state=seed, stratify=y)
    to_split = lambda a, b: Split(torch.as_tensor(a, dtype=torch.float32),  # noqa: E731
                                  torch.as_tensor(b, dtype=torch.long))
    return {"train": to_split(x_tr, y_tr), "test": to_split(x_te, y_te)}


class DigitsDataModule(ArrayDataModule):
    """sklearn's 8x8 handwritten digits as images in [0, 1] (pixel values / 16)."""

    def __init__(self, test_fraction: float = 0.25, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.test_fraction = test_fraction

    def load_splits(self) -> tuple[dict[str, Split], list[str]]:
        from sklearn.datasets import load_digits  # scikit-learn is slow to import; only this path needs it

        data = load_digits()
        x = (data.images / 16.0).astype(np.float32)[:, None]
        return _carve_test(x, data.target, self.test_fraction, self.seed), [str(c) for c in range(10)]


class TabularDataModule(ArrayDataModule):
    """A real table: a bundled sklearn dataset by ``name`` or a CSV file by ``path``.

    Args:
        name: sklearn's ``breast_cancer``, ``wine``, ``digits``, ``iris``, or statsmodels' ``fair``
            (6,366 women, any affair) and ``anes96`` (944 voters, Clinton vs Dole); ignored when
            ``path`` is set.
        path: CSV file with a header row; all columns but ``label_column`` must be numeric.
        label_column: name of the label column in the CSV.
        test_fraction: stratified share held out for testing (seeded).
    """

    kind = "tabular"

    def __init__(self, name: str = "breast_cancer", path: str | None = None,
                 label_column: str = "label", test_fraction: float = 0.25, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name, self.path, self.label_column = name, path, label_column
        self.test_fraction = test_fraction
        self.feature_names: list[str] = []

    def load_splits(self) -> tuple[dict[str, Split], list[str]]:
        x, y, class_names = self._read_csv() if self.path else self._read_bundled()
        splits = _carve_test(x, y, self.test_fraction, self.seed)
        for split in splits.values():  # columns double as named attributes for bias injection
            split.attributes.update({n: split.x[:, i] for i, n in enumerate(self.feature_names)})
        return splits, class_names

    def _read_bundled(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        import sklearn.datasets as sk  # scikit-learn is slow to import; only this path needs it

        if self.name in _STATSMODELS:
            return self._read_statsmodels()
        require(self.name in _BUNDLED, f"unknown bundled table {self.name!r}; use one of "
                f"{_BUNDLED + tuple(_STATSMODELS)} or dataset.path=<file.csv>")
        data = getattr(sk, f"load_{self.name}")()
        self.feature_names = [str(f).replace(" ", "_") for f in data.feature_names]
        return data.data.astype(np.float32), data.target, [str(c) for c in data.target_names]

    def _read_statsmodels(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        import statsmodels.api as sm  # statsmodels is slow to import; only this path needs it

        loader, label, rule, class_names = _STATSMODELS[self.name]
        frame = getattr(sm.datasets, loader).load_pandas().data
        features = frame.drop(columns=[label])
        self.feature_names = [str(c) for c in features.columns]
        return features.to_numpy(np.float32), rule(frame[label].to_numpy()), list(class_names)

    def _read_csv(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        import pandas as pd  # pandas is slow to import; only this dataset needs it

        path = Path(self.path)
        what = describe_path(path)
        require(what == "a file", f"dataset.path={path} is {what}; expected a CSV file with a header row")
        try:
            frame = pd.read_csv(path)
        except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as error:
            raise AdvauditError(f"dataset.path={path} is {sniff(path)} that does not parse as CSV "
                                f"({str(error).splitlines()[0][:120]}); expected a CSV file with a header row") from None
        require(len(frame) >= 2, f"CSV {path} has {len(frame)} data row(s); a table to train on needs rows "
                "below its header")
        require(self.label_column in frame.columns, f"label column {self.label_column!r} not in "
                f"{path.name} columns {list(frame.columns)}; set dataset.label_column=<name>")
        features = frame.drop(columns=[self.label_column])
        bad = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
        if bad:
            raise AdvauditError(f"CSV {path.name} has non-numeric feature column(s) {bad}; encode them "
                                "as numbers (e.g. one-hot) or drop them before auditing")
        require(not features.isna().any().any(), f"CSV {path.name} has missing values in "
                f"{[c for c in features.columns if features[c].isna().any()]}; impute or drop them")
        labels = frame[self.label_column].astype(str)
        class_names = sorted(labels.unique())
        y = labels.map({c: i for i, c in enumerate(class_names)}).to_numpy()
        self.feature_names = [str(c) for c in features.columns]
        return features.to_numpy(np.float32), y, class_names

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "feature_names": self.feature_names}
