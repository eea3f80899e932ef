"""What a shard of a split audit and the merge import: no Lightning (the datasets are plain classes and GAD's
pseudo-model trains without a Trainer) and no comparison, since every shard would pay their imports (~3 s for
Lightning with torchvision, ~1.5 s for pandas, scipy.stats and matplotlib)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_error_search_and_the_merge_import_no_lightning() -> None:
    code = ("import sys\nimport advaudit.merge, advaudit.audits.error_search, advaudit.search.scorers, "
            "advaudit.data.fashion_mnist, advaudit.audits.common\n"
            "print('imported:', sorted(m for m in ('pytorch_lightning', 'torchmetrics', 'torchvision') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert "imported: []" in done.stdout, done.stdout + done.stderr[-2000:]
    code = "import sys\nimport advaudit.models.training.classifier_training\nprint('pytorch_lightning' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "True", done.stderr[-2000:]  # the check can fail: training does import it


def test_the_sweep_callback_every_run_builds_imports_no_comparison() -> None:
    """Hydra builds ``SweepEnd`` in every run (a shard too); its work, and the comparison's pandas, scipy.stats and
    matplotlib, wait for the end of a multirun (tests/compare/test_sweeps.py runs it)."""
    code = ("import sys\nfrom advaudit.sweep.callbacks import SweepEnd\n"
            "SweepEnd(compare=True, replay=False, fail_on_error=True, wandb=False, gate=None, margin=0.0)\n"
            "print('imported:', sorted(m for m in ('pandas', 'scipy.stats', 'matplotlib', 'advaudit.sweep.sweep_end') "
            "if m in sys.modules))\nimport advaudit.sweep.sweep_end\nprint('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.stdout.splitlines() == ["imported: []", "True"], done.stdout + done.stderr[-2000:]


def test_a_worst_case_shard_imports_neither_lightning_nor_the_report() -> None:
    """A worst-case shard (RL examiner) keeps records only; the report's plots and statistics (matplotlib, scipy.stats,
    sklearn's t-SNE) and error search wait for the merge, which imports only the merged audit's modules."""
    heavy = ("pytorch_lightning", "matplotlib", "scipy.stats", "sklearn", "advaudit.audits.error_search")
    code = ("import sys\nimport advaudit.audits.worst_case, advaudit.examiners.rl, advaudit.audits.merging\n"
            f"print('imported:', sorted(m for m in {heavy!r} if m in sys.modules))\n"
            "from advaudit.audits.merging import merge_function\nmerge_function('worst_case')\n"
            "print('matplotlib' in sys.modules, 'advaudit.audits.error_search' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.stdout.splitlines() == ["imported: []", "True False"], done.stdout + done.stderr[-2000:]


def test_rl_steps_the_pseudo_model_fit_and_a_resnet_target_import_neither_dynamo_nor_torchvision() -> None:
    """``torch.optim``'s first call imports ``torch._dynamo`` and torchvision's import pulls it in too (~2 s each, in
    every examination and every shard): advaudit's Adam (the RL examiner's, GAD's pseudo-model's) and the ResNet targets
    are written without them."""
    code = ("import sys, torch\nfrom advaudit.examiners import build_examiner\nfrom advaudit.models.nets import resnet18\n"
            "from advaudit.search.pseudo_model import PseudoModel, fit_pseudo_model\n"
            "e = build_examiner({'name': 'rl', 'q': 4}, 3, 2, seed=0)\nu = e.ask()\ne.tell(u, u.sum(-1))\n"
            "m = PseudoModel((3,), [4], torch.zeros(3), torch.ones(3), lr=0.01)\n"
            "fit_pseudo_model(m, [(torch.rand(5, 3), torch.rand(5))], epochs=1)\n"
            "resnet18((3, 32, 32), 10, width=8)(torch.zeros(1, 3, 32, 32))\n"
            "print(sorted(m for m in ('torch._dynamo', 'torchvision') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr[-2000:]
