"""GKE node pool auto-creation for ComputeClasses, simulated: what GKE's cluster autoscaler does for a Pending Pod
that selects ``cloud.google.com/compute-class: NAME`` (nodeSelector) when the ComputeClass NAME exists.

Sources (public GKE documentation):
- "About node pool auto-creation" (https://cloud.google.com/kubernetes-engine/docs/concepts/node-auto-provisioning):
  the cluster autoscaler creates a node pool that meets the hardware requirements of pending Pods, from the
  ComputeClass they select; it labels the nodes ``cloud.google.com/compute-class: NAME`` and, for a requested machine
  family, ``cloud.google.com/machine-family``.
- "About custom ComputeClasses" (https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes)
  and the ComputeClass CRD reference (https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass):
  GKE tries ``spec.priorities`` in order and uses the first one it can provision; ``whenUnsatisfiable`` says what
  happens when none can: ``DoNotScaleUp`` leaves the Pods Pending, ``ScaleUpAnyway`` creates nodes of a default
  configuration; auto-creation needs ``nodePoolAutoCreation.enabled: true`` on Standard clusters (Autopilot always
  creates nodes).

Each rule below is marked SIMULATION with what GKE does and what the stand-in does instead; README-runtime.md lists
them with what the stand-in cannot show.  The pure part is here (class + priority -> NodePool body); the
controller loop (controllers.ClusterControllers.node_auto_provisioning) decides when, and the Container API
sandbox's own node pool rules (container._node_pool, through gke.GkeClusters) decide whether a priority can be
provisioned.
"""

import hashlib

COMPUTE_CLASS_LABEL = 'cloud.google.com/compute-class'
DRANET_LABEL = 'cloud.google.com/gke-networking-dra-driver'
COMPUTE_CLASSES = 'computeclasses.cloud.google.com'

# ComputeClass reservations.affinity -> NodePool config.reservationAffinity.consumeReservationType (container.v1).
_RESERVATION_AFFINITY = {'Specific': 'SPECIFIC_RESERVATION', 'AnyBestEffort': 'ANY_RESERVATION', 'None': 'NO_RESERVATION'}


def selected_class(pod):
    """The ComputeClass a Pod selects by nodeSelector, or None.  SIMULATION: GKE also honours a required node affinity
    on the label and a namespace's or cluster's default class; the stand-in reads the nodeSelector only."""
    return ((pod.get('spec') or {}).get('nodeSelector') or {}).get(COMPUTE_CLASS_LABEL)


def class_toleration(pod):
    """The toleration of its ComputeClass's taint that a Pod selecting a class lacks, or None.  SIMULATION (GKE's Pod
    admission; "About custom ComputeClasses", https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes,
    "Node taints"): nodes GKE creates for a class carry ``cloud.google.com/compute-class=NAME:NoSchedule`` and a Pod that
    selects the class gets the matching toleration, so only such Pods land there."""
    name = selected_class(pod)
    if not name:
        return None
    toleration = {'key': COMPUTE_CLASS_LABEL, 'operator': 'Equal', 'value': name, 'effect': 'NoSchedule'}
    return None if toleration in (pod['spec'].get('tolerations') or []) else toleration


def auto_creation_allowed(compute_class, autopilot):
    """SIMULATION (which classes may create node pools).  GKE: on Autopilot always; on Standard only with
    ``spec.nodePoolAutoCreation.enabled: true`` (else it only scales existing pools labelled with the class, which
    the stand-in does not do: no autoscaling of existing pools)."""
    return autopilot or bool(((compute_class.get('spec') or {}).get('nodePoolAutoCreation') or {}).get('enabled'))


def when_unsatisfiable(compute_class):
    """SIMULATION.  GKE documents ``ScaleUpAnyway`` and ``DoNotScaleUp``; unset means ``DoNotScaleUp`` on the GKE
    versions seed 001 needs (the custom ComputeClass page gives DoNotScaleUp as the default from GKE 1.33 -- NOT
    verified: the stored copies of the page searched here do not show that sentence; check it before relying on it)."""
    return (compute_class.get('spec') or {}).get('whenUnsatisfiable') or 'DoNotScaleUp'


def _machine_types(priority, catalog):
    """Machine types a priority allows, in the sandbox catalog's name order: its ``machineType``, else those of its
    ``machineFamily`` that carry its ``gpu`` (type and count).  SIMULATION: GKE picks a size of the family to fit the
    Pods' requests (minCores, minMemoryGb, ...); the stand-in tries the catalog's types in name order."""
    if priority.get('machineType'):
        return [priority['machineType']]
    family, gpu = priority.get('machineFamily'), priority.get('gpu') or {}
    found = []
    for name, spec in sorted(catalog.MACHINE_TYPES.items()):
        if family and name.split('-', 1)[0] != family:
            continue
        bundled = (spec.get('accelerators') or [{}])[0]
        if gpu and (bundled.get('guestAcceleratorType') != gpu.get('type') or bundled.get('guestAcceleratorCount') != int(gpu.get('count', 0))):
            continue
        if family or gpu:
            found.append(name)
    return found


def pool_name(class_name, machine_type, index):
    """SIMULATION (auto-created pool names).  GKE names them ``nap-MACHINE-TYPE-`` plus 8 random characters; the
    stand-in derives the 8 characters from the class and the priority, so a name is the same in every run."""
    return 'nap-%s-%s' % (machine_type, hashlib.sha256(('%s/%d' % (class_name, index)).encode()).hexdigest()[:8])


def pool_bodies(compute_class, index, catalog, zones, project):
    """NodePool bodies (container.v1) for priority ``index`` of the class: one per allowed machine type.

    SIMULATION (what GKE puts on an auto-created pool), from the priority and the class's ``nodePoolConfig``:
    machine type and ``gpu`` (accelerator type, count, driver version: GKE installs the default driver on
    auto-created GPU nodes), ``spot``, ``reservations`` (affinity, names, blocks; the zones the reservation names
    become the pool's locations), ``gpuDirect: rdma`` (gpuDirectConfig RDMA), ``acceleratorNetworkProfile``,
    ``nodePoolConfig.dra.networking.enabled`` (the DRANET node label), ``nodePoolConfig.nodeLabels``, the label
    ``cloud.google.com/compute-class: NAME``, the taint ``cloud.google.com/compute-class=NAME:NoSchedule``,
    ``autoscaling.autoprovisioned: true``.  Node count: set by the caller.
    Not simulated: minCores/minMemoryGb, storage, placement, maxRunDurationSeconds, nodeSystemConfig."""
    spec = compute_class.get('spec') or {}
    priority = (spec.get('priorities') or [])[index]
    pool_config = spec.get('nodePoolConfig') or {}
    name = compute_class['metadata']['name']
    labels = dict(pool_config.get('nodeLabels') or {}, **{COMPUTE_CLASS_LABEL: name})
    if ((pool_config.get('dra') or {}).get('networking') or {}).get('enabled'):
        labels[DRANET_LABEL] = 'true'
    # GKE taints the nodes it creates for a class; its Pod admission adds the toleration (class_toleration).
    config = {'labels': labels, 'taints': [{'key': COMPUTE_CLASS_LABEL, 'value': name, 'effect': 'NO_SCHEDULE'}]}
    if priority.get('spot'):
        config['spot'] = True
    if (priority.get('gpuDirect') or '').lower() == 'rdma':
        config['gpuDirectConfig'] = {'gpuDirectStrategy': 'RDMA'}
    locations = list(((priority.get('location') or spec.get('priorityDefaults', {}).get('location') or {}).get('zones')) or zones)
    reservations = priority.get('reservations') or {}
    if reservations:
        config['reservationAffinity'] = {'consumeReservationType': _RESERVATION_AFFINITY.get(reservations.get('affinity'), 'UNSPECIFIED')}
        specific = reservations.get('specific') or []
        if specific:
            first = specific[0]
            value = first['name']
            if first.get('project') or (first.get('reservationBlock') or {}).get('name'):
                value = 'projects/%s/reservations/%s' % (first.get('project') or project, first['name'])
            if (first.get('reservationBlock') or {}).get('name'):
                value += '/reservationBlocks/%s' % first['reservationBlock']['name']
            config['reservationAffinity'].update({'key': 'compute.googleapis.com/reservation-name', 'values': [value]})
            locations = list(first.get('zones') or locations)
    network_config = {'acceleratorNetworkProfile': priority['acceleratorNetworkProfile']} if priority.get('acceleratorNetworkProfile') else {}
    bodies = []
    for machine_type in _machine_types(priority, catalog):
        bundled = (catalog.MACHINE_TYPES[machine_type].get('accelerators') or [{}])[0]
        gpu = priority.get('gpu') or ({'type': bundled['guestAcceleratorType'], 'count': bundled['guestAcceleratorCount']} if bundled else {})
        machine_config = dict(config, machineType=machine_type)
        if gpu:
            machine_config['accelerators'] = [{'acceleratorType': gpu.get('type'), 'acceleratorCount': str(gpu.get('count', 1)),
                                               'gpuDriverInstallationConfig': {'gpuDriverVersion': str(gpu.get('driverVersion') or 'default').upper()}}]
        bodies.append({'name': pool_name(name, machine_type, index), 'config': machine_config, 'locations': locations,
                       'networkConfig': dict(network_config),
                       'autoscaling': {'enabled': True, 'autoprovisioned': True, 'minNodeCount': 0, 'maxNodeCount': 1000}})
    return bodies
