# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

# Names inside Google Cloud API links and locations. Standard library only and small: the catalog
# (families.get_family accepts a machineType link) imports it, and the catalog runs on COS hosts too.


def resource_name(link):
    """The last segment of a Compute API link (``.../zones/us-central1-a`` -> ``us-central1-a``); '' for none."""
    return str(link or '').rstrip('/').rsplit('/', 1)[-1]


def region_of(zone):
    """The region of a Compute Engine zone: ``us-central1-a`` -> ``us-central1``; None for none.

    Zones are named REGION-LETTER (https://cloud.google.com/compute/docs/regions-zones)."""
    return zone.rsplit('-', 1)[0] if zone else None
