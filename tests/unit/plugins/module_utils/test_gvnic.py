"""cos/gvnic.py: ethtool -i output, gve versions (a release candidate before its release) and the judgement against a floor."""

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import gvnic

# ethtool -i of a gVNIC data NIC (the fields and their order as ethtool prints them).
ETHTOOL_GVE = ('driver: gve\n'
               'version: 1.4.0rc3\n'
               'firmware-version: \n'
               'expansion-rom-version: \n'
               'bus-info: 0000:00:05.0\n'
               'supports-statistics: yes\n'
               'supports-test: no\n'
               'supports-eeprom-access: no\n'
               'supports-register-dump: no\n'
               'supports-priv-flags: yes\n')


def test_ethtool_info_is_read():
    assert gvnic.parse_ethtool_info(ETHTOOL_GVE) == {'driver': 'gve', 'version': '1.4.0rc3'}
    assert gvnic.parse_ethtool_info('') == {'driver': None, 'version': None}


@pytest.mark.parametrize('older, newer', [
    ('1.3.4', '1.4.0rc3'), ('1.4.0rc3', '1.4.0'), ('1.4.0rc2', '1.4.0rc3'), ('1.4.0', '1.4.1'), ('1.4.0rc9', '1.4'),
    ('1.4.0rc3', '1.10.0'),
])
def test_a_release_candidate_comes_before_its_release(older, newer):
    assert gvnic.version_key(older) < gvnic.version_key(newer)


def test_text_without_a_version_has_no_key():
    assert gvnic.version_key('unknown') is None and gvnic.version_key(None) is None


def test_nics_below_the_floor_or_not_gvnic_are_problems_each_named():
    readings = {'eth1': {'driver': 'gve', 'version': '1.4.0rc3'}, 'eth2': {'driver': 'gve', 'version': '1.3.4'},
                'eth3': {'driver': 'virtio_net', 'version': '1.0.0'}, 'eth4': {'driver': 'gve', 'version': '1.4.2'}}
    problems, notes = gvnic.judge(readings, '1.4.0rc3')
    assert problems == [
        'eth2: gVNIC driver gve 1.3.4 is older than 1.4.0rc3, which GPUDirect-TCPX needs; use a Container-Optimized OS image '
        'that ships it (cos-121-lts or later)',
        'eth3: driver virtio_net, not gve: GPUDirect-TCPX needs gVNIC NICs; create the VM with nic-type=GVNIC on every network '
        'interface']
    assert notes == []


def test_the_in_kernel_drivers_fixed_version_and_an_unreadable_nic_are_not_judged():
    problems, notes = gvnic.judge({'eth1': {'driver': 'gve', 'version': '1.0.0'},
                                   'eth2': 'Cannot get driver information: No such device'}, '1.4.0rc3')
    assert problems == []
    assert notes[0].startswith('eth1: gve reports version 1.0.0, which the in-kernel driver always reports')
    assert notes[1] == ('eth2: the gVNIC driver could not be read (Cannot get driver information: No such device), so its '
                        'version was not judged')


def test_sysfs_gives_the_bound_driver_and_its_modules_version(tmp_path):
    module = tmp_path / 'module' / 'gve'
    (module / 'drivers').mkdir(parents=True)
    (module / 'version').write_text('1.4.0rc3\n', encoding='ascii')
    driver = tmp_path / 'bus' / 'pci' / 'drivers' / 'gve'
    driver.mkdir(parents=True)
    (driver / 'module').symlink_to(module)
    device = tmp_path / 'devices' / '0000:00:05.0'
    device.mkdir(parents=True)
    (device / 'driver').symlink_to(driver)
    net = tmp_path / 'class' / 'net' / 'eth1'
    net.mkdir(parents=True)
    (net / 'device').symlink_to(device)
    assert gvnic.sysfs_reading('eth1', root=str(tmp_path)) == ({'driver': 'gve', 'version': '1.4.0rc3'}, None)
    assert gvnic.sysfs_reading('eth9', root=str(tmp_path)) == (None, 'no such network interface')
