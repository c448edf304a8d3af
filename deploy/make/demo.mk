# The orchestrator's demo (issue #8): `make demo-run` starts the stack on embedded defaults,
# ingests the synthetic samples, asks questions showing each outcome, prints one trace, stops.
.PHONY: demo-run

demo-run: setup
	@deploy/demo/run-demo.sh $(CITETRACE)
