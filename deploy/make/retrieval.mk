# Retrieval (issue #3): SciFact through the gRPC API. BACKEND selects the search backend
# (embedded by default; BACKEND=opensearch starts the local node and compares both side by side).
BACKEND ?= embedded

.PHONY: bench-retrieval ingest-samples

bench-retrieval: setup $(if $(filter opensearch,$(BACKEND)),opensearch-up)
	BACKEND=$(BACKEND) $(PY) bench/retrieval_bench.py --backend $(BACKEND)

# Ingest the synthetic sample corpus into the running local stack (`make up` / `citetrace up`).
ingest-samples: setup
	$(CITETRACE) ingest deploy/samples/corpus
