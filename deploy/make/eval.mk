# Evaluation (issue 10): the labelled synthetic question set tests/eval/cases.yaml asked of the real
# stack (six processes, embedded defaults), scored per stage; table on stdout, JSON in
# bench/results/eval.json, compared with bench/results/eval-baseline.json (tolerance in the harness).
# `make test` runs the same comparison as tests/eval/test_eval_regression.py, on both search backends.
# BACKEND=opensearch: retrieval on the local OpenSearch node (started if needed), JSON in
# bench/results/eval-opensearch.json, compared with the same baseline and tolerance.
.PHONY: eval eval-baseline bench-probe
BACKEND ?= embedded
EVAL_JSON = bench/results/$(if $(filter opensearch,$(BACKEND)),eval-opensearch,eval).json

eval: setup $(if $(filter opensearch,$(BACKEND)),opensearch-up)
	PYTHONPATH=tests OPENBLAS_NUM_THREADS=1 $(PY) -m eval.harness --backend $(BACKEND) --json $(EVAL_JSON)

# Refresh the committed baseline on purpose (review the diff and say why in the commit).
eval-baseline: setup
	PYTHONPATH=tests OPENBLAS_NUM_THREADS=1 $(PY) -m eval.harness --json bench/results/eval.json --write-baseline

# The independent probe tenants (tests/e2e/unseen/LARCHMONT.md, KESTREL.md, JUNIPER.md, TAMARACK.md, SALTMARSH.md, LYNGSTAD.md, BRAMBLEWOOD.md, WRENHAVEN.md, THORNBURY.md, QUILLON.md, ASPENRIDGE.md, FERNVALE.md, HARROWGATE.md, CORRIB.md, MORVEN.md, PENHALLOW.md) through the whole stack,
# scored against labels written before any run.
bench-probe: setup
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --json bench/results/probe-larchmont.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant kestrel --json bench/results/probe-kestrel.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant juniper --json bench/results/probe-juniper.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant tamarack --json bench/results/probe-tamarack.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant saltmarsh --json bench/results/probe-saltmarsh.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant lyngstad --json bench/results/probe-lyngstad.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant bramblewood --json bench/results/probe-bramblewood.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant wrenhaven --json bench/results/probe-wrenhaven.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant thornbury --json bench/results/probe-thornbury.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant quillon --json bench/results/probe-quillon.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant aspenridge --json bench/results/probe-aspenridge.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant fernvale --json bench/results/probe-fernvale.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant harrowgate --json bench/results/probe-harrowgate.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant corrib --json bench/results/probe-corrib.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant morven --json bench/results/probe-morven.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant penhallow --json bench/results/probe-penhallow.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant cedarbrook --json bench/results/probe-cedarbrook.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant totara --json bench/results/probe-totara.json
	PYTHONPATH=libs:.:tests OPENBLAS_NUM_THREADS=1 $(PY) bench/unseen_probe.py --tenant protea --json bench/results/probe-protea.json
