# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection options shared by every module that talks to Google Cloud."""

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    DOCUMENTATION = r"""
options:
  project:
    description:
      - The Google Cloud project ID.
      - Falls back to the E(GCP_PROJECT) environment variable.
    type: str
  auth_kind:
    description:
      - How to obtain credentials.
      - V(application) uses Application Default Credentials (C(gcloud auth application-default login), workload identity,
        E(GOOGLE_APPLICATION_CREDENTIALS)).
      - V(serviceaccount) uses O(service_account_file) or O(service_account_contents).
      - V(accesstoken) uses O(access_token) as it is.
      - V(machineaccount) uses the service account of the Compute Engine VM the controller runs on.
      - V(none) sends no credentials; only for a local API stand-in such as the collection's test sandbox.
      - Falls back to the E(GCP_AUTH_KIND) environment variable, which AWX's built-in GCE credential sets.
    type: str
    choices: [application, serviceaccount, accesstoken, machineaccount, none]
    default: application
  service_account_file:
    description:
      - Path to a service account JSON key file, for O(auth_kind=serviceaccount).
      - Falls back to the E(GCP_SERVICE_ACCOUNT_FILE) environment variable.
    type: path
  service_account_contents:
    description:
      - The contents of a service account JSON key, for O(auth_kind=serviceaccount).
      - Falls back to the E(GCP_SERVICE_ACCOUNT_CONTENTS) environment variable.
    type: jsonarg
  access_token:
    description:
      - An OAuth2 access token, for O(auth_kind=accesstoken).
      - Falls back to the E(GCP_ACCESS_TOKEN) environment variable.
    type: str
  scopes:
    description:
      - OAuth2 scopes to request.
      - Falls back to the E(GCP_SCOPES) environment variable (comma separated).
    type: list
    elements: str
    default: ['https://www.googleapis.com/auth/cloud-platform']
  compute_endpoint:
    description:
      - Base URL of the Compute Engine API, including the version path.
      - Falls back to E(CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE), the variable gcloud honours, so one environment points
        both gcloud and this collection at the same endpoint.
    type: str
    default: https://compute.googleapis.com/compute/v1/
  container_endpoint:
    description:
      - Base URL of the Container (GKE) API, without the version path.
      - Falls back to E(CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER).
    type: str
    default: https://container.googleapis.com/
  retry_deadline:
    description:
      - Seconds within which one API call may be retried on HTTP 429, 500, 502, 503, 504 and dropped connections,
        with capped exponential backoff and jitter, honouring Retry-After.
    type: float
    default: 300
requirements:
  - google-auth >= 2.29
  - requests >= 2.31
notes:
  - These modules run on the controller; install the collection's C(requirements.txt) there.
  - Where the task runs them with the controller's own Python (the local connection, C(ansible_python_interpreter) the
    controller's as on the implicit localhost, no become, async or delegation), their action runs the module inside the
    task's worker process instead of starting a module process, which saves about 0.6 s per task. Set
    E(ANSIBLE_GPUDIRECT_MODULE_PROCESS) to a true value to always start a module process; C(-vvv) shows which way each
    task ran and why.
  - Every mutating Compute Engine call carries a C(requestId), kept across retries, so a retried insert never creates twice.
  - The options can be set once for every module with C(module_defaults) and the action group C(group/aiinfra.gpudirect.gcp).
"""
