#!/usr/bin/env python3
"""Smoke test of the local OpenSearch node (stdlib only).

Checks: cluster health, the four plugins, a k-NN index on the pure-Java lucene engine with an
english-analyzed text field and a keyword field, a match query, a knn query with a filter inside
the knn clause, then deletes the index. Exits non-zero with a clear message on any failure.

Usage: python3 deploy/opensearch-local/smoke.py [--url http://127.0.0.1:9200]
       (default URL from OPENSEARCH_URL, else http://127.0.0.1:$OPENSEARCH_PORT, port 9200)
"""

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

EXPECTED_PLUGINS = {
    "org.opensearch.transport.Netty4Plugin",
    "org.opensearch.analysis.common.CommonAnalysisPlugin",
    "org.opensearch.painless.PainlessPlugin",
    "org.opensearch.knn.plugin.KNNPlugin",
}

DIM = 4
DOCS = {
    # id: (scope, body, vector)
    "d1": ("clinic-a", "Patients must arrive fifteen minutes before their appointment.", [1.0, 0.0, 0.0, 0.0]),
    "d2": ("clinic-b", "Cancellations require twenty-four hours notice.", [0.9, 0.1, 0.0, 0.0]),
    "d3": ("clinic-a", "Fasting is required before the blood test.", [0.0, 0.0, 1.0, 0.0]),
}


class SmokeFailure(Exception):
    pass


class Client:
    def __init__(self, base_url, timeout=30.0):
        self.base = base_url.rstrip("/")
        self.timeout = timeout

    def request(self, method, path, body=None, ok=(200, 201)):
        data = None
        headers = {}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        except (urllib.error.URLError, OSError) as e:
            raise SmokeFailure(f"{method} {path}: cannot reach {self.base}: {e}") from e
        text = raw.decode("utf-8", "replace")
        if status not in ok:
            raise SmokeFailure(f"{method} {path}: HTTP {status}: {text[:2000]}")
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return text


def main():
    default_url = os.environ.get("OPENSEARCH_URL") or (
        "http://127.0.0.1:%s" % os.environ.get("OPENSEARCH_PORT", "9200"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=default_url)
    args = ap.parse_args()

    c = Client(args.url)
    index = "citetrace-smoke-%d-%d" % (os.getpid(), int(time.time()))
    passed = []
    failed = []

    def check(name, cond, detail=""):
        if not cond:
            raise SmokeFailure(f"{name}: {detail}")
        passed.append(name)
        print(f"ok   {name}")

    created = False
    try:
        # 1. health
        health = c.request("GET", "/_cluster/health?wait_for_status=yellow&timeout=60s")
        check("cluster health yellow or green", health.get("status") in ("yellow", "green"),
              f"status={health.get('status')!r} ({health})")

        # 2. plugins: _cat/plugins (component column) and _nodes/plugins (classname)
        cat = c.request("GET", "/_cat/plugins?format=json")
        components = {row.get("component") for row in cat}
        check("_cat/plugins lists the 4 plugins", EXPECTED_PLUGINS <= components,
              f"missing {sorted(EXPECTED_PLUGINS - components)}; got {sorted(components)}")
        nodes = c.request("GET", "/_nodes/plugins")
        for node_id, node in nodes.get("nodes", {}).items():
            classes = {p.get("classname") for p in node.get("plugins", [])}
            check(f"_nodes/plugins of {node.get('name', node_id)} has the 4 plugin classes",
                  EXPECTED_PLUGINS <= classes, f"missing {sorted(EXPECTED_PLUGINS - classes)}")

        # 3. index with k-NN on the lucene engine
        c.request("PUT", f"/{index}", {
            "settings": {"index.knn": True, "number_of_shards": 1, "number_of_replicas": 0},
            "mappings": {"properties": {
                "embedding": {"type": "knn_vector", "dimension": DIM, "method": {
                    "name": "hnsw", "engine": "lucene", "space_type": "cosinesimil",
                    "parameters": {"m": 16, "ef_construction": 100}}},
                "body": {"type": "text", "analyzer": "english"},
                "scope": {"type": "keyword"},
            }},
        })
        created = True
        settings = c.request("GET", f"/{index}/_settings")[index]["settings"]["index"]
        check("index.knn is true", str(settings.get("knn")).lower() == "true", f"settings={settings}")
        props = c.request("GET", f"/{index}/_mapping")[index]["mappings"]["properties"]
        emb = props.get("embedding", {})
        method = emb.get("method", {})
        check("mapping: knn_vector on engine lucene",
              emb.get("type") == "knn_vector" and method.get("engine") == "lucene"
              and method.get("space_type") == "cosinesimil" and emb.get("dimension") == DIM,
              f"embedding mapping={emb}")
        check("mapping: english text + keyword",
              props.get("body", {}).get("analyzer") == "english"
              and props.get("scope", {}).get("type") == "keyword", f"mapping={props}")

        # 4. documents, refreshed
        for doc_id, (scope, body, vec) in DOCS.items():
            r = c.request("PUT", f"/{index}/_doc/{doc_id}?refresh=true",
                          {"scope": scope, "body": body, "embedding": vec})
            if r.get("result") != "created":
                raise SmokeFailure(f"index {doc_id}: {r}")
        count = c.request("GET", f"/{index}/_count")["count"]
        check("3 documents indexed and visible", count == 3, f"count={count}")

        # 5. match query: 'arriving' only matches 'arrive' through the english stemmer
        r = c.request("POST", f"/{index}/_search",
                      {"query": {"match": {"body": "arriving appointments"}}})
        ids = [h["_id"] for h in r["hits"]["hits"]]
        check("match query (english analyzer stems arriving->arrive)", ids == ["d1"], f"hits={ids}")

        # 6. knn query without and with a filter inside the knn clause
        query_vec = [1.0, 0.05, 0.0, 0.0]
        r = c.request("POST", f"/{index}/_search", {
            "size": 3, "query": {"knn": {"embedding": {"vector": query_vec, "k": 3}}}})
        ids = [h["_id"] for h in r["hits"]["hits"]]
        check("knn query ranks nearest first (d1, d2 before d3)",
              ids[:2] in (["d1", "d2"], ["d2", "d1"]) and "d3" in ids, f"hits={ids}")

        r = c.request("POST", f"/{index}/_search", {
            "size": 3, "query": {"knn": {"embedding": {
                "vector": query_vec, "k": 3, "filter": {"term": {"scope": "clinic-a"}}}}}})
        hits = r["hits"]["hits"]
        ids = [h["_id"] for h in hits]
        scopes = {h["_source"]["scope"] for h in hits}
        check("knn query with filter keeps only scope clinic-a (d2 excluded)",
              ids and ids[0] == "d1" and "d2" not in ids and scopes == {"clinic-a"},
              f"hits={ids} scopes={scopes}")

        r = c.request("POST", f"/{index}/_search", {
            "size": 3, "query": {"knn": {"embedding": {
                "vector": query_vec, "k": 3, "filter": {"term": {"scope": "clinic-b"}}}}}})
        ids = [h["_id"] for h in r["hits"]["hits"]]
        check("knn query with filter scope clinic-b returns only d2", ids == ["d2"], f"hits={ids}")

        # 7. k-NN's Painless functions (the launcher loads k-NN's Painless allowlist by hand)
        r = c.request("POST", f"/{index}/_search", {"size": 3, "query": {"script_score": {
            "query": {"term": {"scope": "clinic-a"}},
            "script": {"source": "cosineSimilarity(params.q, doc['embedding'])",
                       "params": {"q": query_vec}}}}})
        ids = [h["_id"] for h in r["hits"]["hits"]]
        check("painless cosineSimilarity (k-NN allowlist) in script_score", ids == ["d1", "d3"],
              f"hits={ids}")

    except SmokeFailure as e:
        failed.append(str(e))
        print(f"FAIL {e}", file=sys.stderr)
    except Exception as e:  # unexpected response shape etc.
        failed.append(repr(e))
        print(f"FAIL unexpected error: {e!r}", file=sys.stderr)
    finally:
        if created:
            try:
                c.request("DELETE", f"/{index}")
                passed.append("delete index")
                print("ok   delete index")
            except SmokeFailure as e:
                failed.append(str(e))
                print(f"FAIL delete index: {e}", file=sys.stderr)

    print(f"opensearch-smoke: {len(passed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
