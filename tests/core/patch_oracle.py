"""RFC 6902 as the ``jsonpatch`` library applies it, with the two places it departs from the RFC corrected,
so that property tests can take it as their oracle.

- An ``add`` or ``replace`` of the whole document (path ``""``) returns the operation's own ``value``
  object, not a copy: the next operation of the same patch then changes the patch itself (and the
  event the product is handed, which holds the same operation).
- Some versions cannot apply an operation to a ``null`` document, which RFC 6902 lets a patch replace
  at the root like any other.

Both are the oracle's faults, not the product's: here the whole document is replaced by a copy of the
value, whatever the document was, and every other operation goes to ``jsonpatch`` one at a time, on a
copy of the operation and of the document.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import jsonpatch


def reference_apply(document: Any, patch: Sequence[Any]) -> Any:
    """``patch`` applied to a copy of ``document``; raises what ``jsonpatch`` raises for a patch that does not apply."""
    result = copy.deepcopy(document)
    for operation in patch:
        op = copy.deepcopy(operation)
        if type(op) is dict and op.get("path") == "" and op.get("op") in ("add", "replace") and "value" in op:
            result = op["value"]  # (a copy already: nothing the patch holds is shared with the result)
            continue
        result = jsonpatch.JsonPatch([op]).apply(result, in_place=True)
    return result
