# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import re

# Names inside Google Cloud API links and locations. Standard library only and small: the catalog
# (families.get_family accepts a machineType link) imports it, and the catalog runs on COS hosts too.


def resource_name(link):
    """The last segment of a Compute API link (``.../zones/us-central1-a`` -> ``us-central1-a``); '' for none."""
    return str(link or '').rstrip('/').rsplit('/', 1)[-1]


def region_of(zone):
    """The region of a Compute Engine zone: ``us-central1-a`` -> ``us-central1``; None for none.

    Zones are named REGION-LETTER (https://cloud.google.com/compute/docs/regions-zones)."""
    return zone.rsplit('-', 1)[0] if zone else None


# A project ID: 6 to 30 lowercase letters, digits or hyphens, starting with a letter, not ending with a hyphen
# (https://cloud.google.com/resource-manager/docs/creating-managing-projects#before_you_begin); older projects of
# a Google Workspace domain are DOMAIN:ID (https://cloud.google.com/compute/docs/naming-resources).
PROJECT_ID_PATTERN = re.compile(r'^(?:[a-z][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$')


def project_id_problem(project):
    """Why `project` cannot be a project ID (the text names the field and the fix), or None."""
    if project and not PROJECT_ID_PATTERN.match(project):
        return ("project: '%s' is not a valid project ID (6 to 30 lowercase letters, digits or hyphens, starting with a letter); "
                "give the project's ID, not its name or number, e.g. my-gpu-project" % project)
    return None
