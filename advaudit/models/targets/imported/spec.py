"""What a model trained elsewhere is, said in config: the ``target`` block.

``target=<path>`` stays a path (advaudit's own ``target.pt``, or an imported one written by
``advaudit import``); ``target`` may also be a mapping that says what the model is, where its
weights are and what auditing it needs::

    target:
      model: {_target_: torchvision.models.resnet18, num_classes: 10}   # code runs because you name it
      path: resnet18_fmnist.pt            # state_dict / .safetensors / Lightning .ckpt
      class_names: [t-shirt, trouser, ...]  # paired with the data's classes by name, in any order
      class_alignment: {boot: ankle-boot}   # optional: a model class called otherwise in the data
      input_shape: [3, 32, 32]            # what the model takes
      resize_from: [1, 28, 28]            # what the audit feeds: resized (and grey -> RGB) to input_shape
      normalization: {mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5]}   # or: model (it normalises itself)
      dataset: fashion_mnist              # a conf/dataset option or a {_target_: ...} block

Exactly one source names the model: ``model`` (an ``nn.Module`` built by Hydra, weights from
``path``), ``lightning_module`` (a LightningModule class whose ``load_from_checkpoint`` reads
``path``), ``function`` (a callable from inputs to probabilities), ``endpoint`` (a model on an Open
Inference Protocol server: :mod:`advaudit.models.targets.endpoint`), or a file in ``path`` alone (TorchScript,
``torch.export`` .pt2, ONNX, skops, or a pickle/joblib file with ``trusted: true``).
Every key is checked here, with a "did you mean" for a misspelt one.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from advaudit.confutil import locate, plain, refuse_unknown_keys
from advaudit.errors import AdvauditError, one_line, require
from advaudit.models.targets.adapters import channels_of
from advaudit.models.targets.classes import MATCHES, OTHER_CLASS

#: file formats a ``target`` block can name in ``format`` (``auto``: identified from the file)
FORMATS = ("auto", "advaudit", "state_dict", "safetensors", "lightning", "torchscript", "export", "onnx",
           "skops", "pickle", "joblib")
#: the keys a target block naming an advaudit target file may hold (the file describes the rest); ``architecture``
#: is the ``_target_`` of an architecture outside advaudit that the file was trained with, which the user trusts
ADVAUDIT_FILE_KEYS = ("path", "trusted_types", "name", "format", "architecture", "class_alignment", "match_classes")
OUTPUTS = ("logits", "probabilities", "log_probabilities")
CONF_DATASETS = Path(__file__).resolve().parents[4] / "conf" / "dataset"


@dataclass
class TargetSpec:
    """A target block, checked. Shapes are ``[C, H, W]`` for images or ``[F]`` for tables."""

    path: str | None = None
    format: str = "auto"
    model: Any = None
    lightning_module: str | None = None
    function: Any = None
    endpoint: Any = None
    class_names: list[str] | None = None
    class_map: dict[str, list[Any]] | None = None
    class_alignment: dict[str, str] | None = None
    match_classes: str = "name"
    output_names: list[str] | None = None
    input_shape: list[int] | None = None
    resize_from: list[int] | None = None
    normalization: Any = None
    outputs: str | None = None
    temperature: Any = 1.0
    dataset: Any = None
    weights_prefix: str | None = None
    array: str = "torch"
    trusted: bool = False
    trusted_types: list[str] = field(default_factory=list)
    name: str | None = None
    tolerance: float = 1e-4

    # -- derived ----------------------------------------------------------------------------------
    @property
    def source(self) -> str:
        """Which source names the model: ``module``, ``lightning_module``, ``function``, ``endpoint``, ``file``."""
        if self.model is not None:
            return "module"
        if self.lightning_module is not None:
            return "lightning_module"
        if self.function is not None:
            return "function"
        if self.endpoint is not None:
            return "endpoint"
        return "file"

    @property
    def label(self) -> str:
        """A short, stable name for tables: ``name``, else the weights file, else the code named."""
        if self.name:
            return str(self.name)
        if self.path:
            return str(self.path)
        if isinstance(self.endpoint, Mapping):
            return endpoint_label(self.endpoint)
        code = self.function if isinstance(self.function, str) else _get_target(self.function)
        return f"function:{code}"

    def audit_classes(self) -> list[str]:
        """The class names audits see: the class map's keys (plus :data:`OTHER_CLASS`) or ``class_names``."""
        if self.class_map is not None:
            return [*self.class_map, OTHER_CLASS]
        return list(self.class_names or [])

    def record(self) -> dict[str, Any]:
        """The spec as plain data for reports and checkpoints (the code it names stays a name)."""
        out = {f.name: plain(getattr(self, f.name)) for f in fields(self)}
        if self.path and Path(self.path).is_file():
            out["sha256"] = file_sha256(self.path)
        return {k: v for k, v in out.items() if v not in (None, [], {})}


def parse_target_spec(node: Any, seed: int = 0) -> TargetSpec:
    """A :class:`TargetSpec` from a ``target`` mapping, refusing unknown keys and impossible combinations.

    Raises:
        AdvauditError: naming the key and the fix (one line).
    """
    data = plain(node)
    require(isinstance(data, dict), f"target must be a path or a mapping, not {type(data).__name__}")
    refuse_unknown_keys(data, [f.name for f in fields(TargetSpec)], "target", "a target setting")
    spec = TargetSpec(**data)
    _check_spec(spec)
    if isinstance(spec.dataset, str):
        spec.dataset = named_dataset(spec.dataset, seed)
    elif isinstance(spec.dataset, dict) and "_target_" in spec.dataset:
        locate(spec.dataset["_target_"], "target.dataset._target_")  # a typo named now, not deep in the audit
    return spec


def _check_spec(spec: TargetSpec) -> None:
    sources = [k for k in ("model", "lightning_module", "function", "endpoint") if getattr(spec, k) is not None]
    require(len(sources) <= 1, f"target names the model {len(sources)} ways ({', '.join(sources)}); keep one")
    require(spec.format in FORMATS, f"target.format={spec.format!r}; use one of {', '.join(FORMATS)}")
    require(spec.outputs is None or spec.outputs in OUTPUTS,
            f"target.outputs={spec.outputs!r}; use one of {', '.join(OUTPUTS)}")
    require(spec.array in ("torch", "numpy"), f"target.array={spec.array!r}; use torch or numpy")
    if spec.source in ("file", "lightning_module"):
        require(spec.path is not None, "target names no model: give target.path (a TorchScript, torch.export, "
                "ONNX, skops or Lightning file), or target.model={_target_: ...} with target.path to its weights, "
                "or target.function" if spec.source == "file" else
                "target.lightning_module needs target.path: the Lightning .ckpt to load_from_checkpoint")
    if spec.source in ("function", "endpoint"):
        require(spec.path is None, f"target.{spec.source} is a black box with no file; drop target.path")
    require(spec.class_names is not None or spec.class_map is not None,
            "target needs class_names: [...] (one per model output, in order) or a class_map "
            "{audit class: [model outputs]}")
    require(spec.match_classes in MATCHES, f"target.match_classes={spec.match_classes!r}; use one of "
            f"{', '.join(MATCHES)} (name: the target's classes are paired with the data's by name)")
    require(spec.class_alignment is None or isinstance(spec.class_alignment, dict),
            "target.class_alignment maps a model class to the data's name for it, e.g. {boot: ankle-boot}")
    if spec.class_map is not None:
        require(isinstance(spec.class_map, dict) and all(isinstance(v, list) and v for v in spec.class_map.values()),
                "target.class_map must map each audit class to a non-empty list of model outputs (indices or "
                "output_names), e.g. {chair: [423, 559, 765]}")
    t = spec.temperature
    require(t == "calibrate" or (isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0),
            f"target.temperature={t!r}; give a number > 0 or 'calibrate' (fit on the dataset's validation split)")
    if t == "calibrate":
        require(spec.dataset is not None, "target.temperature=calibrate needs target.dataset (its validation split)")
    if spec.input_shape is not None or spec.source != "endpoint":  # an endpoint's model says its shape
        check_shapes(spec)


def check_shapes(spec: TargetSpec) -> None:
    """Refuse an input shape, resize or normalisation that cannot work (one line naming the key)."""
    require(spec.input_shape is not None and all(isinstance(d, int) and d > 0 for d in spec.input_shape),
            f"target.input_shape={spec.input_shape}; give the shape the model takes, e.g. [3, 224, 224] or [13]")
    if spec.resize_from is not None:
        require(len(spec.input_shape) == 3 and len(spec.resize_from) == 3,
                "target.resize_from works on images: give [C, H, W] for both it and target.input_shape")
        require(spec.resize_from[0] in (1, spec.input_shape[0]),
                f"target.resize_from has {spec.resize_from[0]} channels and the model takes {spec.input_shape[0]}; "
                "only 1 -> C (grey repeated) or equal channel counts are adapted")
    norm = spec.normalization
    if len(spec.input_shape) == 1:  # a table: features in the data's own units, no channels, no [0, 1]
        require(norm == "model" or (isinstance(norm, dict) and set(norm) == {"mean", "std"}),
                "target.normalization is required: 'model' when the model takes the table's features in the data's "
                "own units (a scikit-learn pipeline scales them itself), or {mean: [...], std: [...]} per feature")
    require(norm == "model" or (isinstance(norm, dict) and set(norm) == {"mean", "std"}),
            "target.normalization is required: {mean: [...], std: [...]} per channel (applied after any resize), "
            "or 'model' when the model normalises its raw [0, 1] inputs itself")
    if isinstance(norm, dict):
        channels = channels_of(spec.input_shape)
        for key in ("mean", "std"):
            values = norm[key] if isinstance(norm[key], list) else [norm[key]]
            require(len(values) in (1, channels), f"target.normalization.{key} has {len(values)} values; the model "
                    f"takes {channels} channels/features")
        require(all(float(s) > 0 for s in (norm["std"] if isinstance(norm["std"], list) else [norm["std"]])),
                "target.normalization.std must be > 0")


def parse_block(spec_file: str, overrides: list[str]) -> dict:
    """The target block in ``spec_file`` with ``overrides`` (``key=value``) merged in."""
    path = Path(spec_file).expanduser()
    if not path.is_file():
        raise AdvauditError(f"{spec_file} is not a file; give a YAML file with the target block")
    node = OmegaConf.load(path)
    if "target" in node and len(node) == 1:
        node = node.target
    bad = [o for o in overrides if "=" not in o]
    if bad:
        raise AdvauditError(f"overrides must be key=value, got {bad}")
    node = OmegaConf.merge(node, OmegaConf.from_dotlist(overrides))
    return OmegaConf.to_container(node, resolve=True)


def named_dataset(name: str, seed: int) -> dict[str, Any]:
    """The ``dataset=<name>`` option composed by Hydra (its schema's defaults, the option's values, ``seed``
    filled in) as a plain ``{_target_: ...}`` block.

    Inside a Hydra run (``examine.py``, also with ``--config-dir``) the run's own config search path
    composes it, so the user's own dataset options count too; elsewhere (``advaudit import``, Python)
    advaudit's ``conf/``. The schemas must be registered (``import advaudit.config``), as every entry
    point does.
    """
    overrides = [f"+dataset={name}", f"+seed={int(seed)}"]
    try:
        if GlobalHydra.instance().is_initialized():
            options = GlobalHydra.instance().config_loader().get_group_options("dataset")
            composed = compose(config_name=None, overrides=overrides) if name in options else None
        else:
            with initialize_config_dir(config_dir=str(CONF_DATASETS.parent), version_base="1.3"):
                options = GlobalHydra.instance().config_loader().get_group_options("dataset")
                composed = compose(config_name=None, overrides=overrides) if name in options else None
    except (HydraException, OmegaConfBaseException) as error:
        raise AdvauditError(f"target.dataset={name!r} cannot be composed ({one_line(error)[:200]}); give the dataset "
                            "as a block instead: target.dataset={_target_: ..., ...}") from None
    if composed is None:
        options = sorted(o for o in options if not o.endswith("_schema"))
        close = difflib.get_close_matches(name, options, n=1)
        hint = f"did you mean target.dataset={close[0]}? " if close else ""
        raise AdvauditError(f"target.dataset={name!r} is not a dataset option; {hint}use one of {options} (conf/dataset) "
                            "or a {_target_: ...} block")
    try:
        block = OmegaConf.to_container(composed.dataset, resolve=True)
    except OmegaConfBaseException as error:  # an interpolation only a full run config can resolve
        raise AdvauditError(f"target.dataset={name!r} refers to other settings ({one_line(error)[:160]}); give the "
                            "dataset as a block instead: target.dataset={_target_: ..., ...}") from None
    require(isinstance(block, dict) and "_target_" in block, f"target.dataset={name!r} composes to no _target_; give "
            "the dataset as a block instead: target.dataset={_target_: ..., ...}")
    return block


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (the weights' identity in reports and W&B)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def target_label(value: Any) -> str | None:
    """How a run's ``target`` is named in tables: the path, or the block's label."""
    if value is None or isinstance(value, str):
        return value
    data = plain(value)
    if not isinstance(data, dict):
        return str(data)
    if data.get("name"):
        return str(data["name"])
    if data.get("path"):
        return str(data["path"])
    if isinstance(data.get("endpoint"), Mapping):
        return endpoint_label(data["endpoint"])
    function = data.get("function")
    return f"function:{function if isinstance(function, str) else _get_target(function)}"


def endpoint_label(block: Mapping[str, Any]) -> str:
    """How a target on a server is named in tables: ``<url>/v2/models/<model>[/versions/<v>]``."""
    version = f"/versions/{block['version']}" if block.get("version") else ""
    return f"{str(block.get('url', '')).rstrip('/')}/v2/models/{block.get('model')}{version}"


def _get_target(node: Any) -> str | None:
    return node.get("_target_") if isinstance(node, Mapping) else None
