# Retrieval (issue #3): SciFact through the gRPC API. BACKEND selects the search backend
# (embedded by default; BACKEND=opensearch starts the local node and compares both side by side).
BACKEND ?= embedded
# Extra bench flags, e.g. BENCH_ARGS="--fusion-method zscore --lexical-weight 0.55 --vector-weight 0.45".
BENCH_ARGS ?=

.PHONY: bench-retrieval bench-documents bench-retrieval-seal ingest-samples

bench-retrieval: setup $(if $(filter opensearch,$(BACKEND)),opensearch-up)
	BACKEND=$(BACKEND) $(PY) bench/retrieval_bench.py --backend $(BACKEND) $(BENCH_ARGS)
	@$(MAKE) --no-print-directory bench-documents
	@$(MAKE) --no-print-directory bench-retrieval-seal

# Signing and verifying versions (issue 16): µs per ingestion and per read:
# bench/results/integrity-retrieval.json.
bench-retrieval-seal: setup
	$(PY) bench/integrity_bench.py --part retrieval --n 500

# PDF and HTML ingestion throughput (pages/s, share of time extracting vs embedding), issue 19:
# bench/results/documents-ingest.json.
bench-documents: setup
	$(PY) bench/documents_bench.py

# Ingest the synthetic sample corpus into the running local stack (`make up` / `citetrace up`).
ingest-samples: setup
	$(CITETRACE) ingest deploy/samples/corpus

# Relevance (issue 15): the question-passage model of services/retrieval/relevance.py on the labelled set
# tests/relevance/relevance_labelled.yaml (tune = odd ids, test = even ids), tests/relevance/tune/ (tune) and
# tests/relevance/heldout/ (reported only). bench-relevance evaluates the
# shipped weights; train-relevance refits them (model/relevance.json) and reports the held-out half.
.PHONY: bench-relevance train-relevance
bench-relevance: setup
	OPENBLAS_NUM_THREADS=1 $(PY) -m services.retrieval.train_relevance --report-only --json bench/results/relevance.json

train-relevance: setup
	OPENBLAS_NUM_THREADS=1 $(PY) -m services.retrieval.train_relevance --json bench/results/relevance.json

# Rerank (issue 15 point 3): SciFact nDCG@10 of the shipped fusion with and without the embedded
# reranker (blend weight chosen on a sample of TRAIN queries, TEST reported) and its CPU per search
# -> bench/results/rerank.json. Corpus vectors cached under .citetrace/cache/ (first run: minutes).
.PHONY: bench-rerank
bench-rerank: setup
	OPENBLAS_NUM_THREADS=1 PYTHONPATH=libs:. $(PY) bench/scifact_rerank.py --out bench/results/rerank.json

# The labelled relevance questions searched over their tenant's whole passage pool, rerank none vs
# embedded: how often the first hit answers (issue 15 point 3 on text nobody here wrote)
# -> bench/results/relevance-search.json (about a minute).
.PHONY: bench-relevance-search
bench-relevance-search: setup
	OPENBLAS_NUM_THREADS=1 PYTHONPATH=libs:. $(PY) bench/relevance_search.py --json bench/results/relevance-search.json
