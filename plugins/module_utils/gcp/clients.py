# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Compute and Container clients of one set of connection settings."""

from __future__ import annotations

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.compute import ComputeClient
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.container import ContainerClient
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.transport import Transport, load_credentials, resolve_settings


class Clients:
    """The Compute and Container clients for one set of connection settings."""

    def __init__(self, settings, retry=None, pool_size=32):
        self.settings = settings
        self.transport = Transport(load_credentials(settings), retry=retry, pool_size=pool_size)
        self.compute = ComputeClient(self.transport, settings['project'], settings['compute_endpoint'])
        self.container = ContainerClient(self.transport, settings['project'], settings['container_endpoint'])
        # The same API at v1beta1, for the fields only it has (NodeConfig.hostMaintenancePolicy, seed 003's `gcloud beta`).
        self.container_beta = ContainerClient(self.transport, settings['project'], settings['container_endpoint'], version='v1beta1')


def clients_from(params=None, environ=None, retry=None):
    """Clients from module options (or a dict of them), falling back to the environment."""
    return Clients(resolve_settings(params, environ), retry=retry)
