# Question understanding (issue 14): the clinical boundary and intent classifiers.
# bench-boundary: per-class precision/recall on the test half of the labelled boundary set, the MedQuAD
# sample-1000 boundary rate, intent accuracy (en, nb-NO) on the intent test half, route CPU time.
# JSON: bench/results/boundary.json. train-understanding re-trains the heads on the tune halves and
# rewrites services/orchestrator/understanding/data/model.json (review the diff, bump its version).
.PHONY: bench-boundary train-understanding

bench-boundary: setup
	OPENBLAS_NUM_THREADS=1 $(PY) -m services.orchestrator.understanding.bench --misses --json bench/results/boundary.json

train-understanding: setup
	OPENBLAS_NUM_THREADS=1 $(PY) -m services.orchestrator.understanding.train
