"""The one loader: a target from a file of any format or from a ``target`` block; advaudit's own file written.

Every path to a target goes through :func:`load_any_target`: a ``target`` block is built by
:mod:`advaudit.models.imported.build`, which hands the file it names to its format's module
(:mod:`advaudit.models.formats`); a path is advaudit's own target file (:mod:`advaudit.models.formats.own`),
read here, whose body is either rebuilt by that module (``torch``, ``sklearn``) or is a program stored in
another format (written by ``advaudit import``) that the format's module loads. Loading runs no code a
file names.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Sequence

from advaudit.confutil import plain
from advaudit.errors import AdvauditError, require
from advaudit.models.checkpoint import load_checkpoint, save_checkpoint
from advaudit.models.classes import class_pairing
from advaudit.models.formats import PROGRAM_BACKENDS, identify, own, program_format
from advaudit.models.formats.own import META_KEYS, require_meta
from advaudit.models.imported.build import assemble, build_model, calibrate, place
from advaudit.models.imported.spec import ADVAUDIT_FILE_KEYS, TargetSpec, parse_target_spec
from advaudit.models.imported.verify import probe_batch, require_same_model, verify_target
from advaudit.models.target import SklearnTarget, TorchTarget

Target = TorchTarget | SklearnTarget

__all__ = ["Target", "load_any_target", "load_block_target", "load_target", "require_meta", "save_target"]


def load_any_target(value: Any, device: str = "cpu", seed: int = 0) -> Any:
    """The target ``value`` names: a path (advaudit's own or an imported file) or a ``target`` block."""
    value = plain(value)
    if isinstance(value, dict):
        return load_block_target(value, device=device, seed=seed)
    return load_target(Path(str(value)).expanduser(), map_location=device)


def load_target(path: str | Path, map_location: str = "cpu", channels_last: bool = True,
                trusted_types: list[str] | None = None, architectures: Sequence[str] = ()) -> Any:
    """Rebuild the target stored at ``path`` (safe loading), in eval mode on ``map_location``.

    ``channels_last``: image targets on a CPU keep their weights NHWC (faster convolutions, logits
    equal to float rounding: :meth:`TorchTarget.use_channels_last`); ``False`` keeps NCHW.
    Files written by ``advaudit import`` hold a code-free program in another format;
    ``trusted_types`` are the scikit-learn types the user trusts beyond skops' defaults.
    ``architectures`` are the architectures outside advaudit (``_target_`` paths) the user's config
    names (``target.architecture``); a file trained with another one is refused
    (:func:`advaudit.models.nets.checkpoint_architecture`).
    """
    payload = load_checkpoint(path, kind="target", map_location=map_location)
    require_meta(payload, path, META_KEYS, PROGRAM_BACKENDS)
    if payload.get("backend") in PROGRAM_BACKENDS:
        return _from_program(payload, map_location, trusted_types, channels_last)
    return own.rebuild(payload, path, map_location, channels_last, architectures)


def _from_program(payload: dict[str, Any], map_location: str, trusted_types: list[str] | None,
                  channels_last: bool) -> Any:
    """The target of a file written by :func:`advaudit.models.imported.store.import_target`: its program loaded
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


def load_block_target(node: Any, device: str = "cpu", seed: int = 0) -> Any:
    """The verified target a ``target`` block describes, on ``device``: built from its source, calibrated
    where it asks, checked on a probe batch (:func:`~advaudit.models.imported.verify.verify_target`)."""
    data = dict(node)
    path = data.get("path")
    if path is not None and identify(Path(str(path)).expanduser()).kind == "advaudit":
        extra = sorted(set(data) - set(ADVAUDIT_FILE_KEYS))
        require(not extra, f"target.path={path} is an advaudit target file that describes itself; drop {extra}")
        architecture = data.get("architecture")
        target = load_target(Path(str(path)).expanduser(), map_location=device,
                             trusted_types=list(data.get("trusted_types") or []),
                             architectures=[str(architecture)] if architecture else [])
        target.meta.update(class_pairing(data.get("class_alignment"), data.get("match_classes") or "name"))
        return target
    require(data.get("architecture") is None, f"target.architecture names the architecture of an advaudit target "
            f"file (written by train.py); target.path={path} is not one: name its model with target.model="
            "{_target_: ...} instead")
    spec = parse_target_spec(node, seed)
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
        rebuilt = load_target(path, map_location=str(target.device), channels_last=False,
                              architectures=[str(target.meta.get("arch"))])
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
