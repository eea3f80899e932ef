"""The one loader, :func:`load_target`: a target from a file of any format, a YAML file or a ``target`` block.

    import advaudit
    target = advaudit.load_target("team/resnet18_fmnist.pt")            # a target file, or
    target = advaudit.load_target("my_conf/resnet_fmnist.yaml")          # the YAML `advaudit import` takes, or
    target = advaudit.load_target({"path": "model.onnx", "class_names": [...], "input_shape": [13],
                                   "normalization": "model"})            # a target block
    probs = target.predict_proba(x)      # raw inputs [B, *target.input_shape] -> [B, len(target.class_names)]

Every path to a target goes through :func:`load_target`: a ``target`` block is built by
:mod:`advaudit.models.targets.imported.build`, which hands the file it names to its format's module
(:mod:`advaudit.models.targets.formats`); a path is advaudit's own target file
(:mod:`advaudit.models.targets.formats.own`), read here, whose body is either rebuilt by that module (``torch``,
``sklearn``) or is a program stored in another format (written by ``advaudit import``) that the format's module
loads. Loading runs no code a file names. :func:`save_target` writes advaudit's own file.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Mapping, Sequence

from advaudit.confutil import plain
from advaudit.errors import AdvauditError, require
from advaudit.models.targets.classes import class_pairing
from advaudit.models.targets.formats import PROGRAM_BACKENDS, identify, own, program_format
from advaudit.models.targets.formats.checkpoint import load_checkpoint, save_checkpoint
from advaudit.models.targets.formats.own import META_KEYS, require_meta
from advaudit.models.targets.imported.build import assemble, build_model, calibrate, place
from advaudit.models.targets.imported.spec import ADVAUDIT_FILE_KEYS, TargetSpec, parse_block, parse_target_spec
from advaudit.models.targets.imported.verify import probe_batch, require_same_model, verify_target
from advaudit.models.targets.target import SklearnTarget, TorchTarget
from advaudit.runtime import resolve_device

Target = TorchTarget | SklearnTarget

__all__ = ["BLOCK_FILES", "Target", "load_target", "save_target"]

#: file endings read as a YAML file holding a target block (as for ``advaudit import``)
BLOCK_FILES = (".yaml", ".yml", ".json")


def load_target(target: str | Path | Mapping[str, Any], device: Any = "cpu", seed: int = 0, *,
                channels_last: bool = True, trusted_types: Sequence[str] | None = None,
                architectures: Sequence[str] = ()) -> Any:
    """The target a path or block names, checked and ready to score, as every audit loads it.

    Args:
        target: an advaudit target file (``train.py``'s ``target.pt`` or ``advaudit import``'s output);
            a YAML file holding a target block (at its top level or under ``target:``); or the block
            itself as a mapping (docs/imported-models.md lists its keys).
        device: ``cpu``, ``cuda``, ``cuda:1`` or ``auto``.
        seed: the seed a dataset named in the block is built with (``temperature: calibrate``).
        channels_last: for a target file: image targets on a CPU keep their weights NHWC (faster
            convolutions, logits equal to float rounding: :meth:`TorchTarget.use_channels_last`); ``False``
            keeps NCHW.
        trusted_types: for a file written by ``advaudit import`` (a code-free program in another format):
            the scikit-learn types the user trusts beyond skops' defaults (a block says ``trusted_types``).
        architectures: for a target file: the architectures outside advaudit (``_target_`` paths) the
            user's config names (``target.architecture``); a file trained with another one is refused
            (:func:`advaudit.models.nets.checkpoint_architecture`).

    Returns:
        A target in eval mode on ``device`` with ``predict_proba(x)``: raw inputs ``[B, *input_shape]`` (images
        in ``[0, 1]`` as the data gives them, tables in the data's units; resizing and normalisation are the
        target's) -> probabilities ``[B, K]`` over ``class_names`` (temperature applied; ``calibrated=False``
        for ``T = 1``); ``logits(x)`` ``[B, K]``; ``class_names``; ``input_shape``; ``meta`` (plain data).

    Raises:
        AdvauditError: one line naming what is wrong with the file or block and the fix.
    """
    if isinstance(target, (str, Path)) and Path(target).suffix.lower() in BLOCK_FILES:
        target = parse_block(str(target), [])
    target = plain(target)
    require(isinstance(target, (str, Path, Mapping)), f"load_target takes a path or a target block (a mapping), "
            f"not a {type(target).__name__}")
    device = str(resolve_device(device))
    if isinstance(target, Mapping):
        return _load_block(dict(target), device, seed)
    return _load_file(Path(str(target)).expanduser(), device, channels_last, trusted_types, architectures)


def _load_file(path: Path, device: str, channels_last: bool = True, trusted_types: Sequence[str] | None = None,
               architectures: Sequence[str] = ()) -> Any:
    """Rebuild the target stored at ``path`` (safe loading), in eval mode on ``device`` (:func:`load_target`)."""
    payload = load_checkpoint(path, kind="target", map_location=device)
    require_meta(payload, path, META_KEYS, PROGRAM_BACKENDS)
    if payload.get("backend") in PROGRAM_BACKENDS:
        return _from_program(payload, device, list(trusted_types or []), channels_last)
    return own.rebuild(payload, path, device, channels_last, architectures)


def _from_program(payload: dict[str, Any], map_location: str, trusted_types: list[str] | None,
                  channels_last: bool) -> Any:
    """The target of a file written by :func:`advaudit.models.targets.imported.store.import_target`: its program loaded
    by the program's format, wrapped with the adapters the file stores as plain data."""
    backend, meta = payload["backend"], payload["meta"]
    data = payload["program"].numpy().tobytes()
    adapters = dict(meta.get("adapters") or {})
    spec = TargetSpec(**{k: v for k, v in adapters.items() if k in {f.name for f in fields(TargetSpec)}})
    module, predict = program_format(backend).from_bytes(data, map_location, list(trusted_types or []))
    extra = {k: meta[k] for k in ("source", "format", "config", "temperature_fit_on", "adapters", "imported_with") if k in meta}
    target = assemble(module, predict, spec, str(meta.get("format", backend)), meta_extra=extra)
    target.temperature.fill_(float(payload.get("temperature", 1.0)))
    return place(target, map_location, channels_last)


def _load_block(data: dict[str, Any], device: str, seed: int) -> Any:
    """The verified target a ``target`` block describes, on ``device``: built from its source, calibrated
    where it asks, checked on a probe batch (:func:`~advaudit.models.targets.imported.verify.verify_target`)."""
    path = data.get("path")
    if path is not None and identify(Path(str(path)).expanduser()).kind == "advaudit":
        extra = sorted(set(data) - set(ADVAUDIT_FILE_KEYS))
        require(not extra, f"target.path={path} is an advaudit target file that describes itself; drop {extra}")
        architecture = data.get("architecture")
        target = _load_file(Path(str(path)).expanduser(), device, trusted_types=list(data.get("trusted_types") or []),
                            architectures=[str(architecture)] if architecture else [])
        target.meta.update(class_pairing(data.get("class_alignment"), data.get("match_classes") or "name"))
        return target
    require(data.get("architecture") is None, f"target.architecture names the architecture of an advaudit target "
            f"file (written by train.py); target.path={path} is not one: name its model with target.model="
            "{_target_: ...} instead")
    spec = parse_target_spec(data, seed)
    module, predict, fmt = build_model(spec, device)
    target = assemble(module, predict, spec, fmt)
    if spec.temperature == "calibrate":
        calibrate(target, spec.dataset)
    verify_target(target)
    target = place(target, device)
    # the dataset in meta came from the user's config, not from a file: its code may be the user's own
    target.dataset_from_config = spec.dataset is not None
    return target


def save_target(target: Target, path: str | Path, extra: dict[str, Any] | None = None) -> Path:
    """Write ``target`` (weights or estimator state, meta, temperature) plus ``extra`` plain data.

    A torch target is read back and its logits compared with ``target``'s on a probe batch: the file
    stores weights for the architecture ``meta["arch"]`` names (a ``_target_``), and a network of another
    make whose parameter names happen to match (torchvision's ResNet-18 under advaudit's
    ``resnet18``) would otherwise be audited as advaudit's own. Such a file is removed and refused,
    naming the gap. The architecture is the one ``target`` was built with, so reading it back may
    import it.
    """
    path = save_checkpoint(path, own.to_payload(target, extra))
    if isinstance(target, TorchTarget):
        _require_rebuilt_equal(target, path)
    return path


def _require_rebuilt_equal(target: TorchTarget, path: Path) -> None:
    """Refuse (and remove) a saved target whose rebuilt network's logits differ from ``target``'s."""
    was_training = target.training
    target.eval()
    try:
        rebuilt = _load_file(path, str(target.device), channels_last=False, architectures=[str(target.meta.get("arch"))])
        require_same_model(target, rebuilt, probe_batch(target.input_shape), 1e-4,
                           f"the network {path.name} rebuilds ({target.meta.get('arch')} "
                           f"{target.meta.get('arch_params', {})})")
    except AdvauditError as error:
        path.unlink(missing_ok=True)
        raise AdvauditError(f"{error}; save_target stores weights for the architecture meta['arch'] names, rebuilt "
                            "from meta['arch_params']: audit a model built otherwise with a target block or "
                            "`advaudit import` (README: Audit a model you already have)") from None
    finally:
        target.train(was_training)
