"""The sandbox's patch and set* methods, and list paging, as the real API behaves."""

P = 'compute/v1/projects/sandbox-project'


def test_firewall_patch_changes_updatable_fields_only(api):
    api.create_vpc('sandbox-project', 'n1', 's1', 'us-central1', '10.0.0.0/24')
    api.must('POST', P + '/global/firewalls', {'name': 'fw', 'network': 'global/networks/n1', 'sourceRanges': ['10.0.0.0/8'],
                                               'allowed': [{'IPProtocol': 'tcp', 'ports': ['22']}]})
    assert api.request('PATCH', P + '/global/firewalls/fw', {'sourceRanges': ['192.0.2.0/24']}).status == 200
    assert api.get(P + '/global/firewalls/fw').body['sourceRanges'] == ['192.0.2.0/24']
    refused = api.request('PATCH', P + '/global/firewalls/fw', {'direction': 'EGRESS'})
    assert refused.status == 400 and "resource.direction" in refused.body['error']['message']
    bad = api.request('PATCH', P + '/global/firewalls/fw', {'sourceRanges': ['10.0.0.0/33']})
    assert bad.status == 400 and 'Invalid IPCidrRange' in bad.body['error']['message']


def test_network_patch_checks_the_mtu(api):
    api.create_vpc('sandbox-project', 'n1', 's1', 'us-central1', '10.0.0.0/24', mtu=1460)
    assert api.request('PATCH', P + '/global/networks/n1', {'mtu': 8244}).status == 200
    assert api.get(P + '/global/networks/n1').body['mtu'] == 8244
    assert api.request('PATCH', P + '/global/networks/n1', {'mtu': 9000}).status == 400
    assert api.request('PATCH', P + '/global/networks/n1', {'autoCreateSubnetworks': True}).status == 400


def test_set_labels_needs_the_current_fingerprint(api, sandbox):
    api.create_vpc('sandbox-project', 'n1', 's1', 'us-central1', '10.0.0.0/24')
    api.must('POST', P + '/zones/us-central1-a/instances', {
        'name': 'vm', 'machineType': 'zones/us-central1-a/machineTypes/e2-standard-4',
        'disks': [{'boot': True, 'initializeParams': {'sourceImage': 'projects/cos-cloud/global/images/family/cos-121-lts'}}],
        'networkInterfaces': [{'network': 'global/networks/n1', 'subnetwork': 'regions/us-central1/subnetworks/s1'}]})
    vm = api.get(P + '/zones/us-central1-a/instances/vm').body
    stale = api.post(P + '/zones/us-central1-a/instances/vm/setLabels', {'labels': {'a': 'b'}, 'labelFingerprint': 'stale='})
    assert stale.status == 412 and stale.body['error']['errors'][0]['reason'] == 'conditionNotMet'
    api.must('POST', P + '/zones/us-central1-a/instances/vm/setLabels', {'labels': {'a': 'b'}, 'labelFingerprint': vm['labelFingerprint']})
    after = api.get(P + '/zones/us-central1-a/instances/vm').body
    assert after['labels'] == {'a': 'b'} and after['labelFingerprint'] != vm['labelFingerprint']
    api.must('POST', P + '/zones/us-central1-a/instances/vm/setTags', {'items': ['gpu'], 'fingerprint': vm['tags']['fingerprint']})
    api.must('POST', P + '/zones/us-central1-a/instances/vm/setMetadata', {'items': [{'key': 'k', 'value': 'v'}],
                                                                           'fingerprint': vm['metadata']['fingerprint']})
    after = api.get(P + '/zones/us-central1-a/instances/vm').body
    assert after['tags']['items'] == ['gpu'] and after['metadata']['items'] == [{'key': 'k', 'value': 'v'}]


def test_lists_page_by_max_results(api):
    for n in range(5):
        api.must('POST', P + '/global/networks', {'name': 'n%d' % n, 'autoCreateSubnetworks': False})
    first = api.get(P + '/global/networks?maxResults=2').body
    assert [item['name'] for item in first['items']] == ['n0', 'n1'] and first['nextPageToken']
    second = api.get(P + '/global/networks?maxResults=2&pageToken=' + first['nextPageToken']).body
    last = api.get(P + '/global/networks?maxResults=2&pageToken=' + second['nextPageToken']).body
    assert [item['name'] for item in second['items'] + last['items']] == ['n2', 'n3', 'n4'] and 'nextPageToken' not in last
    # maxResults: "Acceptable values are 0 to 500, inclusive" (compute.v1 discovery document): 0 is the default page,
    # above 500 is capped, a negative value is refused.
    assert [item['name'] for item in api.get(P + '/global/networks?maxResults=0').body['items']] == ['n0', 'n1', 'n2', 'n3', 'n4']
    assert 'nextPageToken' not in api.get(P + '/global/networks?maxResults=5000').body
    assert api.get(P + '/global/networks?maxResults=-1').status == 400


def test_aggregated_list_filters_and_pages(api):
    for n in range(3):
        api.create_vpc('sandbox-project', 'n%d' % n, 's%d' % n, 'us-central1', '10.0.%d.0/24' % n)
    page = api.get(P + '/aggregated/subnetworks?maxResults=2&filter=name%20eq%20%22s%5B02%5D%22').body
    names = [item['name'] for scoped in page['items'].values() for item in scoped.get('subnetworks', [])]
    assert names == ['s0', 's2'] and 'nextPageToken' not in page
    first = api.get(P + '/aggregated/subnetworks?maxResults=2').body
    assert sum(len(scoped.get('subnetworks', [])) for scoped in first['items'].values()) == 2 and first['nextPageToken'] == '2'
