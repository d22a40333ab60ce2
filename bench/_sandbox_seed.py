"""Fill a sandbox with a large mixed GPU fleet quickly, for the inventory benchmark.

Thousands of ``instances.insert`` calls over HTTP would take minutes and measure the sandbox, not
the inventory. Instead, per project:

1. the fabrics are made through the API (networks and subnets, as gce_gpudirect_network makes them),
2. one VM of each kind is inserted through the API, so its JSON is exactly what the sandbox's
   instance handler produces (links, NICs, scheduling, disks, metadata, fingerprints),
3. that template is cloned straight into the sandbox's store (``sandbox.store.put`` under its lock)
   with a new id, name, zone (round robin over every zone of the catalog), region-correct subnet
   links, unique NIC addresses, a status (one in eleven TERMINATED) and labels (half carry
   ``cluster``), the fields an inventory reads.

``seed_fleet(sandbox, projects, total)`` returns {project: count}. It takes about a second for 5,000.
"""

import copy
import sys
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'tests'))

from sandbox import catalog  # noqa: E402  pylint: disable=wrong-import-position
from sandbox.client import SandboxClient  # noqa: E402  pylint: disable=wrong-import-position
from sandbox.store import COMPUTE_LINK  # noqa: E402  pylint: disable=wrong-import-position

TEMPLATE_ZONE = 'us-central1-b'   # offers every type of KINDS, A3 Ultra included (GPU locations page)
TEMPLATE_REGION = 'us-central1'
# (machine type, fabric prefix, data NICs, NIC type of the data NICs, share of the fleet in tenths)
KINDS = (
    ('a3-megagpu-8g', 'mega', 8, 'GVNIC', 3),
    ('a3-highgpu-8g', 'high', 4, 'GVNIC', 3),
    ('a3-edgegpu-8g', 'edge', 4, 'GVNIC', 1),
    ('a3-ultragpu-8g', 'ultra', 8, 'MRDMA', 1),
    ('n2-standard-8', None, 0, None, 2),
)


def _fabric(client, project, prefix, data_nics, management_nics=1, roce=False):
    """Management networks, then one data network per data NIC -- or, for MRDMA NICs, one RoCE network (RDMA network
    profile of the template zone) with a subnet per NIC, as Google's RDMA network profiles page lays them out."""
    names = []
    for n in range(management_nics):
        suffix = 'mgmt' if n == 0 else 'gvnic'
        names.append(('%s-%s-net' % (prefix, suffix), '%s-%s-sub' % (prefix, suffix), '192.%d.0.0/24' % (168 + n)))
    for network, subnet, cidr in names:
        client.create_vpc(project, network, subnet, TEMPLATE_REGION, cidr)
    if roce:
        client.must('POST', 'compute/v1/projects/%s/global/networks' % project,
                    {'name': '%s-data-net' % prefix, 'autoCreateSubnetworks': False,
                     'networkProfile': 'global/networkProfiles/%s-vpc-roce' % TEMPLATE_ZONE})
    for n in range(1, data_nics + 1):
        network, subnet, cidr = ('%s-data-net' % prefix if roce else '%s-data-net-%d' % (prefix, n)), '%s-data-sub-%d' % (prefix, n), '192.168.%d.0/24' % n
        if roce:
            client.must('POST', 'compute/v1/projects/%s/regions/%s/subnetworks' % (project, TEMPLATE_REGION),
                        {'name': subnet, 'network': 'global/networks/' + network, 'ipCidrRange': cidr})
        else:
            client.create_vpc(project, network, subnet, TEMPLATE_REGION, cidr)
        names.append((network, subnet, cidr))
    return names


def _template(client, project, machine_type, prefix, data_nics, nic_type):
    if prefix is None:
        client.create_vpc(project, 'ops-net', 'ops-sub', TEMPLATE_REGION, '10.128.0.0/20', mtu=1460)
        nics = [{'network': 'global/networks/ops-net', 'subnetwork': 'regions/%s/subnetworks/ops-sub' % TEMPLATE_REGION,
                 'accessConfigs': [{'name': 'external-nat', 'type': 'ONE_TO_ONE_NAT'}]}]
    else:
        management = 2 if nic_type == 'MRDMA' else 1
        fabric = _fabric(client, project, prefix, data_nics, management, roce=nic_type == 'MRDMA')
        nics = []
        for index, (network, subnet, _cidr) in enumerate(fabric):
            nic = {'network': 'global/networks/%s' % network, 'subnetwork': 'regions/%s/subnetworks/%s' % (TEMPLATE_REGION, subnet),
                   'nicType': 'GVNIC' if index < management else nic_type}
            if index == 0:
                nic['accessConfigs'] = [{'name': 'external-nat', 'type': 'ONE_TO_ONE_NAT'}]
            nics.append(nic)
    body = {
        'name': '%s-template' % (prefix or 'ops'),
        'machineType': 'zones/%s/machineTypes/%s' % (TEMPLATE_ZONE, machine_type),
        'networkInterfaces': nics,
        'disks': [{'boot': True, 'autoDelete': True, 'initializeParams': {'sourceImage': 'projects/cos-cloud/global/images/family/cos-121-lts',
                                                                          'diskSizeGb': '200'}}],
        'scheduling': {'onHostMaintenance': 'TERMINATE', 'automaticRestart': True} if prefix else {},
        'metadata': {'items': [{'key': 'cos-update-strategy', 'value': 'update_disabled'}]},
        'serviceAccounts': [{'email': 'default', 'scopes': ['https://www.googleapis.com/auth/cloud-platform']}],
        'labels': {'fleet': 'bench'},
    }
    client.must('POST', 'compute/v1/projects/%s/zones/%s/instances' % (project, TEMPLATE_ZONE), body)
    key = 'projects/%s/zones/%s/instances/%s' % (project, TEMPLATE_ZONE, body['name'])
    return key


def _clone(template, project, name, zone, serial, store):
    region = catalog.ZONES[zone]
    instance = copy.deepcopy(template)
    key = 'projects/%s/zones/%s/instances/%s' % (project, zone, name)
    instance.update({
        'id': store.new_id(), 'name': name,
        'zone': COMPUTE_LINK + 'projects/%s/zones/%s' % (project, zone),
        'machineType': instance['machineType'].replace('/zones/%s/' % TEMPLATE_ZONE, '/zones/%s/' % zone),
        'selfLink': COMPUTE_LINK + key,
        'status': 'TERMINATED' if serial % 11 == 10 else 'RUNNING',   # 11: coprime with the 127 zones
        'labels': dict(instance.get('labels') or {}, **({'cluster': 'c%d' % (serial % 7)} if serial % 2 else {})),
    })
    for index, nic in enumerate(instance['networkInterfaces']):
        nic['subnetwork'] = nic['subnetwork'].replace('/regions/%s/' % TEMPLATE_REGION, '/regions/%s/' % region)
        nic['networkIP'] = '10.%d.%d.%d' % (index, serial // 250 % 250, serial % 250 + 2)
        for config in nic.get('accessConfigs') or []:
            config['natIP'] = '34.%d.%d.%d' % (100 + serial // 62500 % 100, serial // 250 % 250, serial % 250 + 2)
    for disk in instance.get('disks') or []:
        disk['source'] = COMPUTE_LINK + 'projects/%s/zones/%s/disks/%s' % (project, zone, name)
    return key, instance


def seed_fleet(sandbox, projects, total):
    """Make ``total`` VMs spread evenly over ``projects`` and every catalog zone; return {project: count}."""
    client = SandboxClient(sandbox.url)
    zones = list(catalog.ZONES)
    counts = {}
    # The fleet's fabrics need more VPC networks than a project's default quota of 15 (tests/sandbox/quotas.py):
    # lift it for these projects, as a granted quota increase would.
    for project in projects:
        sandbox.set_quota('NETWORKS', None, project=project)
    per_project = [total // len(projects) + (1 if index < total % len(projects) else 0) for index in range(len(projects))]
    serial = 0
    for number, (project, count) in enumerate(zip(projects, per_project)):
        templates = []
        for machine_type, prefix, data_nics, nic_type, tenths in KINDS:
            key = _template(client, project, machine_type, prefix, data_nics, nic_type)
            templates.extend([(key, prefix or 'ops')] * tenths)
        with sandbox.store.lock:
            stored = {key: sandbox.store.get('compute.instances', key) for key, _prefix in templates}
            for key, _prefix in set(templates):   # the templates are not part of the fleet
                sandbox.store.delete('compute.instances', key)
            for n in range(count):
                key, prefix = templates[n % len(templates)]
                name = '%s-p%d-vm-%05d' % (prefix, number, n)
                clone_key, instance = _clone(stored[key], project, name, zones[n % len(zones)], serial, sandbox.store)
                sandbox.store.put('compute.instances', clone_key, instance)
                serial += 1
            sandbox.store.save()
        counts[project] = count
    return counts
