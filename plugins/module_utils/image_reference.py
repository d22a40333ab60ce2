# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one reading of a container image reference (``REGISTRY[:PORT]/PATH[:TAG][@DIGEST]``), as the
container runtimes read it (github.com/distribution/reference, regexp.go): the tag is what follows the last ``:`` of
the last path component, so a registry port is never taken for a tag. Used by the host modules (the Docker API's pull
takes repository and tag apart), the catalog (a version from an image's tag) and the Kubernetes renderers (a reference
the kubelet cannot parse leaves its Pod in InvalidImageName, which the API server does not refuse). Standard library
only: host modules import it.
"""

from __future__ import annotations

import re
from collections import namedtuple

_DOMAIN_PART = r'(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])'
_PATH_PART = r'[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*'
GRAMMAR = re.compile(r'^(?:%s(?:\.%s)*(?::[0-9]+)?/)?%s(?:/%s)*(?::[\w][\w.-]{0,127})?'
                     r'(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,})?$'
                     % (_DOMAIN_PART, _DOMAIN_PART, _PATH_PART, _PATH_PART))
NAME_MAX = 255   # the reference grammar's limit, on the name (registry and path)


class ImageReference(namedtuple('ImageReference', ('name', 'tag', 'digest'))):
    """``name`` (registry and path), ``tag`` and ``digest`` (None when absent) of one reference."""

    __slots__ = ()

    @classmethod
    def parse(cls, text):
        text = str(text).strip()
        name, _at, digest = text.partition('@')
        last = name.rsplit('/', 1)[-1]
        tag = None
        if ':' in last:
            name, tag = name.rsplit(':', 1)
        return cls(name, tag, digest or None)

    @property
    def valid(self):
        """True when the kubelet and the Docker API can pull it."""
        return bool(GRAMMAR.match(str(self))) and len(self.name) <= NAME_MAX

    def __str__(self):
        return self.name + (':' + self.tag if self.tag else '') + ('@' + self.digest if self.digest else '')
