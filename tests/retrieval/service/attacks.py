"""A database writer attacking the store of record (issue 16): each function edits rows behind the
retrieval service's back with its own connection, the way someone with write access to the
database would, on SQLite or PostgreSQL."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from citetrace.identity import passage_id_of, sha256_hex, version_id_of

from services.retrieval.store.models import PassageRow, VersionRow

V, P = VersionRow.__table__, PassageRow.__table__


class Attacker:
    def __init__(self, url: str) -> None:
        self.engine = sa.create_engine(url)

    def close(self) -> None:
        self.engine.dispose()

    def text_of(self, tenant: str, version_id: str) -> str:
        with self.engine.connect() as conn:
            return conn.execute(sa.select(V.c.text).where(V.c.tenant_id == tenant, V.c.version_id == version_id)
                                ).scalar_one()

    def edit_text(self, tenant: str, version_id: str, old: str, new: str, *, recompute_passage_digests: bool) -> None:
        """Replaces `old` by `new` in the stored text; optionally recomputes every passage's
        content_sha256 from the edited text (what a careful attacker does)."""
        text = self.text_of(tenant, version_id)
        assert old in text
        edited = text.replace(old, new)
        with self.engine.begin() as conn:
            conn.execute(V.update().where(V.c.tenant_id == tenant, V.c.version_id == version_id)
                         .values(text=edited, text_length=len(edited)))
            if recompute_passage_digests:
                self._recompute_spans(conn, tenant, version_id, edited)

    @staticmethod
    def _recompute_spans(conn, tenant: str, version_id: str, text: str) -> None:
        for row in conn.execute(sa.select(P.c.passage_id, P.c.start_offset, P.c.end_offset).where(
                P.c.tenant_id == tenant, P.c.version_id == version_id)).all():
            conn.execute(P.update().where(P.c.passage_id == row.passage_id)
                         .values(content_sha256=sha256_hex(text[row.start_offset:row.end_offset])))

    def rewrite_version(self, tenant: str, version_id: str, old: str, new: str) -> str:
        """The thorough forgery: new text, and a recomputed version ID, passage IDs and passage
        digests, so every sha256 the store holds is consistent again. `new` must have the length
        of `old` (spans stay). Returns the forged version ID."""
        assert len(old) == len(new)
        text = self.text_of(tenant, version_id)
        edited = text.replace(old, new)
        forged = version_id_of(edited)
        with self.engine.begin() as conn:
            row = conn.execute(sa.select(V).where(V.c.tenant_id == tenant, V.c.version_id == version_id)).one()
            values = dict(row._mapping)
            values.update(version_id=forged, text=edited)
            conn.execute(V.insert().values(**values))
            passages = conn.execute(sa.select(P).where(P.c.tenant_id == tenant, P.c.version_id == version_id)).all()
            for p in passages:
                new_id = passage_id_of(tenant, p.document_id, forged, p.start_offset, p.end_offset)
                conn.execute(P.update().where(P.c.passage_id == p.passage_id).values(
                    passage_id=new_id, version_id=forged,
                    content_sha256=sha256_hex(edited[p.start_offset:p.end_offset])))
            conn.execute(V.delete().where(V.c.tenant_id == tenant, V.c.version_id == version_id))
        return forged

    def set_version(self, tenant: str, version_id: str, **values) -> None:
        """Edits metadata columns (roles, location_scope, status, valid_from, valid_to, ...)."""
        with self.engine.begin() as conn:
            conn.execute(V.update().where(V.c.tenant_id == tenant, V.c.version_id == version_id).values(**values))

    def set_passage(self, passage_id: str, **values) -> None:
        with self.engine.begin() as conn:
            conn.execute(P.update().where(P.c.passage_id == passage_id).values(**values))

    def strip_signature(self, tenant: str, version_id: str) -> None:
        self.set_version(tenant, version_id, signature=None, signing_key_id=None, seal_revision=None,
                         seal_transition=None, sealed_at=None, passages_sha256=None)

    def passage_ids(self, tenant: str, version_id: str) -> list[str]:
        with self.engine.connect() as conn:
            return list(conn.execute(sa.select(P.c.passage_id).where(
                P.c.tenant_id == tenant, P.c.version_id == version_id).order_by(P.c.ordinal)).scalars())


def far_future() -> datetime:
    from datetime import UTC

    return datetime(2099, 1, 1, tzinfo=UTC)
