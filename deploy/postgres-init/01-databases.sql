-- compose: one database per service store (retrieval's store of record, the scheduling system of
-- record, the trace store, the orchestrator's conversations). Runs once, when the postgres volume is first initialised.
CREATE DATABASE retrieval OWNER citetrace;
CREATE DATABASE scheduling OWNER citetrace;
CREATE DATABASE trace OWNER citetrace;
CREATE DATABASE orchestrator OWNER citetrace;
