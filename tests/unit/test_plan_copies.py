"""gpudirect_plan checks cos_host_prep's variables with cos/inputs.py HOST_ARGUMENT_SPEC, a copy of the role's
meta/argument_specs.yml (the role runs on hosts that do not exist when the plan runs): the two must agree."""
from __future__ import annotations

import pathlib

import yaml

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import inputs

ROOT = pathlib.Path(__file__).resolve().parents[1].parent
PREFIX = 'cos_host_prep_'


def test_the_host_spec_is_the_roles_argument_spec():
    specs = yaml.safe_load((ROOT / 'roles' / 'cos_host_prep' / 'meta' / 'argument_specs.yml').read_text(encoding='utf-8'))
    role = {name[len(PREFIX):]: spec for name, spec in specs['argument_specs']['main']['options'].items()}
    assert set(role) == set(inputs.HOST_ARGUMENT_SPEC)
    for name, spec in inputs.HOST_ARGUMENT_SPEC.items():
        for key in ('type', 'elements', 'choices', 'default', 'required'):
            assert spec.get(key) == role[name].get(key), (name, key)
