"""citetrace index list|rebuild|switch GENERATION|rollback: the OpenSearch index generations;
citetrace index verify|resign: the signed store of record (issue 16).

The search index is derived data. Each rebuild writes a new index `<prefix>passages-<generation>`
from the store of record and then moves the alias `<prefix>passages` to it in one atomic
`_aliases` request; `switch` and `rollback` move the alias between existing generations.

The command talks to the store of record and to OpenSearch directly (no RPC), with the retrieval
service's own settings: every CITETRACE_RETRIEVAL_* variable applies (database URL, OpenSearch
hosts, auth, TLS, index prefix, embedding cache), and the flags below override them. A running
retrieval service searches through the alias, so it sees a switch at once (its reported
generation follows within opensearch's generation TTL, 2 s). Writes the service makes while a
rebuild is running go to the old generation and are not in the new one: rebuild when no
ingestion is running, or restart the service (with opensearch_rebuild_on_start it rebuilds itself).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time

from apps.cli.common import add_data_dir, fail


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("index", help="list, rebuild and switch the OpenSearch index generations")
    commands = parser.add_subparsers(dest="index_command", required=True, metavar="SUBCOMMAND")

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--hosts", help="OpenSearch hosts, comma-separated (default: "
                         "$CITETRACE_RETRIEVAL_OPENSEARCH_HOSTS or http://127.0.0.1:9200)")
        sub.add_argument("--index-prefix", help="index name prefix (default: $CITETRACE_RETRIEVAL_OPENSEARCH_INDEX_PREFIX "
                         "or citetrace-)")
        add_data_dir(sub)

    listing = commands.add_parser("list", help="the generations, oldest first, the live one marked")
    listing.add_argument("--json", action="store_true", help="print JSON")
    common(listing)
    listing.set_defaults(func=run_list)

    rebuild = commands.add_parser("rebuild", help="write a new generation from the store of record and make it live")
    rebuild.add_argument("--database-url", help="SQLAlchemy URL of the store of record "
                         "(default: $CITETRACE_RETRIEVAL_DATABASE_URL or the SQLite file under --data-dir)")
    rebuild.add_argument("--keep", type=int, help="generations to keep (older non-live ones are deleted)")
    common(rebuild)
    rebuild.set_defaults(func=run_rebuild)

    switch = commands.add_parser("switch", help="make an existing generation live (atomic alias switch)")
    switch.add_argument("generation", help="a name from `citetrace index list`, e.g. 20261130t133512-000")
    common(switch)
    switch.set_defaults(func=run_switch)

    verify = commands.add_parser("verify", help="verify every stored version and passage (signature, text digest, "
                                 "passage rows); exit 1 naming each one that fails")
    verify.add_argument("--database-url", help="SQLAlchemy URL of the store of record "
                        "(default: $CITETRACE_RETRIEVAL_DATABASE_URL or the SQLite file under --data-dir)")
    verify.add_argument("--json", action="store_true", help="print JSON")
    add_data_dir(verify)
    verify.set_defaults(func=run_verify)

    resign = commands.add_parser("resign", help="after a key rotation: sign every version that verifies with the "
                                 "current signing key (then the old public key can be dropped)")
    resign.add_argument("--database-url", help="SQLAlchemy URL of the store of record")
    resign.add_argument("--adopt-unsigned", action="store_true",
                        help="also sign versions stored before signing existed whose text and passages still "
                        "match their digests (you vouch that nobody forged them)")
    add_data_dir(resign)
    resign.set_defaults(func=run_resign)

    rollback = commands.add_parser("rollback", help="make the generation before the live one live again")
    common(rollback)
    rollback.set_defaults(func=run_rollback)


def _settings(args: argparse.Namespace, **extra):
    from citetrace.kit.settings import SettingsError, load_settings

    from services.retrieval.settings import PREFIX, Settings

    try:
        settings = load_settings(Settings, PREFIX)
        overrides = {"backend": "opensearch", "port": 0, "metrics_port": -1, **extra}
        if f"{PREFIX}DATA_DIR" not in os.environ:
            overrides["data_dir"] = args.data_dir
        if args.hosts:
            overrides["opensearch_hosts"] = tuple(h.strip() for h in args.hosts.split(",") if h.strip())
        if args.index_prefix:
            overrides["opensearch_index_prefix"] = args.index_prefix
        return dataclasses.replace(settings, **overrides)
    except SettingsError as exc:
        fail(str(exc))


def _backend(settings):
    """The OpenSearch backend of these settings (backend is always opensearch here)."""
    from services.retrieval.bootstrap import make_backend

    return make_backend(settings)


def _guard(action):
    from citetrace.kit.errors import DomainError
    from citetrace.signing import KeyFileError

    try:
        return action()
    except DomainError as exc:
        fail(f"{exc.reason}: {exc.message}", code=1)
    except KeyFileError as exc:
        fail(str(exc), code=2)


def _store_settings(args: argparse.Namespace):
    """The retrieval settings for commands on the store of record alone (no search backend)."""
    from citetrace.kit.settings import SettingsError, load_settings

    from services.retrieval.settings import PREFIX, Settings

    try:
        settings = load_settings(Settings, PREFIX)
        overrides = {"backend": "embedded", "port": 0, "metrics_port": -1}
        if f"{PREFIX}DATA_DIR" not in os.environ:
            overrides["data_dir"] = args.data_dir
        if args.database_url:
            overrides["database_url"] = args.database_url
        return dataclasses.replace(settings, **overrides)
    except SettingsError as exc:
        fail(str(exc))


def _open_store(args: argparse.Namespace, *, sign: bool):
    from services.retrieval.bootstrap import open_store

    settings = _store_settings(args)
    return settings, _guard(lambda: open_store(settings, sign=sign))


def run_verify(args: argparse.Namespace) -> int:
    from services.retrieval.core import verify_store

    settings, store = _open_store(args, sign=False)
    started = time.perf_counter()
    try:
        report = verify_store(store)
    finally:
        store.close()
    elapsed = time.perf_counter() - started
    if args.json:
        print(json.dumps({"ok": report.ok, "versions_checked": report.versions_checked,
                          "passages_checked": report.passages_checked, "seconds": round(elapsed, 3),
                          "refused": [dataclasses.asdict(r) for r in report.refused]}, indent=2))
    else:
        for r in report.refused:
            print(f"REFUSED {r.tenant_id} {r.document_id} {r.version_id} {r.reason}: {r.message}")
        verdict = "ok" if report.ok else f"{len(report.refused)} version(s) refused"
        print(f"store {settings.resolved_database_url()}: {report.versions_checked} versions, "
              f"{report.passages_checked} passages checked in {elapsed:.2f}s: {verdict}")
    return 0 if report.ok else 1


def run_resign(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    settings, store = _open_store(args, sign=True)
    try:
        report = store.reseal(adopt_unsigned=args.adopt_unsigned, now=datetime.now(UTC))
    finally:
        store.close()
    for line in report["refused"]:
        print(f"REFUSED {line}")
    print(f"signed with {store.sealer.signer.key_id}: {len(report['resigned'])} re-signed, "
          f"{len(report['adopted'])} adopted, {len(report['refused'])} refused (left as they are)")
    return 0 if not report["refused"] else 1


def run_list(args: argparse.Namespace) -> int:
    settings = _settings(args)
    backend = _backend(settings)
    generations = _guard(backend.list_generations)
    if args.json:
        print(json.dumps({"alias": backend.config.alias,
                          "generations": [dataclasses.asdict(g) for g in generations]}, indent=2))
        return 0
    if not generations:
        print(f"no generations under {backend.config.alias}-* (hosts {', '.join(backend.config.hosts)})")
        return 0
    print(f"{'':2}{'GENERATION':22}{'DOCS':>10}  CREATED")
    for g in generations:
        print(f"{'*' if g.live else '':2}{g.name:22}{g.docs:>10}  {g.created_at}")
    print(f"(* = live: the alias {backend.config.alias})")
    return 0


def run_rebuild(args: argparse.Namespace) -> int:
    from services.retrieval import bootstrap

    extra = {"database_url": args.database_url} if args.database_url else {}
    if args.keep is not None:
        extra["opensearch_keep_generations"] = args.keep
    settings = _settings(args, **extra)
    backend = _backend(settings)
    service = bootstrap.build(settings, backend=backend)
    core = service.core
    started = time.perf_counter()
    try:
        _guard(core.open)
        before = _guard(backend.live_generation)
        count = _guard(lambda: core.rebuild_index(new_generation=True))
        after = _guard(backend.live_generation)
    finally:
        service.close()
    print(f"rebuilt {count} passages from {settings.resolved_database_url()} into generation {after} "
          f"in {time.perf_counter() - started:.1f}s; live was {before or 'none'}")
    return 0


def run_switch(args: argparse.Namespace) -> int:
    backend = _backend(_settings(args))
    previous = _guard(lambda: backend.switch(args.generation))
    print(f"live generation: {args.generation} (was {previous or 'none'})")
    return 0


def run_rollback(args: argparse.Namespace) -> int:
    backend = _backend(_settings(args))
    old, new = _guard(backend.rollback)
    print(f"rolled back: live generation {new} (was {old or 'none'})")
    return 0
