# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gVNIC driver of a host's data NICs, read with ``ethtool -i`` and judged against the family's floor.

The vendor manual (Compute Engine, GPUDirect-TCPX): A3 High and A3 Edge VMs must run gVNIC driver 1.4.0rc3 or later,
which Container-Optimized OS ships. Google's driver repository (GoogleCloudPlatform/compute-virtual-ethernet-linux,
README "Supported Kernels") says that native (in-kernel) drivers are likely to report version 1.0.0 and that this
version should be ignored: such a reading is reported as not judged, never as too old.

Standard library only: gpudirect_rxdm runs it on Container-Optimized OS.
"""

from __future__ import annotations

import os
import re

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute

GVNIC_DRIVER = 'gve'
NATIVE_DRIVER_VERSION = '1.0.0'
_VERSION = re.compile(r'^(\d+(?:\.\d+)*)(?:[-_.]?rc(\d+))?')


def parse_ethtool_info(text):
    """``ethtool -i IFACE`` output -> {'driver': ..., 'version': ...} (absent keys: None)."""
    fields = {}
    for line in (text or '').splitlines():
        key, sep, value = line.partition(':')
        if sep:
            fields[key.strip()] = value.strip()
    return {'driver': fields.get('driver') or None, 'version': fields.get('version') or None}


def version_key(version):
    """'1.4.0rc3' -> (1, 4, 0, 0, 3); '1.4.0' -> (1, 4, 0, 1, 0): a release candidate comes before its release. None
    when the text does not start with a version."""
    match = _VERSION.match(str(version or ''))
    if not match:
        return None
    numbers = [int(part) for part in match.group(1).split('.')]
    numbers += [0] * (3 - len(numbers))
    candidate = match.group(2)
    return tuple(numbers) + ((0, int(candidate)) if candidate is not None else (1, 0))


def sysfs_reading(interface, root='/sys'):
    """What ethtool would say, from sysfs (a host without ethtool): the driver bound to the NIC and its module's version."""
    device_driver = os.path.join(root, 'class', 'net', interface, 'device', 'driver')
    if not os.path.exists(os.path.join(root, 'class', 'net', interface)):
        return None, 'no such network interface'
    driver = os.path.basename(os.path.realpath(device_driver)) if os.path.exists(device_driver) else None
    try:
        with open(os.path.join(device_driver, 'module', 'version'), encoding='ascii') as handle:
            version = handle.read().strip() or None
    except OSError:
        version = None
    return {'driver': driver, 'version': version}, None


def judge(readings, floor):
    """(problems, notes) of the data NICs' ``readings`` ({interface: {'driver', 'version'} or an error text}) against
    ``floor``: a NIC whose driver is not gve, or whose gve version is older than the floor, is a problem (each names the
    NIC, what it runs and the fix); an unreadable NIC, or the native driver's fixed 1.0.0, is a note (not judged)."""
    problems, notes = [], []
    for interface, reading in readings.items():
        if isinstance(reading, str):
            notes.append('%s: the gVNIC driver could not be read (%s), so its version was not judged' % (interface, reading))
            continue
        driver, version = reading.get('driver'), reading.get('version')
        if driver != GVNIC_DRIVER:
            problems.append('%s: driver %s, not gve: GPUDirect-TCPX needs gVNIC NICs; create the VM with nic-type=GVNIC on every '
                            'network interface' % (interface, driver or 'unknown'))
        elif version == NATIVE_DRIVER_VERSION or version_key(version) is None:
            notes.append('%s: gve reports version %s, which the in-kernel driver always reports (Google\'s driver README: '
                         'ignore it), so it was not judged against %s' % (interface, version or 'none', floor))
        elif version_key(version) < version_key(floor):
            problems.append('%s: gVNIC driver gve %s is older than %s, which GPUDirect-TCPX needs; use a Container-Optimized OS '
                            'image that ships it (%s or later)' % (interface, version, floor, compute.COS_IMAGE_FAMILY))
    return problems, notes
