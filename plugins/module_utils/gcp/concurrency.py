# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Many API calls at once, each failure kept with its item."""

from __future__ import annotations

import concurrent.futures

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError


def map_concurrently(function, items, max_workers=8):
    """Call function(item) for every item on a thread pool; return [(item, result, error)] in item order.

    Errors are GcpError instances, returned rather than raised, so one failed resource does not
    hide what happened to the others.
    """
    items = list(items)
    if not items:
        return []
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(items)))) as pool:
        futures = {pool.submit(function, item): index for index, item in enumerate(items)}
        for future in concurrent.futures.as_completed(futures):
            index = futures[future]
            try:
                results[index] = (items[index], future.result(), None)
            except GcpError as exc:
                results[index] = (items[index], None, exc)
    return [results[index] for index in range(len(items))]


def raise_first(outcomes):
    """Raise the error of map_concurrently's outcomes, after every item has finished: the one error, or one GcpError
    that joins several (the first one's status and reason, every one's codes)."""
    errors = [error for _item, _result, error in outcomes if error is not None]
    if len(errors) > 1:
        raise GcpError(None, '; '.join(str(error) for error in errors), status=errors[0].status, reason=errors[0].reason,
                       codes=[code for error in errors for code in error.codes])
    if errors:
        raise errors[0]
