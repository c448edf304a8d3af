#!/usr/bin/env bash
# Builds the embedded OpenSearch node into target/ (launcher classes, runtime jars in target/lib,
# the k-NN plugin zip unpacked in target/knn). Idempotent: silent when already built from the
# same pom.xml and sources. FORCE=1 rebuilds.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

stamp_file="$OSL_TARGET/.build-stamp"
inputs_hash() {
  (cd "$OSL_DIR" && find pom.xml src -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}
built_ok() {
  [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$(inputs_hash)" ] \
    && [ -f "$OSL_TARGET/opensearch-local.jar" ] \
    && compgen -G "$OSL_TARGET/lib/opensearch-2.*.jar" >/dev/null \
    && compgen -G "$OSL_TARGET/knn/opensearch-knn-*.jar" >/dev/null
}

if [ "${FORCE:-0}" != "1" ] && built_ok; then
  exit 0
fi

osl_find_java17
# shellcheck disable=SC2206
mvn_cmd=(${MVN:-mvn})
command -v "${mvn_cmd[0]}" >/dev/null 2>&1 || osl_die "maven not found (apt-get install maven)"
osl_log "building into $OSL_TARGET (Java: $OSL_JAVA_HOME) ..."
start=$(date +%s)
# 'clean' so that jars of an older dependency set never linger in target/lib.
build_log="$(mktemp "${TMPDIR:-/tmp}/opensearch-local-build.XXXXXX")"
if ! JAVA_HOME="$OSL_JAVA_HOME" "${mvn_cmd[@]}" -B -q -Dstyle.color=never -f "$OSL_DIR/pom.xml" \
      clean package >"$build_log" 2>&1; then
  tail -n 40 "$build_log" >&2
  osl_die "maven build failed (full log: $build_log)"
fi
mv "$build_log" "$OSL_TARGET/build.log"
inputs_hash >"$stamp_file"
osl_log "built in $(( $(date +%s) - start ))s ($(ls "$OSL_TARGET/lib" | wc -l) jars in target/lib, $(ls "$OSL_TARGET/knn"/*.jar | wc -l) in target/knn)"
