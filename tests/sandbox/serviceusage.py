"""Service Usage ``services.get``: every API is ENABLED (gcloud container checks before it acts)."""

from .compute import project_number
from .registry import handles


@handles('serviceusage.services.get')
def get_service(call):
    project = call.params.get('v1Id1', 'sandbox-project')
    service = call.params['servicesId']
    name = 'projects/%s/services/%s' % (project_number(project), service)
    return {'name': name, 'parent': 'projects/%s' % project_number(project), 'state': 'ENABLED',
            'config': {'name': service, 'title': service.split('.')[0]}}
