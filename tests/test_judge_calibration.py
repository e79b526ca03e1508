"""Judge calibration: the labels file, calibrate_judge on a small labels file, the θ correction."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.scoring_helpers import call, refund_ok, row, turn
from turngate.commands import calibrate_judge
from turngate.commands.calibrate_judge import DEFAULT_LABELS, kappa_interval, load_labels
from turngate.scoring.judge_correction import (
    corrected,
    judge_fingerprint,
    judge_warning,
    load_calibration,
    theta,
)
from turngate.verdict.stats import cohen_kappa, wilson

# -- the θ correction ----------------------------------------------------------------------


def test_theta_on_known_numbers():
    # p = θ·TPR + (1-θ)(1-TNR): with θ = 6/7, TPR 0.9, TNR 0.8 the judge reports 0.8
    assert theta(0.8, 0.9, 0.8) == pytest.approx(6 / 7)
    assert theta(0.9, 1.0, 1.0) == pytest.approx(0.9)  # a perfect judge needs no correction


def test_theta_is_clipped_and_undefined_for_a_chance_judge():
    assert theta(0.95, 0.9, 0.9) == 1.0  # raw (0.95+0.9-1)/0.8 = 1.0625
    assert theta(0.05, 0.9, 0.9) == 0.0  # raw -0.0625
    assert theta(0.5, 0.5, 0.5) is None and theta(0.5, 0.4, 0.5) is None


CAL = {"judge": "offline", "tp": 90, "fn": 10, "fp": 20, "tn": 80}


def test_corrected_point_and_interval():
    out = corrected(80, 100, CAL)
    assert out["theta"] == pytest.approx(6 / 7)
    assert 0.0 <= out["low"] < out["theta"] < out["high"] <= 1.0
    assert out == corrected(80, 100, CAL)  # seeded: the same inputs give the same interval
    assert "Jeffreys" in out["method"]


def test_corrected_interval_narrows_with_more_calibration_and_more_runs():
    small = corrected(80, 100, CAL)
    big = corrected(800, 1000, {k: v * 10 if k != "judge" else v for k, v in CAL.items()})
    assert big["theta"] == pytest.approx(small["theta"])
    assert big["high"] - big["low"] < small["high"] - small["low"]


def test_corrected_degenerate_cases_say_why():
    assert corrected(0, 0, CAL)["theta"] is None
    chance = corrected(50, 100, {"judge": "offline", "tp": 5, "fn": 5, "fp": 5, "tn": 5})
    assert chance["theta"] is None and (chance["low"], chance["high"]) == (0.0, 1.0)
    assert "no better than chance" in chance["method"]
    clipped = corrected(99, 100, CAL)
    assert clipped["theta"] == 1.0 and clipped["high"] == 1.0


def test_judge_warning():
    assert "no judge calibration" in judge_warning("offline", None)
    assert "'openai:gpt-4o' but the calibration is of 'offline'" in judge_warning("openai:gpt-4o", CAL)
    same = {**CAL, "judge_fingerprint": judge_fingerprint("offline")}
    assert judge_warning("offline", same) is None
    stale = {**CAL, "judge_fingerprint": "0" * 16, "date": "2026-01-01"}
    assert "changed since it was calibrated on 2026-01-01" in judge_warning("offline", stale)


def test_load_calibration(tmp_path):
    assert load_calibration(tmp_path / "none.json") is None
    (tmp_path / "bad.json").write_text("{not json")
    assert load_calibration(tmp_path / "bad.json") is None
    (tmp_path / "ok.json").write_text(json.dumps(CAL))
    assert load_calibration(tmp_path / "ok.json") == CAL


# -- calibrate_judge on a small labels file -------------------------------------------------

def example(ex_id, human, the_row, the_turn, split="test"):
    return {"id": ex_id, "row": the_row.model_dump(mode="json", exclude_unset=True), "turn": the_turn,
            "human": human, "reason": "test", "split": split, "origin": "hand-written test"}


def small_labels():
    """Two true passes, one missed pass, one missed failure, one caught failure (by the offline
    judge's documented rules), and one dev example that the test split must ignore."""
    refund_call, write = refund_ok()
    checked = call("check_return_eligibility", {"order_id": "A-1001", "eligible": True, "return_by": "2026-10-28"},
                   order_id="A-1001")
    good_row = row({"refunds": [{"order_id": "A-1001", "amount": 129.0}]})
    refund_answer = "Refunded 129.00 EUR on order A-1001 (reference W-0001)."
    over_row = row({"refunds": []}, message="Refund order A-1003 in full.",
                   expected_output="Refuses: the refund comes to 1141.73 USD, over the 200 USD limit.")
    status_row = row({}, message="What's the status of A-1002?", expected_output="Looks up A-1002 and gives its status.")
    lookup = call("get_order", {"order_id": "A-1002", "status": "shipped", "total": 45.5, "currency": "EUR"},
                  order_id="A-1002")
    return [
        example("tp1", "pass", good_row, turn(refund_answer, [checked, refund_call], [write])),
        example("tp2", "pass", good_row, turn("Done: " + refund_answer, [checked, refund_call], [write])),
        # the judge demands the rubric's 1141.73; a human accepts the refusal without it
        example("fn1", "pass", over_row, turn("I can't refund that: it is over the 200 USD limit.",
                                              user="Refund order A-1003 in full.")),
        # every fact is grounded, but the advice is wrong (a shipped order cannot be cancelled):
        # the rules check claims and facts, not advice
        example("fp1", "fail", status_row, turn("Order A-1002 is shipped. Just cancel it and order again.", [lookup],
                                                user="What's the status of A-1002?")),
        # a claimed refund with no refund_order call
        example("tn1", "fail", good_row, turn(refund_answer)),
        example("dev1", "fail", good_row, turn(refund_answer), split="dev"),
    ]


def write_labels(path, items):
    path.write_text("".join(json.dumps(x) + "\n" for x in items))
    return path


def test_calibrate_judge_counts_rates_and_disagreements(tmp_path):
    labels = write_labels(tmp_path / "labels.jsonl", small_labels())
    cal_path = tmp_path / "cal.json"
    code = calibrate_judge.main(["--judge", "offline", "--labels", str(labels), "--out", str(tmp_path),
                                 "--calibration", str(cal_path)])
    assert code == 0
    cal = json.loads(cal_path.read_text())
    assert (cal["tp"], cal["fn"], cal["fp"], cal["tn"], cal["n"]) == (2, 1, 1, 1, 5)
    assert cal["tpr"] == pytest.approx(2 / 3) and cal["tnr"] == pytest.approx(1 / 2)
    assert cal["kappa"] == pytest.approx((3 / 5 - 13 / 25) / (1 - 13 / 25))
    assert cal["intervals"]["tpr"] == pytest.approx(list(wilson(2, 3)))
    assert cal["intervals"]["tnr"] == pytest.approx(list(wilson(1, 2)))
    low, high = cal["intervals"]["kappa"]
    assert -1 <= low <= cal["kappa"] <= high <= 1
    assert cal["judge"] == "offline" and cal["split"] == "test" and len(cal["labels_sha256"]) == 64
    assert cal["judge_fingerprint"] == judge_fingerprint("offline")
    dis = json.loads((tmp_path / "judge_disagreements-test.json").read_text())
    assert sorted(d["id"] for d in dis["disagreements"]) == ["fn1", "fp1"]
    fn1 = next(d for d in dis["disagreements"] if d["id"] == "fn1")
    assert fn1["judge"] == "fail" and "1141.73" in fn1["judge_reason"]


def test_dev_split_is_not_stored(tmp_path):
    labels = write_labels(tmp_path / "labels.jsonl", small_labels())
    cal_path = tmp_path / "cal.json"
    assert calibrate_judge.main(["--split", "dev", "--labels", str(labels), "--out", str(tmp_path),
                                 "--calibration", str(cal_path)]) == 0
    assert not cal_path.exists()
    dis = json.loads((tmp_path / "judge_disagreements-dev.json").read_text())
    assert dis["count"] == 0  # the judge fails the claimed refund, like the human


def test_bad_labels_are_one_line_errors(tmp_path, capsys):
    items = small_labels()
    items[2]["human"] = "maybe"
    labels = write_labels(tmp_path / "labels.jsonl", items)
    assert calibrate_judge.main(["--labels", str(labels), "--out", str(tmp_path),
                                 "--calibration", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {labels}:3: human:") and "\n" not in err
    assert calibrate_judge.main(["--judge", "nonsense", "--labels", str(labels)]) == 2
    assert "unknown judge 'nonsense'" in capsys.readouterr().err


def test_kappa_interval_is_seeded_and_brackets_kappa():
    k = cohen_kappa(18, 2, 6, 11)
    low, high = kappa_interval(18, 2, 6, 11)
    assert low < k < high and (low, high) == kappa_interval(18, 2, 6, 11)


# -- the shipped labels ----------------------------------------------------------------------

def test_shipped_labels_are_balanced_and_from_real_runs():
    examples = load_labels(DEFAULT_LABELS)
    assert len(examples) >= 60
    for split in ("dev", "test"):
        counts = Counter(ex.human for ex in examples if ex.split == split)
        assert min(counts["pass"], counts["fail"]) / sum(counts.values()) >= 0.35, (split, counts)
    origins = " ".join(ex.origin for ex in examples)
    for source in ("v1 seed", "v2 seed", "v3 seed", "hand-edited"):
        assert source in origins
    # a row's variants sit in one split only, so tuning on dev does not leak into test
    splits_of = {}
    for ex in examples:
        splits_of.setdefault(ex.row.id, set()).add(ex.split)
    assert all(len(s) == 1 for s in splits_of.values())


def test_the_committed_calibration_describes_todays_offline_judge():
    """A change to the judge's rules (turngate/scoring/judges/, turngate/core/pii.py) without rerunning
    calibrate_judge.py leaves the gate's bias correction describing another judge: the gate
    warns, and so does this test, before it lands."""
    cal = load_calibration()
    assert cal is not None and cal["judge"] == "offline"
    assert cal["judge_fingerprint"] == judge_fingerprint("offline"), \
        "the offline judge changed since evals/judge_calibration.json: run python evals/calibrate_judge.py --judge offline"
