# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-host GPU evidence of the preflight (module_utils/nccl/preflight.py) on what the real nvidia-smi printed on a
1 x H200 machine (tests/fixtures/nccl/nvidia-smi/h200x1-2026-12-03/) and a 2 x H200 one (h200x2-2026-11-30/); a fault is
the captured text with one field changed, as nvidia-smi prints it (a healthy card shows none)."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import preflight as nccl_preflight

SMI = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'nccl', 'nvidia-smi')
H200X1, H200X2 = 'h200x1-2026-12-03', 'h200x2-2026-11-30'
BUS = '00000000:00:06.0'


def smi(capture, name):
    with open(os.path.join(SMI, capture, name), encoding='utf-8') as handle:
        return handle.read()


def gpus(capture=H200X1):
    return nccl_preflight.parse_nvidia_smi_gpus(smi(capture, 'query-gpu.csv'))


def health(ecc=None, remapper=None, nvlink=None, kernel_log=None, capture=H200X1):
    """check_gpu_health on the capture's outputs, with any of them replaced."""
    return nccl_preflight.check_gpu_health(
        gpus(capture),
        ecc=nccl_preflight.parse_nvidia_smi_ecc(ecc if ecc is not None else smi(H200X1, 'query-ecc.csv')),
        remapped_rows=nccl_preflight.parse_nvidia_smi_row_remapper(remapper if remapper is not None else smi(H200X1, 'q-row-remapper.txt')),
        nvlink=nccl_preflight.parse_nvidia_smi_nvlink(nvlink if nvlink is not None else smi(capture, 'nvlink-s.txt')),
        xids=nccl_preflight.parse_kernel_xids(kernel_log if kernel_log is not None else smi(H200X1, 'dmesg-xid.txt')))


def test_the_h200_captures_parse():
    assert nccl_preflight.parse_nvidia_smi_ecc(smi(H200X1, 'query-ecc.csv')) == [
        {'index': 0, 'ecc_mode': 'Enabled', 'uncorrected_volatile': 0, 'uncorrected_aggregate': 0, 'retired_pages_pending': None}]
    assert nccl_preflight.parse_nvidia_smi_ecc(smi(H200X1, 'query-ecc-header.csv')) == nccl_preflight.parse_nvidia_smi_ecc(
        smi(H200X1, 'query-ecc.csv'))
    assert nccl_preflight.parse_nvidia_smi_row_remapper(smi(H200X1, 'q-row-remapper.txt')) == {
        BUS: {'correctable': 0, 'uncorrectable': 0, 'pending': False, 'failure': False}}
    assert nccl_preflight.parse_nvidia_smi_nvlink(smi(H200X1, 'nvlink-s.txt')) == {}   # one GPU: nvlink -s printed nothing
    two = nccl_preflight.parse_nvidia_smi_nvlink(smi(H200X2, 'nvlink-s.txt'))
    assert sorted(two) == [0, 1] and all(links == {n: 'up' for n in range(18)} for links in two.values())


def test_the_h200_captures_are_healthy():
    assert health() == []
    assert health(capture=H200X2) == []


@pytest.mark.parametrize('field, changed, problem, detail', [
    ('ecc', ('0, Enabled, 0, 0, [N/A]', '0, Enabled, 2, 2, [N/A]'), nccl_preflight.UNCORRECTED_ECC,
     'GPU 0: 2 uncorrected ECC error(s) since the driver loaded (volatile); reset the GPU, and replace it if they come back'),
    ('ecc', ('0, Enabled, 0, 0, [N/A]', '0, Enabled, 0, 0, Yes'), nccl_preflight.RETIRED_PAGES_PENDING,
     'GPU 0: retired pages pending; reset the GPU (or reboot) to retire them'),
    ('remapper', ('Pending                                        : No', 'Pending                                        : Yes'),
     nccl_preflight.ROW_REMAP_PENDING, 'GPU 0: remapped rows pending; reset the GPU (or reboot) to apply them'),
    ('remapper', ('Remapping Failure Occurred                     : No', 'Remapping Failure Occurred                     : Yes'),
     nccl_preflight.ROW_REMAP_FAILURE, 'GPU 0: row remapping failed: the memory can no longer repair itself; replace the GPU '
     '(on Compute Engine, report the host faulty)'),
])
def test_each_fault_is_a_named_problem_of_its_gpu(field, changed, problem, detail):
    text = smi(H200X1, 'query-ecc.csv' if field == 'ecc' else 'q-row-remapper.txt')
    assert changed[0] in text
    found = health(**{field: text.replace(*changed)})
    assert found == [{'gpu': 0, 'problem': problem, 'detail': detail}]


def test_the_aggregate_ecc_count_alone_is_evidence_not_a_problem():
    assert health(ecc='0, Enabled, 0, 5, [N/A]\n') == []


def test_an_inactive_nvlink_link_is_named_on_a_host_of_two_gpus_only():
    text = smi(H200X2, 'nvlink-s.txt')
    gpu1 = text.index('GPU 1:')
    broken = text[:gpu1] + text[gpu1:].replace('Link 5: 26.562 GB/s', 'Link 5: <inactive>', 1)
    assert health(nvlink=broken, capture=H200X2) == [
        {'gpu': 1, 'problem': nccl_preflight.NVLINK_DOWN, 'detail': 'GPU 1: NVLink link(s) 5 of 18 inactive (nvidia-smi nvlink -s)'}]
    lone = 'GPU 0: NVIDIA H200 (UUID: GPU-x)\n\t Link 0: <inactive>\n'
    assert health(nvlink=lone) == []   # one GPU: no peer to link to


# Xid lines as the driver writes them to the kernel log, for the captured GPU (PCI 00000000:00:06.0): NVIDIA's Xid
# documentation's form ("NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: ...") and the newer drivers' pid='<unknown>'.
FALLEN_OFF = "[ 8123.456789] NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
DBE = '[  912.000001] NVRM: Xid (PCI:0000:00:06): 48, pid=2231, name=all_gather_perf, An uncorrectable double bit error (DBE) has been detected on GPU'
APP_FAULT = '[  300.100000] NVRM: Xid (PCI:0000:00:06): 13, pid=4410, name=python3, Graphics Exception: ESR 0x514648=0x1000e'


def test_the_h200_kernel_log_has_nvrm_lines_and_no_xid():
    log = smi(H200X1, 'dmesg-xid.txt')
    assert 'NVRM: loading NVIDIA UNIX Open Kernel Module' in log and nccl_preflight.parse_kernel_xids(log) == []


def test_a_gpu_xid_in_the_kernel_log_is_a_named_problem_with_nvidias_action():
    log = smi(H200X1, 'dmesg-xid.txt') + '\n'.join([DBE, APP_FAULT, FALLEN_OFF, FALLEN_OFF]) + '\n'
    assert [(x['pci'], x['xid']) for x in nccl_preflight.parse_kernel_xids(log)] == [('00:06', 48), ('00:06', 13), ('00:06', 79), ('00:06', 79)]
    found = health(kernel_log=log)
    assert [(f['gpu'], f['problem']) for f in found] == [(0, nccl_preflight.GPU_XID)] * 2   # Xid 13 is the application's
    assert found[0]['detail'].startswith('GPU 0: Xid 48 (double bit ECC error) in the kernel log since boot (1 time; last: [  912.000001] '
                                         'NVRM: Xid (PCI:0000:00:06): 48, pid=2231')
    assert found[0]['detail'].endswith("; reset the GPU; NVIDIA's Xid 48 workflow: replace it if the error comes back")
    assert found[1]['detail'].startswith('GPU 0: Xid 79 (GPU has fallen off the bus) in the kernel log since boot (2 times; last: ')
    assert found[1]['detail'].endswith('; reboot the VM')


def test_an_xid_of_a_gpu_the_list_lacks_names_its_pci_address():
    found = health(kernel_log=FALLEN_OFF.replace('0000:00:06', '0000:9a:00'))
    assert [f['gpu'] for f in found] == ['PCI 9A:00']


def test_unreadable_health_output_names_what_was_expected():
    with pytest.raises(ValueError, match='is not index, ecc.mode.current'):
        nccl_preflight.parse_nvidia_smi_ecc(smi(H200X1, 'query-gpu.csv'))
    with pytest.raises(ValueError, match='ROW_REMAPPER printed no GPU section'):
        nccl_preflight.parse_nvidia_smi_row_remapper(smi(H200X1, 'nvidia-smi.txt'))


# What the nccl_perf module itself returned on the H200 machine (evidence_on_device.sh), against the code today
# ---------------------------------------------------------------------------------------------

def device_result(case):
    with open(os.path.join(SMI, H200X1, 'module-result-%s.json' % case), encoding='utf-8') as handle:
        return json.load(handle)


def preflight_now(expected_count=None, gpu_model=None, requested=None):
    """The preflight's problems, computed today from the captured outputs as nccl_perf computes them."""
    found = gpus()
    topology = nccl_preflight.parse_nvidia_smi_topology(smi(H200X1, 'topo-m.txt'))
    return (nccl_preflight.check_gpus(found, topology, expected_count=expected_count, gpu_model=gpu_model,
                                      min_driver=families.MIN_NVIDIA_DRIVER, requested=requested)
            + [f['detail'] for f in health()])


def test_as_a_one_gpu_host_it_passed_on_the_device():
    live = device_result('this-host')
    assert live['preflight']['passed'] and live['preflight']['problems'] == [] == preflight_now(expected_count=1)
    assert live['preflight']['gpus'] == gpus() and live['preflight']['findings'] == [] and live['preflight']['not_read'] == []
    assert live['preflight']['remapped_rows'] == nccl_preflight.parse_nvidia_smi_row_remapper(smi(H200X1, 'q-row-remapper.txt'))
    assert live['host_evidence']['vm']['gpu_problems'] == []
    # it read the kernel log (as root there) and found no Xid, as the captured dmesg says
    assert live['preflight']['xids'] == [] == nccl_preflight.parse_kernel_xids(smi(H200X1, 'dmesg-xid.txt'))


def test_asked_for_four_gpus_it_was_refused_on_the_device_saying_why():
    live = device_result('ngpus-4')
    why = 'ngpus: the test asks for 4 GPU(s) per process and nvidia-smi shows 1; give ngpus 1 or less'
    assert live['failed'] and live['msg'] == 'preflight: the GPUs are not fit for an NCCL test: ' + why
    assert live['preflight']['problems'] == [why] == preflight_now(expected_count=1, requested=4)
    assert live['host_evidence']['vm']['gpu_problems'] == [why]


def test_as_a3_megagpu_8g_it_was_refused_on_the_device_naming_both_models():
    live = device_result('a3-megagpu-8g')
    mega = families.get_family('a3-megagpu-8g')
    assert live['failed'] and 'GPU model NVIDIA H200, expected NVIDIA H100' in live['msg']
    assert live['preflight']['problems'] == preflight_now(expected_count=mega.gpu_count, gpu_model=mega.gpu_model) == [
        'nvidia-smi shows 1 GPU(s); the family has 8: a GPU is missing or the driver is not loaded',
        'GPU model NVIDIA H200, expected NVIDIA H100']
