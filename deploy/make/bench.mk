# Ask benchmark (issue 10): latency (p50/p95/p99) and asks/s at concurrency 1, 8, 32 over the real
# gRPC stack (six processes, embedded defaults, extractive generator; sample corpus + SciFact as
# tenant `scifact`), per-stage breakdown from the services' /metrics histograms, and the same
# questions through the same cores in one process. JSON: bench/results/bench.json.
# BENCH_SCIFACT_DOCS: SciFact documents ingested (default 0 = all 5,183; about 3.5 min the first
# time on 2 cores, about 1 min once the embedding cache holds them); e.g. 1000 for a quicker run.
BENCH_SCIFACT_DOCS ?= 0
BENCH_ASKS ?= 240

.PHONY: bench

# BACKEND=opensearch: retrieval on the local OpenSearch node (started if needed), in the stack and in
# the in-process cores; JSON in bench/results/bench-opensearch.json with the figures of the last
# embedded run (bench/results/bench.json) beside. BACKEND is shared with make bench-retrieval / eval.
BACKEND ?= embedded
BENCH_JSON = bench/results/$(if $(filter opensearch,$(BACKEND)),bench-opensearch,bench).json

bench: setup $(if $(filter opensearch,$(BACKEND)),opensearch-up)
	OPENBLAS_NUM_THREADS=1 $(PY) bench/ask_bench.py --scifact-docs $(BENCH_SCIFACT_DOCS) --asks $(BENCH_ASKS) \
		--backend $(BACKEND) --json $(BENCH_JSON) $(if $(filter opensearch,$(BACKEND)),--beside bench/results/bench.json)

# The extractive generator's lead claim on the labelled relevance pairs, words alone vs words and
# meaning (issue 15 §2): bench/results/generation-selection.json.
.PHONY: bench-generation-selection
bench-generation-selection: setup
	OPENBLAS_NUM_THREADS=1 $(PY) bench/generation_selection.py

# The lead claim's learned veto (services/generation/lead.py): train-lead refits model/lead.json on the
# relevance labelled set's tune half and reports the test and held-out halves (rule alone vs rule and
# veto, and the confident operating point); bench-lead reports the shipped weights. bench/results/lead.json.
.PHONY: train-lead bench-lead
train-lead: setup
	OPENBLAS_NUM_THREADS=1 $(PY) bench/train_lead.py --json bench/results/lead.json
bench-lead: setup
	OPENBLAS_NUM_THREADS=1 $(PY) bench/train_lead.py --report-only --json bench/results/lead.json
