"""Synthetic RDMA tools for the OpenShift stand-in's test Pods (run by ``pods/exec``; see openshift.py).

SIMULATION (the nvidia-tools image's perftest and rdma-core tools).  Real: ``ib_write_bw`` from perftest
(CUDA build) measures RDMA writes between two Pods' devices; ``ibstat`` and ``rdma link show`` describe the
HCAs.  This script prints output in those tools' formats (header, table, the rows) with synthetic numbers:
the server form (no address argument) is only recorded when started with ``sh -c 'nohup ... > LOG 2>&1 &'``
and its log appears once a client ran; the client form fails as perftest does ("Couldn't connect") unless
a server was started on the Pod that owns the address with the same port; the BW average is the stand-in's
``bandwidth_gbps``, or its ``slow_gbps`` when the run touches a node or an HCA marked slow (openshift.py: FAULT_SLOW_NODE,
FAULT_SLOW_HCAS; on either side: the client's node and device, the server's).  A client started with ``sh -c 'nohup ...
> LOG 2>&1 &'`` (the diagnosis starts the clients of a round at once) writes its output to LOG, which ``cat`` reads.
``rdma link show`` lists every HCA the Pod reaches (the machine's, openshift.py MACHINES), net1 on the first.
Anything else answers like a shell without that command (exit 127).

argv: CONTEXT_JSON COMMAND...   (CONTEXT_JSON from OpenShiftSimulation.exec_context)
"""

import json
import os
import re
import shlex
import sys

# The label every stand-in tool puts on what it prints (pod-tools/label, the one place it is written).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pod-tools', 'label'), encoding='utf-8') as _label:
    LABEL = re.search(r'^STANDIN_LABEL="(.*)"$', _label.read(), re.M).group(1)

HEADER = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : {device}
 Number of qps   : {qps}\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 PCIe relax order: ON
 ibv_wr* API     : ON
 TX depth        : 128
 CQ Moderation   : 1
 Mtu             : {mtu}[B]
 Link type       : {link}
 GID index       : 3
 Max inline data : 0[B]
 rdma_cm QPs     : ON
 Data ex. method : rdma_cm
---------------------------------------------------------------------------------------
"""
TABLE = """ #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 {size:<10} {iterations:<16} 0.00               {bw:.2f}\t\t   {rate:.6f}
---------------------------------------------------------------------------------------
"""


def option(args, name, default=None):
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(name + '='):
            return arg.split('=', 1)[1]
    return default


def state_file(context, uid, port):
    return os.path.join(context['state_dir'], '%s-%s.json' % (uid, port))


def slow(context, node, device):
    fault = (context.get('faults') or {}).get(node) or {}
    return bool(fault.get('slow_node')) or device in (fault.get('slow_hcas') or ())


def perftest_output(context, args, role, bw):
    size = int(option(args, '-s', '65536'))
    seconds = int(option(args, '-D', '5'))
    rate = bw * 1e9 / 8 / size / 1e6
    text = HEADER.format(device=option(args, '-d', context['device']), qps=option(args, '-q', '1'),
                         mtu=min(int(option(args, '-m', '1024')), 4096), link='IB' if context['link'] == 'IB' else 'Ethernet')
    if '--use_cuda_dmabuf' in args:
        text = 'initializing CUDA\nusing DMA-BUF for GPU buffer address at 0x7f4a40000000 aligned at 0x7f4a40000000\n' \
               'Calling ibv_reg_dmabuf_mr(offset=0, size=%d, addr=0x7f4a40000000, fd=44) for QP #0\n' % size + text
    if role == 'server':
        text = '\n************************************\n* Waiting for client to connect... *\n************************************\n' + text
    text = LABEL + '\n' + text
    return text + TABLE.format(size=size, iterations=int(rate * 1e6 * seconds), bw=bw, rate=rate)


def server_address(args):
    """perftest's client form: the server's address is the last argument (not the value of an option)."""
    return args[-1] if args and re.match(r'^\d+\.\d+\.\d+\.\d+$', args[-1]) and \
        (len(args) < 2 or args[-2] not in ('--source_ip', '-d', '-p', '-x', '-T', '-s', '-m', '-q', '-D')) else None


def ib_write_bw(context, args):
    server = server_address(args)
    port = option(args, '-p', '18515')
    if server is None:
        sys.stderr.write('ib_write_bw server: start it in the background (sh -c "nohup ... &") in this stand-in\n')
        return 1
    peer = context['peers'].get(server) or next((uid for address, uid in context['peers'].items()
                                                 if address.split('/')[0] == server), None)
    path = state_file(context, peer, port) if peer else None
    if not path or not os.path.exists(path):
        sys.stderr.write(" Couldn't connect to %s:%s\n Unable to perform rdma_client function\nUnable to init the socket connection\n"
                         % (server, port))
        return 1
    with open(path, encoding='utf-8') as handle:
        recorded = json.load(handle)
    device = option(args, '-d', context['device'])
    touched_slow = slow(context, context.get('node'), device) or slow(context, recorded.get('node'), recorded['device'])
    bw = float(context['slow_gbps'] if touched_slow else context['bandwidth_gbps'])
    with open(recorded['log'] + '.content', 'w', encoding='utf-8') as handle:
        handle.write(perftest_output(dict(context, device=recorded['device']), recorded['args'], 'server', bw))
    sys.stdout.write(perftest_output(context, args, 'client', bw))
    return 0


def background(context, args, given_log):
    """``nohup ib_write_bw ARGS > LOG 2>&1 &``: a server is recorded (a client's run writes its log); a client runs now,
    its output (and errors) in LOG."""
    log = os.path.join(context['state_dir'], '%s-%s' % (context['uid'], os.path.basename(given_log)))
    logs_path = os.path.join(context['state_dir'], '%s-logs.json' % context['uid'])
    logs = json.load(open(logs_path, encoding='utf-8')) if os.path.exists(logs_path) else {}
    logs[given_log] = log
    with open(logs_path, 'w', encoding='utf-8') as handle:
        json.dump(logs, handle)
    if server_address(args):
        with open(log + '.content', 'w', encoding='utf-8') as handle:
            saved = sys.stdout, sys.stderr
            sys.stdout = sys.stderr = handle
            try:
                ib_write_bw(context, args)
            finally:
                sys.stdout, sys.stderr = saved
        return
    with open(state_file(context, context['uid'], option(args, '-p', '18515')), 'w', encoding='utf-8') as handle:
        json.dump({'args': args, 'log': log, 'device': option(args, '-d', context['device']), 'node': context.get('node')}, handle)


def main(argv):
    context = json.loads(argv[1])
    command = argv[2:]
    name = os.path.basename(command[0]) if command else ''
    if name == 'sh' and len(command) == 3 and command[1] == '-c':
        script = command[2].strip()
        if not re.match(r'^(?:nohup \S*ib_write_bw [^&]*? > \S+ 2>&1 &\s*)+$', script):
            sys.stderr.write('sh: only "nohup ib_write_bw ... > LOG 2>&1 &" (one or more) is served by this stand-in\n')
            return 127
        for match in re.finditer(r'nohup (\S*ib_write_bw [^&]*?) > (\S+) 2>&1 &', script):
            background(context, shlex.split(match.group(1))[1:], match.group(2))
        return 0
    if name == 'ib_write_bw':
        return ib_write_bw(context, command[1:])
    if name == 'cat' and len(command) == 2:
        logs_path = os.path.join(context['state_dir'], '%s-logs.json' % context['uid'])
        logs = json.load(open(logs_path, encoding='utf-8')) if os.path.exists(logs_path) else {}
        content = (logs.get(command[1]) or '') + '.content'
        if not logs.get(command[1]):
            sys.stderr.write('cat: %s: No such file or directory\n' % command[1])
            return 1
        sys.stdout.write(open(content, encoding='utf-8').read() if os.path.exists(content) else '')
        return 0
    if name == 'ibstat' and context['device']:
        device = option(command[1:], '-d', command[1] if len(command) > 1 and not command[1].startswith('-') else context['device'])
        layer = 'InfiniBand' if context['link'] == 'IB' else 'Ethernet'
        sys.stdout.write("CA '%s'\n\tCA type: MT41692\n\tNumber of ports: 1\n\tFirmware version: 32.41.1000\n"
                         "\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: %d\n\t\tBase lid: %d\n"
                         "\t\tLink layer: %s\n" % (device, context['rate_gbps'], 1 if layer == 'InfiniBand' else 0, layer))
        return 0
    if command[:3] == ['rdma', 'link', 'show'] and context['device']:
        for index, device in enumerate(context['devices']):
            sys.stdout.write('link %s/1 state ACTIVE physical_state LINK_UP netdev %s\n' % (device, 'net1' if index == 0 else 'rdma%d' % index))
        return 0
    sys.stderr.write('sh: %s: command not found\n' % (command[0] if command else ''))
    return 127


if __name__ == '__main__':
    sys.exit(main(sys.argv))
