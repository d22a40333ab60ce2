"""The sandbox refuses malformed bodies as Google's front end does (discovery-schema validation),
and answers unknown URLs, missing resources and duplicates with the real API's error shapes."""

import pytest

P = 'compute/v1/projects/sandbox-project'


def error_of(response, code):
    assert response.status == code, response
    error = response.body['error']
    assert error['code'] == code and error['errors'][0]['domain'] == 'global'
    return error


def test_unknown_top_level_field_is_a_400_in_google_shape(api):
    response = api.post(P + '/global/networks', {'name': 'net', 'foo': 1})
    error = error_of(response, 400)
    assert error['message'] == 'Invalid JSON payload received. Unknown name "foo" at \'network_resource\': Cannot find field.'
    assert error['errors'][0]['reason'] == 'badRequest' and error['status'] == 'INVALID_ARGUMENT'
    assert api.get(P + '/global/networks/net').status == 404, 'a refused body must create nothing'


def test_unknown_nested_field_names_its_path(api):
    body = {'name': 'vm', 'networkInterfaces': [{'network': 'global/networks/n', 'nicKind': 'GVNIC'}]}
    error = error_of(api.post(P + '/zones/us-central1-a/instances', body), 400)
    assert error['message'] == ('Invalid JSON payload received. Unknown name "nicKind" at '
                                "'instance_resource.network_interfaces[0]': Cannot find field.")


def test_bad_enum_value_is_refused(api):
    body = {'name': 'vm', 'scheduling': {'provisioningModel': 'CHEAP'}}
    error = error_of(api.post(P + '/zones/us-central1-a/instances', body), 400)
    assert error['message'] == ("Invalid value at 'instance_resource.scheduling.provisioning_model' "
                                '(type.googleapis.com/google.cloud.compute.v1.Scheduling.ProvisioningModel), "CHEAP"')


def test_every_problem_is_listed(api):
    error = error_of(api.post(P + '/global/networks', {'name': 'n', 'a': 1, 'mtu': 'big', 'routingConfig': {'routingMode': 'X'}}), 400)
    assert len(error['errors']) == 3
    assert "Invalid value at 'network_resource.mtu' (TYPE_INT32), \"big\"" in error['message']


@pytest.mark.parametrize('value', [1, 'yes', 1.5, {'a': 1}])
def test_wrong_json_types_are_refused(api, value):
    error_of(api.post(P + '/global/networks', {'name': 'n', 'autoCreateSubnetworks': value}), 400)


def test_snake_case_names_and_int64_strings_are_accepted_like_proto_json(api):
    response = api.post(P + '/zones/us-central1-a/reservations', {
        'name': 'r', 'specific_reservation': {'count': '2', 'instance_properties': {'machine_type': 'a3-megagpu-8g'}}})
    assert response.status == 200, response
    reservation = api.get(P + '/zones/us-central1-a/reservations/r').body
    assert reservation['specificReservation']['count'] == '2'


def test_map_values_are_checked(api):
    body = {'name': 'vm', 'labels': {'team': 7}}
    error = error_of(api.post(P + '/zones/us-central1-a/instances', body), 400)
    assert "instance_resource.labels[team]" in error['message']


def test_container_bodies_are_checked_against_container_v1(api):
    error = error_of(api.post('v1/projects/p/locations/us-central1-a/clusters', {'cluster': {'name': 'c', 'flavour': 'x'}}), 400)
    assert error['message'] == 'Invalid JSON payload received. Unknown name "flavour" at \'cluster\': Cannot find field.'
    error = error_of(api.post('v1beta1/projects/p/locations/us-central1-a/clusters', {'clusterz': {}}), 400)
    assert error['message'] == 'Invalid JSON payload received. Unknown name "clusterz": Cannot find field.'


def test_alpha_and_beta_paths_validate_against_their_own_documents(api, sandbox):
    assert api.post('compute/alpha/projects/p/global/networks', {'name': 'a'}).status == 200
    assert api.get('compute/beta/projects/p/global/networks/a').body['selfLink'] == sandbox.url + '/compute/beta/projects/p/global/networks/a'


def test_invalid_json_is_refused(api):
    response = api.post(P + '/global/networks', raw=b'{not json')
    assert response.status == 400 and 'Invalid JSON payload' in response.body['error']['message']


def test_unknown_url_is_404(api):
    error = error_of(api.get('compute/v1/projects/p/global/gizmos'), 404)
    assert error['errors'][0]['reason'] == 'notFound'
    assert api.get('nothing/here').status == 404


def test_missing_resource_is_404_not_found(api):
    error = error_of(api.get(P + '/zones/us-central1-a/instances/x'), 404)
    assert error['message'] == "The resource 'projects/sandbox-project/zones/us-central1-a/instances/x' was not found"
    assert error['errors'][0]['reason'] == 'notFound' and error['status'] == 'NOT_FOUND'


def test_duplicate_is_409_already_exists(api):
    assert api.post(P + '/global/networks', {'name': 'n', 'autoCreateSubnetworks': False}).status == 200
    error = error_of(api.post(P + '/global/networks', {'name': 'n', 'autoCreateSubnetworks': False}), 409)
    assert error['message'] == "The resource 'projects/sandbox-project/global/networks/n' already exists"
    assert error['errors'][0]['reason'] == 'alreadyExists'


def test_method_without_a_handler_is_501(api):
    response = api.post(P + '/global/routes', {'name': 'r'})
    assert response.status == 501 and 'compute.routes.insert' in response.body['error']['message']
