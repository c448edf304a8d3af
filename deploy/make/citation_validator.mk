# Citation validator (issue #6): per-class precision/recall of the support decision on the
# labelled set tests/citation_validator/support_labelled.yaml, with the committed thresholds.
# bench-support-tune re-runs the threshold search on the tune half and rewrites
# services/citation_validator/support_thresholds.yaml (review the diff before committing).
.PHONY: bench-support bench-support-tune

bench-support: setup
	OPENBLAS_NUM_THREADS=1 $(PY) -m services.citation_validator.bench_support --json bench/results/support.json

bench-support-tune: setup
	OPENBLAS_NUM_THREADS=1 $(PY) -m services.citation_validator.bench_support --tune --json bench/results/support.json

# Latency of Generate (extractive) and Validate over real gRPC on the sample corpus.
.PHONY: bench-contract
bench-contract: setup
	$(PY) bench/contract_bench.py --json bench/results/contract.json
