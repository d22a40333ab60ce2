
# --- appended by scripts/test (docs stage) to the conf.py that antsibull-docs sphinx-init writes ---
# The build runs offline: no intersphinx inventories are fetched. References into the Ansible documentation
# (common_return_values, ANSIBLE_* settings, ...) and into other collections' docs (kubernetes.core,
# ansible.builtin) are left as plain text; every other missing reference, ours among them, stays an error.
intersphinx_mapping = {}

_EXTERNAL_LABELS = ('common_return_values', 'action_plugins', 'ansible_configuration_settings')
_EXTERNAL_PREFIXES = ('ansible_collections.kubernetes.core.', 'ansible_collections.ansible.builtin.')


def _external_reference(app, env, node, contnode):
    target = node.get('reftarget') or ''
    kind = node.get('reftype')
    if kind == 'ref' and (target in _EXTERNAL_LABELS or target.startswith(_EXTERNAL_PREFIXES)):
        return contnode
    if kind == 'envvar' and target.startswith('ANSIBLE_'):
        return contnode
    return None


def setup(app):
    app.connect('missing-reference', _external_reference)
