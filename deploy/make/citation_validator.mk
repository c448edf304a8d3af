# Citation validator (issue #6): per-class precision/recall of the support decision on the
# labelled set tests/citation_validator/support_labelled.yaml, with the committed thresholds.
# bench-support-tune re-runs the threshold search on the tune half and rewrites
# services/citation_validator/support_thresholds.yaml (review the diff before committing).
.PHONY: bench-support bench-support-tune

bench-support: setup
	OPENBLAS_NUM_THREADS=1 $(PY) -m services.citation_validator.bench_support --json bench/results/support.json

bench-support-tune: setup
	OPENBLAS_NUM_THREADS=1 $(PY) -m services.citation_validator.bench_support --tune --json bench/results/support.json
