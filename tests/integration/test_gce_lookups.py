"""module_utils/gce/lookups.py against the sandbox: the reads before the first VM insert go out at once, and the
problem reported first is still the one the checks ask about first."""

import threading
import time

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce import instance as gce_instance
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce import lookups
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

from test_gcp_client import PROJECT, make_clients


def spec_of(**overrides):
    values = dict({'count': 2, 'zone': 'us-central1-a', 'machine_type': 'a3-megagpu-8g', 'network_prefix': 'a3mega',
                   'provisioning_model': 'standard'}, **overrides)
    params = ArgumentSpecValidator(gce_instance.ARGUMENT_SPEC).validate(values).validated_parameters
    names, spec = gce_instance.build_from_params(params, PROJECT)
    return names, spec, params


class InFlight:
    """Counts the requests of a real transport that are under way at the same time (each held 50 ms, so that reads
    sent at once overlap and reads sent one after another do not)."""

    def __init__(self, transport):
        self.request, self.now, self.most, self.lock = transport.request, 0, 0, threading.Lock()
        transport.request = self

    def __call__(self, *args, **kwargs):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(0.05)
            return self.request(*args, **kwargs)
        finally:
            with self.lock:
                self.now -= 1


def test_the_reads_before_the_first_insert_are_sent_at_once(sandbox):
    compute = make_clients(sandbox).compute
    names, spec, params = spec_of()
    reads = lookups.references_reads(spec, params['zone'], params['fallback_zones'])
    # region, machine type, image, networks, subnetworks, instances (the catalog's A3 Mega boot disk has no diskType)
    assert [method for method, _path in reads] == ['get', 'get', 'get', 'list', 'list', 'aggregated']
    in_flight = InFlight(compute.transport)
    before = len(sandbox.request_log())
    assert lookups.check_references(compute, spec, names, params['zone'], params['fallback_zones']) == set()
    assert in_flight.most == len(reads), 'every read under way at once'
    assert len(sandbox.request_log()) - before == len(reads), 'each read once, nothing else'


def test_the_first_problem_reported_is_the_first_check_s(sandbox):
    compute = make_clients(sandbox).compute
    # An unknown zone and an unknown image family: the zone is checked first, so it is the one reported.
    names, spec, params = spec_of(zone='us-central1-z', image_family='no-such-family')
    with pytest.raises(InputError, match=r"^zone: zone 'us-central1-z' does not exist in region us-central1"):
        lookups.check_references(compute, spec, names, params['zone'], params['fallback_zones'])
    names, spec, params = spec_of(image_family='no-such-family')
    with pytest.raises(InputError, match=r"^image_family: image family 'no-such-family' does not exist"):
        lookups.check_references(compute, spec, names, params['zone'], params['fallback_zones'])


def test_a_refused_read_is_reported_with_its_check_s_action(sandbox):
    compute = make_clients(sandbox).compute
    names, spec, params = spec_of()
    sandbox.inject_fault(method='compute.machineTypes.get', kind='http_403', count=1)
    with pytest.raises(GcpError) as caught:
        lookups.check_references(compute, spec, names, params['zone'], params['fallback_zones'])
    assert str(caught.value).startswith("Failed to get machine type 'a3-megagpu-8g' (HTTP 403")
