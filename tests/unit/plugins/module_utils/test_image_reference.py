"""The one image reference reading (module_utils/image_reference.py) and its three users: the Docker API's pull
(repository, tag), the catalog's version from a tag, the Kubernetes renderers' check of what the kubelet can pull."""

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import host_stacks
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import docker_api
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.image_reference import ImageReference
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import render

DIGEST = 'sha256:' + 'a' * 64


@pytest.mark.parametrize('text,parts', [
    ('us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12',
     ('us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev', 'v2.0.12', None)),
    ('localhost:5000/nccl', ('localhost:5000/nccl', None, None)),          # a registry port is not a tag
    ('localhost:5000/nccl:1.2', ('localhost:5000/nccl', '1.2', None)),
    ('busybox@' + DIGEST, ('busybox', None, DIGEST)),
    ('repo/name:v1@' + DIGEST, ('repo/name', 'v1', DIGEST)),
])
def test_parts_and_round_trip(text, parts):
    reference = ImageReference.parse(text)
    assert tuple(reference) == parts and str(reference) == text and reference.valid


def test_what_the_kubelet_cannot_pull_is_invalid_and_refused_naming_the_field():
    for text in ('Upper/Case:1', 'repo:tag:more', 'a' * 256 + ':1', 'repo@sha256:short'):
        assert not ImageReference.parse(text).valid, text
        with pytest.raises(InputError, match=r"^plugin_image: .* is not an image reference the kubelet can pull") as caught:
            render.check_image(text, 'plugin_image')
        assert caught.value.field == 'plugin_image'
    assert render.check_image('repo/name:v1', 'plugin_image') == 'repo/name:v1'


def test_the_docker_pull_and_the_catalog_read_the_same_tag():
    assert docker_api.split_image_ref('localhost:5000/nccl') == ('localhost:5000/nccl', 'latest')
    assert docker_api.split_image_ref('repo/name:v1@' + DIGEST) == ('repo/name:v1', DIGEST)
    assert docker_api.split_image_ref('repo/name:v1.0.3') == ('repo/name', 'v1.0.3')
    assert host_stacks._normalize_version('localhost:5000/nccl:1.0.3') == 'v1.0.3'   # pylint: disable=protected-access
    assert host_stacks._normalize_version('localhost:5000/nccl') is None   # pylint: disable=protected-access
