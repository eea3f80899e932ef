"""The demo's closing lines: what accuracy said, what the audit found, where the files are."""

from __future__ import annotations

import textwrap
from pathlib import Path

from advaudit.core.intervals import format_interval
from advaudit.demo.findings import ALPHA, Findings, Verdict

WIDTH = 100


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _pair(v: Verdict) -> str:
    """``E_T b 0.050 vs a 0.093, paired difference -0.043 [-0.070, -0.020] over 30 instances, Wilcoxon p = 0.001``."""
    other = next((n for n in v.means if n != v.lower), "?")
    return (f"{v.words} {v.lower} {v.means.get(v.lower, float('nan')):.3f} vs {other} "
            f"{v.means.get(other, float('nan')):.3f}, paired difference {format_interval(v.diff, v.lo, v.hi, 3, sign=True)} "
            f"over {v.n_instances} instances, {v.test.replace(' signed-rank', '')} p = {_p(v.p_holm)}")


def _short(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _range(region: tuple[float, float]) -> str:
    return f"{region[0]:g}-{region[1]:g}"


def severity_line(findings: Findings) -> str:
    """Line 2: the worst-case search's verdicts, then where the worst cases lie."""
    separating = [v for v in findings.severity if v.significant]
    if separating:
        named = {v.lower for v in separating}
        head = ("Worst-case search: " + (f"{separating[0].lower} is weaker" if len(named) == 1 else "the examiners disagree")
                + " (" + "; ".join(f"{v.examiner.upper()} {_pair(v)}" for v in findings.severity) + ")")
    else:
        head = ("Worst-case search: how low each checkpoint's true-class probability gets does not separate them ("
                + "; ".join(f"{v.examiner.upper()} {v.words} {' vs '.join(f'{n} {m:.3f}' for n, m in v.means.items())}, "
                            f"p = {_p(v.p_holm)}" for v in findings.severity) + ")")
    where = findings.where
    if where is None:
        return head + "; no per-factor worst cases to compare."
    other = next((t.name for t in findings.trained if t.name != where.suspect), "the other")
    differ = ("their worst cases lie in different places" if where.p < ALPHA
              else "no factor separates where their worst cases lie on its own")
    return (head + f"; {differ}, most in {where.factor} (two-sample {where.test} p = {_p(where.p)}, Holm, "
            f"{where.examiner.upper()}): {100 * where.share_suspect:.0f}% of {where.suspect}'s fall in "
            f"{_range(where.region)}, {100 * where.share_other:.0f}% of {other}'s.")


def check_line(findings: Findings) -> str | None:
    """Line 3: the check on fresh conditions, and whether it is the planted weakness."""
    where, check, planted = findings.where, findings.check, findings.planted
    if where is None:
        return "So the audit names neither checkpoint as weaker on this run."
    if check is None:
        return "The check on new conditions did not run, so no checkpoint is named weaker."
    region = f"{where.factor} {_range(where.region)}"
    if not check.significant:
        return (f"Checked on held-out instances under new random conditions with {region}: no difference detectable "
                f"({_pair(check)}), so the audit names neither checkpoint as weaker on this run.")
    line = (f"Checked on held-out instances under new random conditions with {region}: {check.lower} is the weaker "
            f"checkpoint there ({_pair(check)})")
    if planted and planted.get("unseen"):
        if findings.found_planted:
            line += f"; {_range(planted['unseen'])} is the range {planted['checkpoint']} never saw in training"
        else:
            line += (f"; the planted weakness was {planted['checkpoint']}'s {planted['factor']} "
                     f"{_range(planted['unseen'])}, so this run did not find it")
    return line + "."


def summary_lines(findings: Findings, root: Path, wandb_group: str) -> list[str]:
    """Four plain lines (module docstring); every number comes from ``findings``."""
    accuracy = ", ".join(f"{t.name} {t.test_acc:.3f}" for t in findings.trained)
    gap = abs(findings.trained[0].test_acc - findings.trained[1].test_acc) if len(findings.trained) == 2 else float("nan")
    lines = [f"Accuracy said: test accuracy {accuracy} on the same held-out renders ({100 * gap:.1f} points apart).",
             severity_line(findings), check_line(findings)]
    here = _short(root)
    reports = f"{here}/examine/comparison/comparison.md" + (
        f" and {here}/check/comparison/comparison.md" if findings.check is not None else "")
    lines.append(f"Files: reports {reports} (PNGs beside them; worst cases at 96 px in {here}/examine/*/worst_cases.png); "
                 f"offline W&B runs under {here} (group {wandb_group}; `wandb sync` uploads them).")
    return [line for line in lines if line]


def wrapped(lines: list[str], width: int = WIDTH) -> str:
    """The summary for a terminal: each line a paragraph, wrapped with a hanging indent."""
    return "\n".join(textwrap.fill(line, width, initial_indent="  ", subsequent_indent="      ",
                                    break_on_hyphens=False, break_long_words=False) for line in lines)
