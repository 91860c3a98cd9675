"""SQL for the statements every request makes, built once per process from the models' metadata.

Django compiles a queryset to SQL each time it runs one. For the lookups every authenticated or
signed request makes (an API key with its organization, a generator key with its generator) that
compilation costs more CPU than running the SQL and building the model instances; `bulk_create` of
a record or an audit event the same way (what each buys on its route: docs/architecture.md, "Where we
step around Django"). These statements have a fixed shape, so their SQL is generated from the models' own
metadata on first use and reused. Values go through the same field methods the ORM uses, both ways:
`get_db_prep_save` in, the backend's and the field's converters out.
"""

from django.db import connections, models
from django.db.models.expressions import Col

# Model.from_db, Field.get_db_converters and set_cached_value are Django's internals: tested on these releases.
TESTED_VERSIONS = {"django": ("5.2",)}
# A statement may bind at most this many parameters (the PostgreSQL protocol's 16-bit count, binding
# on the server); Django's own batch size does not know it.
MAX_PARAMETERS = 65535


class ChildWithParents:
    """`SELECT child.*, parent.*, ... FROM child JOIN parent ON child.<fk> = parent.pk ... WHERE ... LIMIT 1`.

    One join per foreign key named in `parent_fields` (each to a table of its own). The WHERE clause:
    each field named in `match` equals the value given for it to `get`, and the filter of `where`, a
    queryset of the child (`ApiKey.objects.active()`) whose conditions name the child's fields or its
    parents': the rule is written once, on the QuerySet, and compiled here once. `get` returns the child
    with its parents attached, or None. LIMIT 1 without ORDER BY for unique matches; with `order` (the
    child's fields, ascending, or descending with a leading "-" as in `order_by`), the first of several.
    """

    def __init__(self, model: type[models.Model], *parent_fields: str, match: tuple[str, ...],
                 where: models.QuerySet | None = None, order: tuple[str, ...] = (), using: str = "default"):
        self.model = model
        self.foreign_keys = [model._meta.get_field(name) for name in parent_fields]
        tables = [model._meta.db_table] + [key.related_model._meta.db_table for key in self.foreign_keys]
        if not parent_fields or len(set(tables)) != len(tables):
            raise ValueError("each parent must be of a table of its own")  # the SQL names tables, not aliases
        self.match_fields = [model._meta.get_field(name) for name in match]
        if where is not None and where.model is not model:
            raise ValueError("`where` must be a queryset of the child")
        self.where = where
        self.order_fields = [(model._meta.get_field(name.removeprefix("-")), name.startswith("-")) for name in order]
        self.using = using
        self._compiled = None

    def get(self, *values) -> models.Model | None:
        sql, where_params, child_columns, parents_columns = self._compiled or self._compile()
        connection = connections[self.using]
        params = [field.get_db_prep_value(value, connection, prepared=False)
                  for field, value in zip(self.match_fields, values, strict=True)] + where_params
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        start = len(child_columns[0])
        child = _instance(self.model, self.using, connection, child_columns, row[:start])
        for foreign_key, parent_columns in zip(self.foreign_keys, parents_columns, strict=True):
            end = start + len(parent_columns[0])
            parent = _instance(foreign_key.related_model, self.using, connection, parent_columns, row[start:end])
            foreign_key.set_cached_value(child, parent)
            start = end
        return child

    def _compile(self):
        connection = connections[self.using]
        quote = connection.ops.quote_name
        child_table = self.model._meta.db_table
        child_columns = _columns(self.model, child_table, connection)
        select = [f"{quote(child_table)}.{quote(field.column)}" for field in self.model._meta.concrete_fields]
        joins, parents_columns = [], []
        for foreign_key in self.foreign_keys:
            parent = foreign_key.related_model
            parent_table = parent._meta.db_table
            parents_columns.append(_columns(parent, parent_table, connection))
            select += [f"{quote(parent_table)}.{quote(field.column)}" for field in parent._meta.concrete_fields]
            joins.append(f"INNER JOIN {quote(parent_table)} ON {quote(child_table)}.{quote(foreign_key.column)} = "
                         f"{quote(parent_table)}.{quote(parent._meta.pk.column)}")
        conditions = [f"{quote(child_table)}.{quote(field.column)} = %s" for field in self.match_fields]
        where_sql, where_params = self._where_sql(connection)
        if where_sql:
            conditions.append(where_sql)
        order = ", ".join(f"{quote(child_table)}.{quote(field.column)}{' DESC' * descending}"
                          for field, descending in self.order_fields)
        # Only quoted names from the models' metadata are formatted in; values are parameters.
        sql = (f"SELECT {', '.join(select)} FROM {quote(child_table)} {' '.join(joins)} "  # noqa: S608
               f"WHERE {' AND '.join(conditions)}{f' ORDER BY {order}' if order else ''} LIMIT 1")
        self._compiled = sql, where_params, child_columns, parents_columns
        return self._compiled

    def _where_sql(self, connection) -> tuple[str, list]:
        """`where`'s conditions as the ORM compiles them. They may reach a parent only through the joins made
        here: the SQL names tables, and each parent's table is joined once, from the child."""
        if self.where is None:
            return "", []
        query = self.where.query
        child_table = self.model._meta.db_table
        for alias, join in query.alias_map.items():
            if alias == child_table:
                continue
            if (alias != join.table_name or join.parent_alias != child_table
                    or join.join_field not in self.foreign_keys):
                raise ValueError(f"`where` joins {join.table_name} other than through a parent named here")
        sql, params = query.get_compiler(connection=connection).compile(query.where)
        return sql, list(params)


def _columns(model, table: str, connection) -> tuple[list[str], list[tuple[int, Col, list]]]:
    """The model's attribute names in column order, and the converters the ORM would apply, by column."""
    names, converters = [], []
    for index, field in enumerate(model._meta.concrete_fields):
        names.append(field.attname)
        column = field.get_col(table)  # a foreign key's column converts as the field it points to
        field_converters = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if field_converters:
            converters.append((index, column, field_converters))
    return names, converters


def _instance(model, using: str, connection, columns, values) -> models.Model:
    names, converters = columns
    values = list(values)
    for index, column, field_converters in converters:
        value = values[index]
        for convert in field_converters:
            value = convert(value, column, connection)
        values[index] = value
    return model.from_db(using, names, values)


class RowInserter:
    """`bulk_create` for instances whose primary key is already set, with the INSERT built once.

    Every concrete field is written: defaults and `pre_save` (auto_now_add) apply as in `save()`.
    """

    def __init__(self, model: type[models.Model], *, using: str = "default"):
        self.model = model
        self.using = using
        self._compiled = None

    def insert(self, instances: list[models.Model]) -> list[models.Model]:
        if not instances:
            return instances
        connection = connections[self.using]
        head, row_placeholder, fields = self._compiled or self._compile()
        batch = max(1, min(connection.ops.bulk_batch_size(fields, instances), MAX_PARAMETERS // len(fields)))
        with connection.cursor() as cursor:
            for start in range(0, len(instances), batch):
                chunk = instances[start:start + batch]
                params = []
                for instance in chunk:
                    if instance.pk is None:
                        raise ValueError("RowInserter needs the primary key set before the insert")
                    params.extend(field.get_db_prep_save(field.pre_save(instance, True), connection)
                                  for field in fields)
                cursor.execute(head + ", ".join([row_placeholder] * len(chunk)), params)
        for instance in instances:
            instance._state.adding = False
            instance._state.db = self.using
        return instances

    def _compile(self):
        quote = connections[self.using].ops.quote_name
        fields = list(self.model._meta.concrete_fields)
        columns = ", ".join(quote(field.column) for field in fields)
        head = f"INSERT INTO {quote(self.model._meta.db_table)} ({columns}) VALUES "  # noqa: S608 (names only)
        self._compiled = head, "(" + ", ".join(["%s"] * len(fields)) + ")", fields
        return self._compiled
