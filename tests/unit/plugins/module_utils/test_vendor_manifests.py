"""plugins/module_utils/k8s/vendor_manifests.py, the vendor manifests as Python data (a module gets only the Python files
of module_utils in the zip ansible-core sends it), is what scripts/generate_manifests.py writes from the verbatim YAML
copies under manifests/, and holds the objects of the upstream files (their SHA-256 in tests/sandbox/kube/manifests/
UPSTREAM.sha256)."""

from __future__ import annotations

import importlib.util
import os
import pathlib

import pytest
import yaml

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import render
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s.vendor_manifests import MANIFESTS
from sandbox.kube import vendored

ROOT = pathlib.Path(__file__).resolve().parents[4]   # tests/unit/plugins/module_utils/ -> the collection


def generator():
    spec = importlib.util.spec_from_file_location('generate_manifests', ROOT / 'scripts' / 'generate_manifests.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_file_is_what_the_generator_writes_from_the_yaml_files():
    script = generator()
    with open(script.TARGET, encoding='utf-8') as handle:
        assert handle.read() == script.generate(), 'run python3 scripts/generate_manifests.py'
    assert sorted(MANIFESTS) == script.manifest_names()


@pytest.mark.parametrize('name', sorted(vendored.UPSTREAM))
def test_each_manifest_holds_the_objects_of_the_upstream_file(name):
    with open(vendored.path(name), encoding='utf-8') as handle:   # the collection's YAML copy, checked against upstream
        assert MANIFESTS[name] == [doc for doc in yaml.safe_load_all(handle) if doc]


def test_render_reads_every_manifest_it_names_and_hands_out_copies():
    named = [*render.INSTALLER_MANIFESTS.values(), render.NRI_MANIFEST, render.MULTI_NETWORK_TEST_MANIFEST,
             *(path for paths in render.TEST_MANIFESTS.values() for path in paths)]
    assert set(named) == set(MANIFESTS), 'a vendored file nothing renders, or a name with no file'
    first = render.load_manifest(render.NRI_MANIFEST)
    first[0]['metadata']['name'] = 'changed'
    assert render.load_manifest(render.NRI_MANIFEST)[0]['metadata']['name'] != 'changed'


def test_no_module_util_reads_a_file_beside_it():
    """Nothing under plugins/module_utils or plugins/modules finds data through its own path (the zip has only Python)."""
    found = []
    for folder in ('module_utils', 'modules'):
        for directory, _subdirs, files in os.walk(ROOT / 'plugins' / folder):
            for name in files:
                if name.endswith('.py'):
                    with open(os.path.join(directory, name), encoding='utf-8') as handle:
                        text = handle.read()
                    found += ['%s: %s' % (name, word) for word in ('__file__', 'pkgutil', 'importlib.resources') if word in text]
    assert found == []
