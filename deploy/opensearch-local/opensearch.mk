# Makefile fragment: a real single-node OpenSearch 2.19 (+ k-NN, lucene engine) for dev and CI.
# Include from the main Makefile:  include deploy/opensearch-local/opensearch.mk
# Knobs are environment variables (OPENSEARCH_PORT, OPENSEARCH_TRANSPORT_PORT, OPENSEARCH_DATA_DIR,
# OPENSEARCH_HEAP, OPENSEARCH_START_TIMEOUT, OPENSEARCH_JAVA_HOME); see deploy/opensearch-local/README.md.

OPENSEARCH_LOCAL_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

.PHONY: opensearch-build opensearch-up opensearch-down opensearch-smoke

opensearch-build:
	@bash $(OPENSEARCH_LOCAL_DIR)/build.sh

opensearch-up:
	@bash $(OPENSEARCH_LOCAL_DIR)/up.sh

opensearch-down:
	@bash $(OPENSEARCH_LOCAL_DIR)/down.sh

opensearch-smoke:
	@python3 $(OPENSEARCH_LOCAL_DIR)/smoke.py
