# Citation validator (issues 6, 15): the support model.
# bench-support: per-class precision/recall of the shipped model on the project's labelled pairs
#   (tests/citation_validator/support_labelled.yaml) and CPU per claim -> bench/results/support.json.
# bench-grounding: WiCE test (oracle chunks; tuned on dev only), side by side with the published rows
#   -> bench/results/grounding.json (about 5 minutes on 2 cores).
# train-support: re-fits the embedded model on WiCE dev + the labelled tune half + perturbations and
#   rewrites services/citation_validator/support/model/support-embedded.json (features cached in
#   support/data/train_rows.jsonl.gz; TRAIN_ARGS=--recompute re-encodes everything, ~15 min).
# perturbations: regenerates support/data/perturbations.jsonl from the sample corpus.
.PHONY: bench-support bench-grounding train-support perturbations
TRAIN_ARGS ?=

bench-support: setup
	OPENBLAS_NUM_THREADS=1 $(PY) -m services.citation_validator.bench_support --json bench/results/support.json

bench-grounding: setup
	OPENBLAS_NUM_THREADS=1 $(PY) -m services.citation_validator.bench_grounding --json bench/results/grounding.json

train-support: setup
	OPENBLAS_NUM_THREADS=1 $(PY) -m services.citation_validator.support.train $(TRAIN_ARGS)

perturbations: setup
	$(PY) -m services.citation_validator.support.perturb

# Latency of Generate (extractive) and Validate over real gRPC on the sample corpus.
.PHONY: bench-contract
bench-contract: setup
	$(PY) bench/contract_bench.py --json bench/results/contract.json
