# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a user of the packaged collection sees: words of its own (no project-internal words, no task names in the
vendor manuals' languages), the public filters (the documented ones; the roles' own are private), and a released
changelog."""
from __future__ import annotations

import ast
import importlib
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1].parent

# Words of the project's own making that mean nothing to a user: the requirement manuals were called "seeds" (seed 000,
# the seed's ...), and the helpers' work logs. The manuals' own languages (Japanese, Spanish) are not the collection's:
# a section title is quoted in English. Repository paths (tests/unit/seeds/...) and option names are not words.
INTERNAL = re.compile(r"\bseeds?\b|\bwork ?logs?\b|worklog"
                      r"|[\u3040-\u30ff\u3400-\u9fff\uff00-\uffef]|[áéíóúñ¿¡]"
                      r"|\b(?:Crea|Usa|Agrega|Configura|Implementa|Ejecuta|Maximiza|subredes|redes|tus|para|una|los|las)\b",
                      re.IGNORECASE)
NOT_WORDS = re.compile(r"\S*/\S*|--[\w-]+")
# Catalog data that quotes a manual to check the catalog against it (tests/unit/plugins/module_utils/test_catalog.py):
# the Japanese names of Red Hat's three GPUDirect RDMA methods. Never shown to a user.
CITATIONS = {('plugins/module_utils/catalog/openshift.py', text) for text in ('共有デバイス', 'ホストデバイス', 'SR-IOV レガシーデバイス')}


def _yaml_strings(node):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _yaml_strings(key)
            yield from _yaml_strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _yaml_strings(value)
    elif isinstance(node, str):
        yield node


def _python_strings(path):
    """The string constants of a plugin file but its docstrings (developers' notes): module documentation, messages."""
    tree = ast.parse(path.read_text(encoding='utf-8'))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings]


def user_facing_texts(root):
    """(path, text) for every text a user of the collection reads: the values (task names, messages, argument specs,
    role metadata) of the roles' and playbooks' YAML, the AWX templates, the filter documentation, the changelog fragments,
    Galaxy's description; the plugins' strings (module and plugin documentation, error messages and warnings); the README,
    the changelog, the roles' READMEs, the role templates and the docs site. Molecule scenarios are tests."""
    yaml_files = [*root.glob('roles/*/**/*.yml'), *root.glob('playbooks/**/*.yml'), *root.glob('awx/**/*.yml'),
                  *root.glob('plugins/filter/*.yml'), *root.glob('changelogs/fragments/*.yml')]
    for path in sorted(yaml_files):
        if 'molecule' not in path.parts:
            for document in yaml.safe_load_all(path.read_text(encoding='utf-8')):
                for text in _yaml_strings(document):
                    yield path, text
    galaxy = yaml.safe_load((root / 'galaxy.yml').read_text(encoding='utf-8'))
    yield root / 'galaxy.yml', galaxy['description']
    for path in sorted(root.glob('plugins/**/*.py')):
        for text in _python_strings(path):
            yield path, text
    for path in [root / 'README.md', root / 'CHANGELOG.rst', *sorted(root.glob('roles/*/README.md')), *sorted(root.glob('roles/*/templates/**/*')),
                 *sorted(root.glob('docs/docsite/**/*.rst')), *sorted(root.glob('docs/docsite/**/*.yml'))]:
        if path.is_file():
            yield path, path.read_text(encoding='utf-8')


def internal_words(root):
    found = []
    for path, text in user_facing_texts(root):
        relative = str(path.relative_to(root))
        if (relative, text) in CITATIONS:
            continue
        for line in text.splitlines():
            match = INTERNAL.search(NOT_WORDS.sub(' ', line))
            if match:
                found.append('%s: %r in %r' % (relative, match.group(0), line.strip()[:160]))
    return found


def test_user_facing_text_has_no_internal_words_and_no_manual_languages():
    found = internal_words(ROOT)
    assert not found, '%d texts a user reads use project-internal words or a manual\'s language; say what it is ' \
        '(e.g. "Google\'s GKE GPUDirect RDMA guide", or just the action):\n%s' % (len(found), '\n'.join(found))


def test_the_scan_finds_each_kind_of_word(tmp_path):
    """The scan above reads task names, module documentation and error messages, and knows each kind of word."""
    (tmp_path / 'roles' / 'r' / 'tasks').mkdir(parents=True)
    (tmp_path / 'roles' / 'r' / 'tasks' / 'main.yml').write_text(
        '- name: Crea VPC y subredes\n  ansible.builtin.debug:\n    msg: ok\n'
        '- name: The seed\'s NCCL test\n  ansible.builtin.fail:\n    msg: see tests/unit/seeds/README.md\n')
    (tmp_path / 'plugins' / 'modules').mkdir(parents=True)
    (tmp_path / 'plugins' / 'modules' / 'm.py').write_text(
        '"""A docstring may say seed 000."""\nDOCUMENTATION = """\ndescription: As seed 001 says.\n"""\n'
        'def f():\n    raise ValueError("x: older than the floor (\u4ee5\u964d)")\n')
    (tmp_path / 'galaxy.yml').write_text('description: GPUs\n')
    (tmp_path / 'README.md').write_text('See the work log.\n')
    found = internal_words(tmp_path)
    assert [line.split(':')[0] + ' ' + line.split(' in ')[0].split(': ', 1)[1] for line in found] == [
        "roles/r/tasks/main.yml 'Crea'", "roles/r/tasks/main.yml 'seed'", "plugins/modules/m.py 'seed'",
        "plugins/modules/m.py '\u4ee5'", "README.md 'work log'"], found


# -- filters ----------------------------------------------------------------------------------------------------------

PUBLIC_FILTERS = {'nccl_results', 'perftest_results', 'gke_gpudirect_workload', 'gke_rdma_workload', 'openshift_rdma_workload'}


def _collections_path():
    return str(ROOT.parents[1])


def test_the_public_filters_are_the_documented_ones_and_the_roles_filters_are_private():
    """ansible-doc (and so the docs site and Galaxy) lists the filters a user may call, each documented; the roles' own
    filters (plugins/filter/_roles.py) are named ``_NAME`` and documented as private to the roles, free to change."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR='1')
    listed = json.loads(subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-doc'), '-t', 'filter', '-l', '--json',
                                        'aiinfra.gpudirect'], env=env, capture_output=True, text=True, check=True).stdout)
    assert 'UNDOCUMENTED' not in listed.values(), listed
    public = {name.split('.', 2)[2]: description for name, description in listed.items() if not name.split('.', 2)[2].startswith('_')}
    private = {name.split('.', 2)[2]: description for name, description in listed.items() if name.split('.', 2)[2].startswith('_')}
    assert set(public) == PUBLIC_FILTERS and not [text for text in public.values() if text.startswith('Private')], public
    assert private and [name for name, text in private.items() if not text.startswith('Private to the roles: ')] == [], private
    assert sorted(path.stem for path in (ROOT / 'plugins' / 'filter').glob('*.yml')) == sorted([*PUBLIC_FILTERS, *private])


def test_the_roles_and_playbooks_call_only_filters_that_exist_under_their_names():
    modules = [importlib.import_module('ansible_collections.aiinfra.gpudirect.plugins.filter.' + name) for name in ('_roles', 'gke', 'nccl', 'openshift')]
    existing = {name for module in modules for name in module.FilterModule().filters()}
    assert PUBLIC_FILTERS | {name for name in existing if name.startswith('_')} == existing
    called = set()
    for path in [*ROOT.glob('roles/**/*.yml'), *ROOT.glob('roles/**/*.j2'), *ROOT.glob('playbooks/**/*.yml')]:
        # a filter after | or named in map('...'); not a lookup('...') or query('...'), which names a lookup plugin
        called |= set(re.findall(r"(?:\|\s*|(?<!lookup)(?<!query)\(')aiinfra\.gpudirect\.(\w+)", path.read_text(encoding='utf-8')))
    assert called and not called - existing, sorted(called - existing)
    assert not called & PUBLIC_FILTERS - {'nccl_results', 'perftest_results'}, 'the roles render with private filters'


# -- changelog --------------------------------------------------------------------------------------------------------

def test_the_changelog_is_released_at_galaxys_version_and_changelog_rst_is_generated_from_it(tmp_path):
    """changelogs/changelog.yaml holds the release galaxy.yml names, and CHANGELOG.rst is what antsibull-changelog
    generates from it (a hand edit or a release without regenerating fails)."""
    version = yaml.safe_load((ROOT / 'galaxy.yml').read_text(encoding='utf-8'))['version']
    changes = yaml.safe_load((ROOT / 'changelogs' / 'changelog.yaml').read_text(encoding='utf-8'))
    assert version in (changes.get('releases') or {}), 'galaxy.yml version %s has no release in changelogs/changelog.yaml' % version
    release = changes['releases'][version]
    assert release.get('release_date') and release['changes'].get('release_summary')
    tool = os.path.join(os.path.dirname(sys.executable), 'antsibull-changelog')
    if not os.path.exists(tool):
        # The lanes of the other ansible-core minors have ansible-core and the test requirements only; the main lane (the
        # pytest stage) has the tool and runs this.
        pytest.skip('antsibull-changelog is not installed beside %s (an ansible-core minor lane)' % sys.executable)
    copy = tmp_path / 'collection'
    copy.mkdir()
    for name in ('galaxy.yml', 'CHANGELOG.rst'):
        (copy / name).write_bytes((ROOT / name).read_bytes())
    (copy / 'changelogs').mkdir()
    for name in ('config.yaml', 'changelog.yaml'):
        (copy / 'changelogs' / name).write_bytes((ROOT / 'changelogs' / name).read_bytes())
    (copy / 'changelogs' / 'fragments').mkdir()
    subprocess.run([tool, 'generate'], cwd=copy, check=True,
                   capture_output=True)
    assert (copy / 'CHANGELOG.rst').read_text(encoding='utf-8') == (ROOT / 'CHANGELOG.rst').read_text(encoding='utf-8')
    assert 'v%s' % version in (ROOT / 'CHANGELOG.rst').read_text(encoding='utf-8')
