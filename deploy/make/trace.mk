# Trace (issue #7): RecordTrace/GetTrace/ListTraces/VerifyChain over gRPC.
# TRACE_DB= a SQLAlchemy URL to benchmark PostgreSQL instead of SQLite.
TRACE_RECORDS ?= 500

.PHONY: bench-trace bench-trace-seal

bench-trace: setup
	$(PY) bench/trace_bench.py --records $(TRACE_RECORDS) $(if $(TRACE_DB),--database-url $(TRACE_DB))
	@$(MAKE) --no-print-directory bench-trace-seal

# The seal's cost (issue 16): µs per append (sign) and per verified item: bench/results/integrity-trace.json.
bench-trace-seal: setup
	$(PY) bench/integrity_bench.py --part trace --n $(TRACE_RECORDS)
