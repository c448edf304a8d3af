# Retrieval (issue #3): SciFact through the gRPC API. BACKEND selects the search backend
# (embedded by default; BACKEND=opensearch starts the local node and compares both side by side).
BACKEND ?= embedded
# Extra bench flags, e.g. BENCH_ARGS="--fusion-method zscore --lexical-weight 0.55 --vector-weight 0.45".
BENCH_ARGS ?=

.PHONY: bench-retrieval bench-documents ingest-samples

bench-retrieval: setup $(if $(filter opensearch,$(BACKEND)),opensearch-up)
	BACKEND=$(BACKEND) $(PY) bench/retrieval_bench.py --backend $(BACKEND) $(BENCH_ARGS)
	@$(MAKE) --no-print-directory bench-documents

# PDF and HTML ingestion throughput (pages/s, share of time extracting vs embedding), issue 19:
# bench/results/documents-ingest.json.
bench-documents: setup
	$(PY) bench/documents_bench.py

# Ingest the synthetic sample corpus into the running local stack (`make up` / `citetrace up`).
ingest-samples: setup
	$(CITETRACE) ingest deploy/samples/corpus
