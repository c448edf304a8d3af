# Scheduler-gateway (issue #5): load the synthetic sample slots into the local stack's scheduling
# database, and measure FindSlots/ConfirmSlot latency over gRPC on SQLite and PostgreSQL.
.PHONY: slots-sample bench-scheduler

slots-sample: setup
	$(CITETRACE) slots load deploy/samples/slots.yaml

bench-scheduler: setup postgres-up
	$(PY) bench/scheduler_bench.py --backend both --requests 300 --proposals 200 --days-ahead 42 --json bench/results/scheduler.json
