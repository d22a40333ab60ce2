# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every filter of the collection is: a function of plugins/module_utils/ whose bad input (InputError, naming the
option and the fix) becomes AnsibleFilterError with the same message, prefixed by the filter's name."""

from __future__ import annotations

import functools

from ansible.errors import AnsibleFilterError


def as_filter(name, function):
    """``function`` as the filter ``name``."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (ValueError, KeyError, TypeError) as error:
            raise AnsibleFilterError('%s: %s' % (name, error)) from None
    return wrapper
