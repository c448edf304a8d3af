# The evidence console (issue #20): its browser tests drive Debian's Chromium through Playwright.
# `make test` installs the browser first (idempotent); `make screenshots` refreshes the README's
# images from the same browser tests.

.PHONY: browser-deps test-browser screenshots

browser-deps:
	@deploy/tools/install-chromium.sh

test: browser-deps

test-browser: setup browser-deps
	$(VENV)/bin/pytest -q -m browser tests/console

screenshots: setup browser-deps
	CITETRACE_SCREENSHOT_DIR=docs/screenshots $(VENV)/bin/pytest -q tests/console/test_browser.py \
	  -k "exact_cited_span or receipt_review or mobile_viewport"
