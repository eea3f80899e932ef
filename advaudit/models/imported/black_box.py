"""Black-box runtimes that run no code a file names: ONNX through onnxruntime, scikit-learn through skops.

:func:`onnx_bytes` reads an ONNX model with its external data folded in (a damaged file, a missing
data file and a damaged data file are three different messages); :func:`onnx_predict` runs it.
:func:`load_skops` loads scikit-learn objects with skops' safe types, plus decision trees that
:func:`check_trees` bounds-checks; :func:`sklearn_predict` serves ``predict_proba``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from advaudit.errors import AdvauditError, one_line, require


def onnx_bytes(path: Path) -> bytes:
    """An ONNX model with any external weight files (``model.onnx.data``) folded in, as bytes.

    Raises:
        AdvauditError: one line each for a file that is truncated or corrupt, an external data file that
            is missing, and an external data file that is truncated or corrupt.
    """
    import onnx  # ONNX: only ONNX targets need it
    from onnx.external_data_helper import load_external_data_for_model

    path = Path(path)
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as error:  # noqa: BLE001 - a damaged file is the user's
        raise AdvauditError(f"{path} is truncated or corrupt: its {path.stat().st_size} bytes are not an ONNX model "
                            f"({one_line(error)[:160]}); copy or export it again (torch.onnx.export)") from None
    external = _external_tensors(model)
    locations = sorted({_location(t) for t in external})
    missing = [name for name in locations if not (path.parent / name).is_file()]
    require(not missing, f"{path} keeps its weights in external data file(s) {missing}, which are not next to it in "
            f"{path.parent}; copy them there (or save the model as one file: onnx.save(model, path, "
            "save_as_external_data=False))")
    try:
        load_external_data_for_model(model, str(path.parent))
    except Exception as error:  # noqa: BLE001 - a damaged data file is the user's
        raise AdvauditError(f"the external data of {path} ({', '.join(locations)}) is truncated or "
                            f"corrupt ({one_line(error)[:160]}); copy it again, whole") from None
    short = [t.name for t in external if len(t.raw_data) != _tensor_bytes(t)]
    require(not short, f"the external data of {path} ({', '.join(locations)}) is truncated or corrupt: {len(short)} "
            f"weight(s) ({', '.join(short[:3])}) have fewer bytes than their shapes need; copy it again, whole")
    return model.SerializeToString()


def _external_tensors(model: Any) -> list[Any]:
    """The model's tensors whose data lives in an external file (their ``raw_data`` is filled by loading it)."""
    from onnx.external_data_helper import _get_all_tensors, uses_external_data  # ONNX: only ONNX targets need it

    return [t for t in _get_all_tensors(model) if uses_external_data(t)]


def _location(tensor: Any) -> str:
    return next((entry.value for entry in tensor.external_data if entry.key == "location"), "")


def _tensor_bytes(tensor: Any) -> int:
    """How many bytes a tensor of its shape and element type holds."""
    from onnx.helper import tensor_dtype_to_np_dtype  # ONNX: only ONNX targets need it

    return int(np.prod(list(tensor.dims), dtype=np.int64)) * np.dtype(tensor_dtype_to_np_dtype(tensor.data_type)).itemsize


def onnx_predict(model_bytes: bytes, device: str = "cpu") -> Callable[[Any], Any]:
    """An onnxruntime session as ``numpy [B, ...] -> numpy [B, M]`` (its first input and output)."""
    import onnxruntime as ort  # ONNX: only ONNX targets need it

    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if device.startswith("cuda") else ["CPUExecutionProvider"]
    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, torch.get_num_threads())
    try:
        session = ort.InferenceSession(model_bytes, sess_options=options,
                                       providers=[p for p in providers if p in ort.get_available_providers()])
    except Exception as error:  # noqa: BLE001 - a broken file is the user's
        raise AdvauditError(f"onnxruntime cannot load the ONNX model, which is damaged or uses operators it lacks: "
                            f"{one_line(error)[:300]}; export it again (torch.onnx.export)") from None
    first = session.get_inputs()[0]
    batch = first.shape[0] if first.shape and isinstance(first.shape[0], int) else None
    input_name, output_name = first.name, session.get_outputs()[0].name

    def predict(x: Any) -> Any:
        x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
        if batch is None:
            return session.run([output_name], {input_name: x})[0]
        outs = []
        for start in range(0, len(x), batch):
            chunk = x[start:start + batch]
            pad = batch - len(chunk)
            if pad:
                chunk = np.concatenate([chunk, np.repeat(chunk[-1:], pad, 0)])
            outs.append(session.run([output_name], {input_name: chunk})[0][:batch - pad])
        return np.concatenate(outs)

    return predict


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
