# Makefile fragment: a real single-node OpenSearch 2.19 (+ k-NN, lucene engine) for dev and CI.
# Include from the main Makefile:  include deploy/opensearch-local/opensearch.mk
# Knobs are environment variables (OPENSEARCH_PORT, OPENSEARCH_TRANSPORT_PORT, OPENSEARCH_DATA_DIR,
# OPENSEARCH_HEAP, OPENSEARCH_START_TIMEOUT, OPENSEARCH_JAVA_HOME); see deploy/opensearch-local/README.md.

OPENSEARCH_LOCAL_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

.PHONY: opensearch-build opensearch-up opensearch-down opensearch-smoke

opensearch-build:
	@bash $(OPENSEARCH_LOCAL_DIR)/build.sh

# NODES=N (N>1) starts/stops an N-node cluster on 9201.. / 9301.. (cluster.sh); default one node on 9200.
NODES ?= 1

opensearch-up:
ifeq ($(NODES),1)
	@bash $(OPENSEARCH_LOCAL_DIR)/up.sh
else
	@bash $(OPENSEARCH_LOCAL_DIR)/cluster.sh up $(NODES)
endif

opensearch-down:
ifeq ($(NODES),1)
	@bash $(OPENSEARCH_LOCAL_DIR)/down.sh
else
	@bash $(OPENSEARCH_LOCAL_DIR)/cluster.sh down $(NODES)
endif

opensearch-smoke:
	@python3 $(OPENSEARCH_LOCAL_DIR)/smoke.py
