"""Correct the policy judge's raw pass rate for the judge's measured errors.

A judge that passes bad answers (TNR < 1) or fails good ones (TPR < 1) biases the raw pass
rate p. With TPR and TNR measured against human labels (`evals calibrate-judge`), the
true pass rate θ solves p = θ·TPR + (1 − θ)·(1 − TNR):

    θ = (p + TNR − 1) / (TPR + TNR − 1), clipped to [0, 1]

(Rogan & Gladen, 1978). The interval carries the calibration's own uncertainty: a seeded
Monte Carlo over p, TPR and TNR, each drawn from the Jeffreys Beta posterior of its binomial
counts (Beta(k + ½, n − k + ½); unlike the plug-in bootstrap it does not freeze a rate that
was observed at 0 or 1), θ computed per draw and clipped, and the 2.5th / 97.5th
percentiles taken. Trials of one row are treated as independent draws for p, as the gate's
own Wilson interval does.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from turngate.core import cli_support as cli
from turngate.core.project import project

DEFAULT_PATH = project().path("judge_calibration", "judge_calibration.json")  # [tool.turngate], else ./
DRAWS = 2000
SEED = 20261015
METHOD = (f"Rogan-Gladen correction; 95% interval from {DRAWS} seeded Monte Carlo draws of p, TPR, TNR "
          "from their Jeffreys Beta posteriors")


def judge_fingerprint(spec: str) -> str:
    """A short hash of the code and prompt behind a judge spec: the same spec with changed
    rules is a different judge, and its old calibration no longer describes it. A registered
    judge names its source files (register_judge(..., sources=)); an LLM judge is its module
    and the policy text it is given."""
    from turngate.scoring.judges import judge_sources, policy_text

    digest = hashlib.sha256(spec.encode())
    for path in judge_sources(spec):
        digest.update(path.read_bytes())
    if spec.startswith(("openai:", "orq:")):
        digest.update(policy_text().encode())
    return digest.hexdigest()[:16]


def load_calibration(path: str | Path = DEFAULT_PATH) -> dict | None:
    """The stored calibration, or None when there is none (or it is unreadable: the gate then
    reports the raw rate only and warns, rather than failing the run)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    needed = {"judge", "tp", "fn", "fp", "tn"}
    return data if isinstance(data, dict) and needed <= data.keys() else None


def theta(p: float, tpr: float, tnr: float) -> float | None:
    """The corrected pass rate, clipped to [0, 1]; None when the judge is no better than chance."""
    youden = tpr + tnr - 1
    if youden <= 0:
        return None
    return min(1.0, max(0.0, (p + tnr - 1) / youden))


def corrected(passed: int, n: int, calibration: dict) -> dict:
    """{"theta", "low", "high", "method"} for a raw `passed` of `n` judge verdicts.
    theta is None (low 0, high 1) when there is no data or the calibrated judge is no
    better than chance, with the reason in method."""
    tp, fn, fp, tn = (int(calibration[k]) for k in ("tp", "fn", "fp", "tn"))
    pos, neg = tp + fn, fp + tn
    if n == 0 or pos == 0 or neg == 0:
        return {"theta": None, "low": 0.0, "high": 1.0,
                "method": "no correction: " + ("no judge verdicts" if n == 0 else "calibration lacks a class")}
    point = theta(passed / n, tp / pos, tn / neg)
    if point is None:
        return {"theta": None, "low": 0.0, "high": 1.0,
                "method": "no correction: the calibrated judge is no better than chance (TPR + TNR <= 1)"}
    rng = np.random.default_rng(SEED)
    p = rng.beta(passed + 0.5, n - passed + 0.5, DRAWS)
    tpr = rng.beta(tp + 0.5, fn + 0.5, DRAWS)
    tnr = rng.beta(tn + 0.5, fp + 0.5, DRAWS)
    youden = tpr + tnr - 1
    # a draw where the judge is no better than chance says nothing about θ: it widens to [0, 1]
    draws = np.where(youden > 0, np.clip((p + tnr - 1) / np.where(youden > 0, youden, 1.0), 0.0, 1.0), np.nan)
    draws = np.where(np.isnan(draws), rng.uniform(0.0, 1.0, DRAWS), draws)
    low, high = np.percentile(draws, [2.5, 97.5])
    return {"theta": point, "low": float(min(low, point)), "high": float(max(high, point)), "method": METHOD}


def judge_warning(judge_in_use: str, calibration: dict | None) -> str | None:
    """Why the corrected estimate should not be trusted for this run, or None."""
    if calibration is None:
        return (f"policy_judge: no judge calibration ({DEFAULT_PATH.name}); run "
                f"`{cli.command('calibrate-judge')} --judge {judge_in_use}` for a bias-corrected estimate")
    calibrated = calibration.get("judge")
    if calibrated != judge_in_use:
        return (f"policy_judge: the run used judge {judge_in_use!r} but the calibration is of {calibrated!r}; "
                f"the corrected estimate does not apply (recalibrate with --judge {judge_in_use})")
    stored = calibration.get("judge_fingerprint")
    try:
        now = judge_fingerprint(judge_in_use)
    except OSError:
        now = None
    if stored and now and stored != now:
        return (f"policy_judge: judge {judge_in_use!r} changed since it was calibrated on "
                f"{calibration.get('date', '?')}; recalibrate ({cli.command('calibrate-judge')} --judge {judge_in_use})")
    return None
