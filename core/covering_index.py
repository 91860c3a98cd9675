"""Swapping an index for one that covers more columns, on PostgreSQL without blocking writes (for migrations).

PostgreSQL builds the new index beside the old one (CREATE INDEX CONCURRENTLY: writes go on while it is
built), drops the old one the same way and gives the new one its name, so the name the queries and the
docs use never changes. Only in a migration with `atomic = False`: CONCURRENTLY refuses to run inside a
transaction. Other databases keep the index they have (SQLite has no INCLUDE; the key columns are the same).
"""

from collections.abc import Callable


def index_swap(*, table: str, name: str, key: str, include: tuple[str, ...]) -> Callable:
    """A RunPython function that makes `name` on `table` the index on `key` (SQL, e.g. `"org_id", "signed_at"
    DESC`) with `include` columns (none: the plain index again, for the way back)."""

    def swap(apps, schema_editor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        quote = schema_editor.quote_name
        building = quote(f"{name}_next")
        covering = f" INCLUDE ({', '.join(quote(column) for column in include)})" if include else ""
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {building}")  # left by a run killed midway
        schema_editor.execute(f"CREATE INDEX CONCURRENTLY {building} ON {quote(table)} ({key}){covering}")
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {quote(name)}")
        schema_editor.execute(f"ALTER INDEX {building} RENAME TO {quote(name)}")

    return swap
