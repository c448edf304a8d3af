# Trace (issue #7): RecordTrace/GetTrace/ListTraces/VerifyChain over gRPC.
# TRACE_DB= a SQLAlchemy URL to benchmark PostgreSQL instead of SQLite.
TRACE_RECORDS ?= 500

.PHONY: bench-trace

bench-trace: setup
	$(PY) bench/trace_bench.py --records $(TRACE_RECORDS) $(if $(TRACE_DB),--database-url $(TRACE_DB))
