"""Import the collection's own code (its catalog) from this checkout, for the sandbox's simulations.

The catalog imports itself as ``ansible_collections.aiinfra.gpudirect...``. Under pytest that name
resolves through ``PYTHONPATH`` (scripts/test puts the built collection there); when the sandbox
runs on its own (``tests/sandbox/run``) it does not, so the checkout is given that name through a
symlink in a temporary directory.
"""

import importlib
import pathlib
import sys
import tempfile

CHECKOUT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = 'ansible_collections.aiinfra.gpudirect'


def collection_module(name):
    """The module ``PACKAGE.name`` (for example ``plugins.module_utils.catalog.families``)."""
    try:
        importlib.import_module(PACKAGE)
    except ImportError:
        top = pathlib.Path(tempfile.mkdtemp(prefix='aiinfra-checkout-'))
        (top / 'ansible_collections' / 'aiinfra').mkdir(parents=True)
        (top / 'ansible_collections' / 'aiinfra' / 'gpudirect').symlink_to(CHECKOUT)
        sys.path.append(str(top))
        importlib.invalidate_caches()
    return importlib.import_module(PACKAGE + '.' + name)
