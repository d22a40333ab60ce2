# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a host module ships to a Container-Optimized OS host: exactly the module_utils it uses.

Ansible runs each module as an AnsiballZ payload, a Python file with a zip of the module and every
module_utils file it imports. With ANSIBLE_KEEP_REMOTE_FILES the payload stays in the remote
temporary directory; these tests run the real `ansible` CLI on localhost, open the payload's zip and
compare its module_utils with the list each module should need: no Google Cloud client, no GKE or
OpenShift facts, nothing from the controller side.
"""
from __future__ import annotations

import base64
import io
import os
import re
import subprocess
import sys
import zipfile

import pytest

from playbook_runner import collections_path

MU = 'ansible_collections/aiinfra/gpudirect/plugins/module_utils/'
# The catalog raises the one input error (errors.py); its host stacks read image tags (image_reference.py).
CATALOG = {'catalog/families.py', 'catalog/compute.py', 'catalog/host_stacks.py', 'gcp/links.py', 'errors.py', 'image_reference.py'}
COS = {'cos/host.py', 'cos/docker_api.py'}
NCCL = {'nccl/command.py', 'nccl/parse.py', 'nccl/verdict.py', 'nccl/preflight.py'}

EXPECTED = {
    # module: (arguments that fail fast, module_utils files besides the packages' empty __init__.py files)
    # gpudirect_rxdm also reads the data NICs' gVNIC driver (cos/gvnic.py).
    'gpudirect_rxdm': ('technology=NONE', CATALOG | COS | {'cos/gvnic.py'}),
    # nccl_plugin also writes the GKE NCCL environment profile, so it carries the GKE facts (catalog/gke.py).
    'nccl_plugin': ('technology=NONE', CATALOG | COS | {'catalog/gke.py'}),
    # nccl_perf execs into the test container through the Docker Engine API (mode gce), as `docker exec` does. Mode local,
    # as on a host: mode parse runs in the task's worker on the controller, with no payload (plugins/action/nccl_perf.py).
    'nccl_perf': ('mode=local binary=/bin/true machine_type=none', CATALOG | NCCL | {'cos/docker_api.py'}),
    # gpu_mig needs the MIG facts and the technology names, not the COS host stacks.
    'gpu_mig': ('gpudirect_technology=NONE', CATALOG - {'catalog/host_stacks.py', 'image_reference.py'} | {'catalog/mig.py', 'cos/mig.py'}),
}


def payload_module_utils(module, arguments, tmp_path):
    env = {key: value for key, value in os.environ.items() if not key.startswith('ANSIBLE_')}
    env.update({'ANSIBLE_COLLECTIONS_PATH': collections_path(), 'ANSIBLE_KEEP_REMOTE_FILES': '1',
                'ANSIBLE_REMOTE_TMP': str(tmp_path / 'remote'), 'ANSIBLE_LOCALHOST_WARNING': 'False',
                'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'False', 'ANSIBLE_NOCOLOR': '1'})
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible'), 'localhost', '-c', 'local',
               '-e', 'ansible_python_interpreter=' + sys.executable, '-m', 'aiinfra.gpudirect.' + module, '-a', arguments]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    payloads = list((tmp_path / 'remote').rglob('AnsiballZ_%s.py' % module))
    assert len(payloads) == 1, (result.stdout, result.stderr)
    # ansible-core 2.19 passes zip_data='...' to _ansiballz_main; earlier releases set ZIPDATA = """...""".
    zipdata = re.search(r"zip_data='([^']*)'|ZIPDATA = r?\"\"\"(.*?)\"\"\"", payloads[0].read_text(), re.S)
    blob = base64.b64decode((zipdata.group(1) or zipdata.group(2)).strip())
    names = zipfile.ZipFile(io.BytesIO(blob)).namelist()
    return {name[len(MU):] for name in names if name.startswith(MU)}


@pytest.mark.parametrize('module', sorted(EXPECTED))
def test_a_host_module_ships_only_the_module_utils_it_uses(module, tmp_path):
    arguments, expected = EXPECTED[module]
    shipped = payload_module_utils(module, arguments, tmp_path)
    assert {name for name in shipped if not name.endswith('__init__.py')} == expected
    assert not {'gcp/transport.py', 'gcp/compute.py', 'gcp/container.py', 'gcp/module.py', 'catalog/openshift.py'} & shipped
