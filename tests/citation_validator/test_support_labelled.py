"""The support decision on the labelled set (tests/citation_validator/support_labelled.yaml) with
the committed thresholds: per-class precision/recall, printed and held to floors. The same
numbers come from `make bench-support`."""

from __future__ import annotations

from services.citation_validator.bench_support import LABELLED, THRESHOLDS, evaluate, load_labelled, metrics
from services.citation_validator.support import Thresholds


def test_labelled_set_is_large_enough_and_synthetic():
    items = load_labelled()
    assert len(items) >= 60
    assert "SYNTHETIC" in LABELLED.read_text(encoding="utf-8")
    assert {i.label for i in items} == {"SUPPORTED", "UNSUPPORTED", "UNRESOLVED"}
    assert {i.split for i in items} == {"tune", "test"}


def test_per_class_precision_and_recall(capsys):
    items = load_labelled()
    thresholds = Thresholds.load(THRESHOLDS)
    predictions = evaluate(items, thresholds)  # lexical signals (the embedding assist is off in these thresholds)
    report = {split: metrics([i for i in items if i.split == split], predictions) for split in ("tune", "test")}
    report["all"] = metrics(items, predictions)
    with capsys.disabled():
        for split, m in report.items():
            print(f"\nsupport decision [{split}] n={m['n']} accuracy={m['accuracy']} macro-F1={m['macro_f1']}")
            for cls in ("SUPPORTED", "UNSUPPORTED", "UNRESOLVED"):
                print(f"  {cls:<12} precision={m[cls]['precision']} recall={m[cls]['recall']}")
    for split in ("tune", "test"):
        m = report[split]
        assert m["unsupported_called_supported"] == 0, "an unsupported claim was called SUPPORTED"
        assert m["SUPPORTED"]["precision"] == 1.0
        assert m["SUPPORTED"]["recall"] >= 0.8
        assert m["UNSUPPORTED"]["precision"] >= 0.9
        assert m["UNSUPPORTED"]["recall"] >= 0.7


def test_every_fixture_row_of_the_matrix_is_decided_as_labelled():
    """The named rows (addition, number, negation, dropped exception, names) are never missed."""
    items = {i.id: i for i in load_labelled()}
    predictions = evaluate(list(items.values()), Thresholds.load(THRESHOLDS))
    for key in ("l03", "l04", "l06", "l11", "l12", "l13", "l16", "l20", "l22", "l23", "l24", "l29", "l30",
                "l32", "l37", "l38", "l40", "l52", "l56", "l57", "l74", "l75", "l77", "l80"):
        assert predictions[key].verdict == "UNSUPPORTED", (key, items[key].claim, predictions[key].reason)
