# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one error for bad input, on the controller and on target hosts alike (standard library only).

Every check of an input, a catalog lookup or an existing resource that a plan cannot accept raises ``InputError`` with a
message written ``field: what is wrong; the fix`` (``field`` is the option, or a path into it such as
``thresholds.all_gather``). Modules fail with the message as it is; ``gpudirect_plan`` renames the field to the playbook
variable the user set; the inventory plugin turns it into Ansible's parser error.
"""

from __future__ import annotations

import re

# 'option: ', 'a/b: ', 'thresholds.all_gather: ' at the start of a message.
FIELD = re.compile(r'^([a-z_]+(?:\.[a-z_]+)?(?:/[a-z_]+(?:\.[a-z_]+)?)*): ')


class InputError(ValueError):
    """An input (or an existing resource) that cannot work; the text names the field and the fix. ``field`` is that
    field, given or read from the message's head (None when the message names none)."""

    def __init__(self, message, field=None):
        super().__init__(message)
        match = FIELD.match(str(message))
        self.field = field or (match.group(1) if match else None)
