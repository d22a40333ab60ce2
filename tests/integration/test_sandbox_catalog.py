"""The sandbox's location facts (tests/sandbox/data/locations.json) are complete and consistent: one file,
its sources named, every accelerator zone a real zone of the region list, auto-mode ranges distinct /20s
inside 10.128.0.0/9 (https://cloud.google.com/vpc/docs/subnets#ip-ranges)."""

import ipaddress

from sandbox import catalog


def test_locations_name_their_sources():
    assert set(catalog.LOCATIONS['_sources']) == {'regions', 'auto_mode_range', 'machine_type_zones'}
    assert all('https://' in source or 'skypilot' in source for source in catalog.LOCATIONS['_sources'].values())


def test_regions_and_zones():
    assert len(catalog.REGIONS) == 42 and len(catalog.ZONES) == 127
    for zone, region in catalog.ZONES.items():
        assert zone.startswith(region + '-') and len(zone) == len(region) + 2
    # the regions the 13-region catalog missed (issue 16 rule 8)
    assert {'australia-southeast1-c', 'us-west2-a', 'europe-west2-a', 'asia-east1-a'} <= set(catalog.ZONES)


def test_auto_mode_ranges():
    ranges = [ipaddress.ip_network(cidr) for cidr in catalog.AUTO_MODE_RANGES.values()]
    assert set(catalog.AUTO_MODE_RANGES) == set(catalog.REGIONS)
    assert all(cidr.prefixlen == 20 and cidr.subnet_of(ipaddress.ip_network('10.128.0.0/9')) for cidr in ranges)
    assert len(set(ranges)) == len(ranges)


def test_accelerator_zones():
    assert set(catalog.MACHINE_TYPE_ZONES) == {'a3-megagpu-8g', 'a3-highgpu-8g', 'a3-edgegpu-8g', 'a3-ultragpu-8g', 'a4-highgpu-8g'}
    for name, zones in catalog.MACHINE_TYPE_ZONES.items():
        assert zones and zones <= set(catalog.ZONES), name
    assert catalog.machine_type_in_zone('a3-megagpu-8g', 'us-central1-a') and not catalog.machine_type_in_zone('a3-ultragpu-8g', 'us-central1-a')
    assert catalog.machine_type_in_zone('n2-standard-8', 'africa-south1-a'), 'general-purpose types: every zone (the sandbox simplification)'
