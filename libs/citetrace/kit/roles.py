"""Role vocabulary shared by every service. Audience roles on a document version use the same
names (e.g. a version for `staff` only is never shown to a `patient`)."""

PATIENT = "patient"
STAFF = "staff"
REVIEWER = "reviewer"
AUDITOR = "auditor"
# May ingest documents and change version status.
POLICY_ADMIN = "policy_admin"
# Internal calls between services (e.g. the orchestrator recording a trace); never given to users.
SERVICE = "service"

READERS_OF_QUERY_TEXT = (REVIEWER, AUDITOR)
