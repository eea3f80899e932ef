"""scikit-learn estimators saved with skops: loaded with skops' safe types, no pickle, no code run.

Detected as a zip with a ``schema.json`` member. :func:`load_skops` loads scikit-learn objects with
skops' safe types, plus decision trees that :func:`check_trees` bounds-checks; :func:`sklearn_predict`
serves ``predict_proba``. An advaudit target file stores any scikit-learn estimator this way
(a trusted pickle too, once loaded), with the types it needs beyond skops' defaults.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np

from advaudit.errors import require
from advaudit.models.targets.formats.probe import FileKind, Probe

#: the key an advaudit target file's ``backend`` holds for a program stored in this format
BACKEND = "skops"
HINTS = {"skops": "target={{path: {p}, {common}}}"}


def detect(probe: Probe) -> FileKind | None:
    """A skops archive: a zip with ``schema.json`` (its estimator's ``n_features_in_`` read from it)."""
    if probe.names is not None and "schema.json" in probe.names:
        return FileKind("skops", "a skops archive (scikit-learn, loaded without pickle)",
                        features=_skops_features(probe.member("schema.json")))
    return None


def load(spec: Any, path: Path, kind: FileKind, device: str) -> tuple[None, Callable[[Any], Any]]:
    """``predict_proba`` of the estimator in ``path`` (types beyond skops' defaults: ``spec.trusted_types``)."""
    return None, sklearn_predict(load_skops(path.read_bytes(), spec.trusted_types, str(path)))


def from_bytes(data: bytes, device: str = "cpu", trusted_types: list[str] | None = None) -> tuple[None, Callable]:
    """``predict_proba`` of the estimator an advaudit target file stores as skops bytes."""
    return None, sklearn_predict(load_skops(data, list(trusted_types or []), "the imported target file"))


def to_bytes(estimator: Any, path: Path | None = None) -> tuple[bytes, list[str]]:
    """``(skops bytes, the types they need beyond skops' defaults)``: the file at ``path`` as it is when it is
    a skops archive, else ``estimator`` dumped."""
    import skops.io as sio  # skops is slow to import; only scikit-learn targets need it

    data = path.read_bytes() if path is not None else sio.dumps(estimator)
    return data, list(sio.get_untrusted_types(data=data))


def _skops_features(schema: bytes) -> int | None:
    """``n_features_in_`` of the estimator a skops archive holds (read from its ``schema.json``)."""
    try:
        content = json.loads(schema).get("content", {})
        node = (content.get("content", content) if isinstance(content, dict) else {}).get("n_features_in_")
        value = int(node["content"]) if isinstance(node, dict) else None
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return value if value and value > 0 else None


#: types skops does not trust by default whose objects advaudit bounds-checks itself (:func:`check_trees`)
CHECKED_TYPES = ("sklearn.tree._tree.Tree",)


def load_skops(data: bytes, trusted_types: list[str], source: str) -> Any:
    """A scikit-learn object from skops bytes; other types skops does not trust must be listed by the user.

    Decision trees (``sklearn.tree._tree.Tree``, in every forest and boosting model) are accepted
    after :func:`check_trees` has checked their node indices, which is what skops warns about.
    """
    import skops.io as sio  # skops is slow to import; only scikit-learn targets need it

    untrusted = sio.get_untrusted_types(data=data)
    missing = [t for t in untrusted if t not in trusted_types and t not in CHECKED_TYPES]
    require(not missing, f"{source} holds types skops does not trust by default: {missing}; if you made the file "
            f"or trust its source add target.trusted_types=[{', '.join(missing)}] (recorded in the report)")
    loaded = sio.loads(data, trusted=list(untrusted) or None)
    check_trees(loaded, source)
    return loaded


def check_trees(obj: Any, source: str, depth: int = 0) -> int:
    """Refuse decision trees whose node arrays index outside themselves or the estimator's features.

    scikit-learn walks ``children_left/right`` and reads ``X[:, feature]`` without bounds checks;
    a node may only point at ``-1`` (leaf) or a node of its tree, and split on a feature the
    estimator has. Returns how many trees were checked.
    """
    if depth > 6 or obj is None or isinstance(obj, (str, bytes, int, float, bool)):
        return 0
    checked = 0
    tree = getattr(obj, "tree_", None)
    if tree is not None and type(tree).__name__ == "Tree":
        count = int(tree.node_count)
        n_features = min(int(tree.n_features), int(getattr(obj, "n_features_in_", tree.n_features)))
        for name in ("children_left", "children_right"):
            child = np.asarray(getattr(tree, name))
            require(bool(((child == -1) | ((child >= 0) & (child < count))).all()),
                    f"{source}: a decision tree's {name} points outside the tree; the file is corrupt or crafted")
        feature = np.asarray(tree.feature)
        leaf = np.asarray(tree.children_left) == -1
        require(bool((leaf | ((feature >= 0) & (feature < n_features))).all()),
                f"{source}: a decision tree splits on a feature the estimator does not have; the file is corrupt or crafted")
        checked += 1
    children: list[Any] = []
    for name in ("estimators_", "steps", "estimator", "estimator_", "base_estimator_", "final_estimator_", "calibrated_classifiers_"):
        value = getattr(obj, name, None)
        if value is not None:
            children.extend(np.asarray(value, dtype=object).ravel().tolist() if isinstance(value, (list, tuple, np.ndarray)) else [value])
    for child in children:
        child = child[1] if isinstance(child, tuple) and len(child) == 2 else child
        checked += check_trees(child, source, depth + 1)
    return checked


def sklearn_predict(estimator: Any) -> Callable[[Any], Any]:
    """``estimator.predict_proba`` on ``numpy [B, F]`` (images are flattened)."""
    require(hasattr(estimator, "predict_proba"), f"{type(estimator).__name__} has no predict_proba; black-box "
            "targets must give probabilities (e.g. SVC(probability=True))")

    def predict(x: Any) -> Any:
        x = np.asarray(x)
        return estimator.predict_proba(x.reshape(len(x), -1) if x.ndim > 2 else x)

    predict.estimator = estimator  # type: ignore[attr-defined]
    return predict
