"""The guarded validators, one a draft, and the registry of the drafts' metaschemas they resolve in.

A :class:`Dialect` is jsonschema's validator class for one draft rebuilt with the guarded keywords
(:mod:`.schema_keywords`), never registered with jsonschema: it makes the validator an answer is
checked with, and judges a schema against its draft's metaschema (:meth:`Dialect.first_flaw`), walked
once as a table (:mod:`.metaschema`). Nothing is ever retrieved: the registry holds the drafts'
metaschemas, and each check adds its own schema.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema
import jsonschema_specifications
import referencing
import referencing.jsonschema
from jsonschema.validators import validator_for

from .metaschema import KeywordTable, Leaf, is_sound, keyword_table
from .schema_keywords import charged_applicable, guarded_keywords, is_valid
from .schema_steps import JUDGING_FORMATS, CheckStopped, RunningCheck, json_pointer

__all__ = ["Dialect", "metaschemas", "guarded_dialect"]


class Dialect:
    """A draft's guarded validator class, with the resolver base that holds the metaschemas."""

    __slots__ = ("validator", "meta", "registry", "specification", "_table", "_leaves")

    def __init__(self, validator: type[Any], meta: Dialect | None, registry: referencing.Registry[Any],
                 specification: referencing.Specification[Any]) -> None:
        self.validator = validator
        self.meta = meta
        self.registry = registry
        self.specification = specification
        self._table: KeywordTable | None | bool = False  # (False: not read yet)
        self._leaves: dict[int, Any] = {}

    def make(self, schema: Any) -> Any:
        """A validator for ``schema`` whose references resolve in the schema and the metaschemas only."""
        resource = self.specification.create_resource(schema)
        uri = resource.id() or ""
        # Crawled once here, so every later anchor lookup finds the anchors without walking again.
        registry = self.registry.with_resource(uri, resource).crawl()
        return self.validator(schema, _resolver=registry.resolver(base_uri=uri))

    def _uri(self) -> str:
        return (self.validator.ID_OF(self.validator.META_SCHEMA) or "").rstrip("#")

    def judge(self) -> Any:
        """A validator for this draft's metaschema (as held in the registry, without its ``$schema``)."""
        uri = self._uri()
        return self.validator(self.registry.contents(uri), format_checker=JUDGING_FORMATS,
                              _resolver=self.registry.resolver(base_uri=uri))

    def first_flaw(self, schema: Any, check: RunningCheck) -> tuple[str, str] | None:
        """Where ``schema`` (a draft of this metaschema) fails its metaschema and why, or ``None``.

        Walked once by the metaschema read as a table (see :mod:`.metaschema`); where the table cannot
        vouch for a value, the subschema object holding it (the whole schema, for a draft without a
        table) is judged whole by jsonschema, so the error reported is jsonschema's own.
        """
        if self._table is False:
            self._table = keyword_table(self.registry, self._uri())
        node = schema
        if isinstance(self._table, KeywordTable):
            try:
                if is_sound(self._table, schema, check.charge, self._fits, check.at):
                    return None
            except CheckStopped:
                check.where = check.pointer(check.node if check.node is not None else schema)
                raise
            node = check.node if check.node is not None else schema
        invalid = next(iter(self.judge().iter_errors(node)), None)
        if invalid is None and node is not schema:  # (the table never refuses what jsonschema accepts)
            node, invalid = schema, next(iter(self.judge().iter_errors(schema)), None)
        if invalid is None:
            return None
        return check.pointer(node) + json_pointer(invalid.absolute_path), _shorten_reason(invalid.message)

    def _fits(self, leaf: Leaf, value: Any) -> bool:
        validator = self._leaves.get(id(leaf))
        if validator is None:
            validator = self._leaves[id(leaf)] = self.validator(leaf.schema, format_checker=JUDGING_FORMATS,
                                                                _resolver=leaf.resolver)
        if leaf.only_type is not None:  # (as the type keyword would judge it, without a validator's walk)
            return bool(validator.is_type(value, leaf.only_type))
        return is_valid(validator.iter_errors(value))


@cache
def metaschemas() -> referencing.Registry[Any]:
    """The drafts' metaschemas, each without its "$schema" member.

    The 2019-09 and 2020-12 metaschemas are made of vocabulary metaschemas, each naming its draft; kept
    as they are, jsonschema would judge a schema with the stock validators (unguarded) as soon as it
    reached one. Without the member they are judged by the referring guarded validator, which is the
    same draft. Nothing is ever retrieved: the registry's default retrieval refuses every URI.
    """
    resources = []
    for uri in jsonschema_specifications.REGISTRY:
        contents = jsonschema_specifications.REGISTRY.contents(uri)
        specification = referencing.jsonschema.specification_with(contents["$schema"])
        bare = {key: value for key, value in contents.items() if key != "$schema"}
        resources.append((uri, specification.create_resource(bare)))
    return referencing.Registry().with_resources(resources).crawl()


@cache
def guarded_dialect(stock: type[Any]) -> Dialect:
    """The guarded twin of one of jsonschema's draft validators (never registered with jsonschema)."""
    validators = guarded_keywords(stock.VALIDATORS)
    dialect_id = stock.ID_OF(stock.META_SCHEMA)
    guarded = jsonschema.validators.create(
        meta_schema=stock.META_SCHEMA, validators=validators, type_checker=stock.TYPE_CHECKER,
        format_checker=JUDGING_FORMATS, id_of=stock.ID_OF,
        # Drafts up to 7 ignore the siblings of $ref; the stock class keeps that rule privately.
        applicable_validators=charged_applicable(stock._APPLICABLE_VALIDATORS))
    specification = referencing.jsonschema.specification_with(dialect_id or "urn:unknown-dialect",
                                                              default=referencing.Specification.OPAQUE)
    meta_stock = validator_for(stock.META_SCHEMA, default=stock)
    meta = None if meta_stock is stock else guarded_dialect(meta_stock)
    return Dialect(guarded, meta, metaschemas(), specification)


def _shorten_reason(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
