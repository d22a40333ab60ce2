# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl-tests output parser for aiinfra.gpudirect (verdicts: verdict.py; GPU preflight: preflight.py).

Used by the ``nccl_perf`` module (on the target, so: standard library only, Python 3.8+), the
``nccl_report`` module and the ``nccl_results`` filter (on the controller).

Public API:

* :func:`parse` -- nccl-tests output (text of any vintage, or the ``-J`` JSON file) into results.
* :func:`evaluate` -- results + machine family (+ overrides, + baseline) into a pass/fail verdict.
* :func:`thresholds_for` / :func:`expected_networks` -- the pass criteria a verdict applies.
* :func:`compare_with_baseline` -- regressions of one report against an earlier one.
* :func:`parse_nvidia_smi_gpus` / :func:`parse_nvidia_smi_topology` / :func:`check_gpus` -- preflight.

Formats read (references.md "nccl-tests output"; NVIDIA/nccl-tests src/util.cu):

* current: ``# nccl-tests version``, ``# Collective test starting: NAME``, ``# nThread ..``,
  ``# Using devices`` + ``#  Rank ..`` lines, a ``#`` table header, rows of
  ``size count type redop root`` then ``time algbw busbw #wrong`` for out-of-place and in-place
  (``#wrong`` is ``N/A`` with ``-c 0``), ``# Out of bounds values``, ``# Avg bus bandwidth`` (with
  ``OK``/``FAILED`` when NCCL_TESTS_MIN_BW is set), ``# Collective test concluded: NAME``;
* older builds: footer lines without ``#``, no ``root`` column, an ``error`` (max deviation)
  column instead of ``#wrong``;
* NCCL ``INFO``/``WARN`` lines interleaved with the table, even glued to half a row (NCCL logs
  to the same stdout while nccl-tests has printed only the start of a row);
* wrapper prefixes: OpenMPI ``--tag-output`` (``[1,0]<stdout>:``), ``kubectl logs --timestamps``;
* several collectives in one log; runs cut short (no footer, half a row).

The parser never guesses: a line it cannot read is returned in ``unparsed_lines`` (and a
row-like line it cannot read makes the ``results`` criterion fail).

"""

from __future__ import annotations

import json
import math
import re


# ---------------------------------------------------------------------------------------------
# Facts about nccl-tests and NCCL (references.md "nccl-tests output")
# ---------------------------------------------------------------------------------------------

_COLLECTIVE_ALIASES = {
    'allgather': 'all_gather', 'allreduce': 'all_reduce', 'reducescatter': 'reduce_scatter',
    'all_to_all': 'alltoall', 'send_recv': 'sendrecv',
}

# The label the collection's test stand-ins put on what their tools print (tests/sandbox/kube/pod-tools/label:
# "[aiinfra sandbox stand-in: synthetic output, no GPU/NCCL/host access]"): numbers no GPU or NIC measured, which
# every verdict on them says (the project's rule: a verdict computed on stand-in output says so).
SYNTHETIC_OUTPUT = re.compile(r'\[aiinfra sandbox stand-in: synthetic output')
SYNTHETIC_PREFIX = 'STAND-IN OUTPUT (synthetic numbers, nothing measured): '

# NCCL's own TCP transport: the traffic is not on GPUDirect.
SOCKET_NETWORK = 'Socket'


PASSED, FAILED, SKIPPED = 'passed', 'failed', 'skipped'

# ---------------------------------------------------------------------------------------------
# Line patterns
# ---------------------------------------------------------------------------------------------

ANSI_ESCAPE = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
_MPI_TAG = re.compile(r'^\[\d+,\d+\]<(?:stdout|stderr)>:\s?')
_KUBECTL_TS = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) ')
_NCCL_LOG = re.compile(
    r'(?:(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) \[\s*(?P<dev>\d+)\s*\] )?'
    r'(?:(?P<src>[\w./-]+:\d+) )?NCCL (?P<level>INFO|WARN|TRACE|ABORT)\b ?(?P<msg>.*)$')
_GLUED_NUMBER = re.compile(r'^(-?\d+(?:\.\d+)?(?:e[+-]\d+)?|N/A)(?=[A-Za-z])')
_NCCL_VERSION = re.compile(r'NCCL version (?P<version>\d+\.\d+\.\d+\S*)')
_USING_NETWORK = re.compile(r'(?:Using|Initializing) network (?P<net>[\w-]+)')
_NET_NAME = re.compile(r'\bNET/(?P<net>[A-Za-z][\w-]*)')
_CHANNEL_NET = re.compile(r'\bvia NET/(?P<net>[A-Za-z][\w-]*)(?P<rest>\S*)')
_PLUGIN_PROBLEM = re.compile(r'NET/Plugin\s*:?\s*(?:Plugin load .* returned|No plugin found|Failed to find ncclNetPlugin symbol)')
_COMM_RANKS = re.compile(r'\bnranks (?P<ranks>\d+)\b(?:.*\bnNodes (?P<nodes>\d+))?', re.IGNORECASE)

_TESTS_VERSION = re.compile(r'^#\s*nccl-tests version (?P<version>\S+)(?:.*nccl-library=(?P<library>\d+))?')
_TEST_STARTING = re.compile(r'^#\s*Collective test starting:\s*(?P<program>\S+)')
_TEST_CONCLUDED = re.compile(r'^#\s*Collective test concluded:\s*(?P<program>\S+)')
_NTHREAD = re.compile(r'^#\s*nThread\s+(?P<nthreads>\d+)\s+nGpus\s+(?P<ngpus>\d+)\s+minBytes\s+(?P<min>\d+)\s+'
                      r'maxBytes\s+(?P<max>\d+)(?P<rest>.*)$')
_DEVICE = re.compile(r'^#\s+Rank\s+(?P<rank>\d+)(?:\s+Group\s+\d+)?(?:\s+Pid\s+(?P<pid>\d+))?\s+on\s+(?P<host>\S+)\s+'
                     r'device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*?)\s*$')
_HEADER = re.compile(r'^#?\s*(?:size|bytes)\s+(?:count|N)\s+type\s+(?:redop|op)\b')
_OOB = re.compile(r'^#?\s*Out of bounds values\s*:\s*(?P<count>\d+)\s+(?P<status>OK|FAILED)\s*$')
_AVG = re.compile(r'^#?\s*Avg bus bandwidth\s*:\s*(?P<value>[-+0-9.eE]+|nan|inf)\s*(?P<check>OK|FAILED)?\s*$')
_TEST_ERROR = re.compile(r'(?:Test (?:NCCL |CUDA )?failure|Test timeout|# error:)')
_KNOWN_COMMENT = re.compile(
    r'^#\s*(?:$|Using devices|\s*out-of-place|\s*\(B\)|Blocking Enabled|Parallel Init|Per-Iteration Report|'
    r'Writing JSON output|skipping json output|Writing results to file|GPU memory usage|Reducing maxBytes|'
    r'NCCL Tests compiled with|Check\b)')
_ROW_START = re.compile(r'^\s*\d+\s+\d+\s')
_TIMESTAMP_TAIL = re.compile(r'\s+\d{4}-\d\d-\d\d\s+\d\d:\d\d:\d\d\s*$')

# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------


def collective_name(program):
    """``./build/all_gather_perf`` / ``all_gather_perf_mpi`` / ``allgather`` -> ``all_gather``; None stays None."""
    if program is None:
        return None
    name = str(program).strip().rsplit('/', 1)[-1].lower()
    for suffix in ('_mpi', '_perf'):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    name = name.replace('-', '_').replace('.sh', '')
    return _COLLECTIVE_ALIASES.get(name, name) or None


def nccl_version_from_code(code):
    """NCCL_VERSION_CODE -> ``MAJOR.MINOR.PATCH`` (22105 -> 2.21.5; codes before 2.9 used 1000 per major)."""
    code = int(code)
    if code >= 20900:
        return '%d.%d.%d' % (code // 10000, (code % 10000) // 100, code % 100)
    return '%d.%d.%d' % (code // 1000, (code % 1000) // 100, code % 100)


def _resolution(token):
    """Half the unit of the last printed digit of a number (``1.41`` -> 0.005, ``11706`` -> 0.5)."""
    text = token.lower()
    if 'e' in text:
        mantissa, exponent = text.split('e', 1)
        decimals = len(mantissa.split('.', 1)[1]) if '.' in mantissa else 0
        return 0.5 * 10 ** (int(exponent) - decimals)
    decimals = len(text.split('.', 1)[1]) if '.' in text else 0
    return 0.5 * 10 ** (-decimals)


def _number(token):
    value = float(token)
    if math.isnan(value) or math.isinf(value):
        raise ValueError(token)
    return value


def _strip_wrappers(line):
    line = ANSI_ESCAPE.sub('', line.rstrip('\r\n'))
    line = _MPI_TAG.sub('', line)
    return _KUBECTL_TS.sub('', line)


# ---------------------------------------------------------------------------------------------
# Results of one collective while it is being read
# ---------------------------------------------------------------------------------------------


def _new_collective(hint=None):
    return {
        'name': collective_name(hint), 'program': None, 'name_source': 'hint' if hint else None,
        'nccl_tests_version': None, 'nccl_version': None,
        'nthreads': None, 'gpus_per_rank': None, 'min_bytes': None, 'max_bytes': None,
        'devices': [], 'ranks': None, 'ranks_source': None, 'nodes': None,
        'columns': None, 'rows': [],
        'out_of_bounds': None, 'out_of_bounds_status': None,
        'avg_busbw': None, 'avg_busbw_check': None, 'concluded': False,
        'networks': [], 'network_lines': [], '_networks': {}, 'gpudirect_rdma': None, 'plugin_problems': [],
        'warnings': [], 'errors': [], 'malformed_rows': [], 'unparsed_lines': [],
        '_seen': set(), '_tolerance': [],
    }


def _started(coll):
    return bool(coll['rows'] or coll['avg_busbw'] is not None or coll['out_of_bounds'] is not None)


def _set_nccl_version(coll, text):
    """Record the NCCL version a line names (2.21.5 of 'NCCL version 2.21.5+cuda12.4'), if it names one."""
    found = _NCCL_VERSION.search(text)
    if found:
        coll['nccl_version'] = found.group('version').split('+', 1)[0]


class _Reader:
    """Reads nccl-tests text line by line into a list of collectives."""

    def __init__(self, hint=None):
        self.hint = hint
        self.collectives = [_new_collective(hint)]
        self.unparsed = []
        self.pending = None  # (text, first line number) of a row NCCL logging cut in two

    @property
    def current(self):
        return self.collectives[-1]

    def begin(self, key):
        """Open a new collective when ``key`` (a header line kind) starts another test."""
        coll = self.current
        if _started(coll) or key in coll['_seen'] or (key == 'version' and coll['_seen'] & {'starting', 'nthread'}):
            self.flush_pending()
            self.collectives.append(_new_collective(self.hint))
        self.current['_seen'].add(key)

    # -- line kinds -------------------------------------------------------------------------

    def read(self, text):
        for number, raw in enumerate(text.splitlines(), 1):
            self.line(number, _strip_wrappers(raw))
        self.flush_pending()
        return self

    def line(self, number, line):
        log = _NCCL_LOG.search(line)
        if log:
            before, log = self.split_glued(line, log)
            if before.strip():
                self.add_fragment(number, before)
            self.nccl_log(number, log)
            return
        if not line.strip():
            return
        if self.pending is not None:
            if self.continue_row(number, line):
                return
        if line.lstrip().startswith('#') or _OOB.match(line) or _AVG.match(line) or _HEADER.match(line):
            self.comment(number, line)
        elif _ROW_START.match(line):
            if not self.row(number, line):
                self.pending = (line, number)
        elif _NCCL_VERSION.search(line):
            _set_nccl_version(self.current, line)
        elif _TEST_ERROR.search(line):
            self.current['errors'].append({'line': number, 'text': line.strip()})
        else:
            self.unparsed.append({'line': number, 'text': line})

    @staticmethod
    def split_glued(line, log):
        """Split a line into the row text before an NCCL log line and the log match.

        nccl-tests prints a row in pieces; an NCCL line written in between is glued to the last
        number printed (``...  none      -1nccl-host-1:12:34 [0] NCCL INFO ...``): that number
        belongs to the row, not to the host name (host names never start with ``-`` or a digit
        followed by letters here).
        """
        before = line[:log.start()]
        host = log.group('host')
        if before.strip() and host and _ROW_START.match(before + ' 0 '):
            glued = _GLUED_NUMBER.match(host)
            if glued:
                rest = line[log.start() + len(glued.group(1)):]
                again = _NCCL_LOG.search(rest)
                if again and again.start() == 0:
                    return before + glued.group(1), again
        return before, log

    def add_fragment(self, number, text):
        if self.pending is None:
            if not _ROW_START.match(text):
                self.unparsed.append({'line': number, 'text': text})
                return
            self.pending = (text, number)
        else:
            self.pending = (self.pending[0] + text, self.pending[1])
        if self.row(self.pending[1], self.pending[0], quiet=True):
            self.pending = None

    def continue_row(self, number, line):
        """Join a row's continuation after an interleaved log line; True when the line was used."""
        text = self.pending[0] + ' ' + line
        if self.row(self.pending[1], text, quiet=True):
            self.pending = None
            return True
        if re.match(r'^[\s\d.eE+\-/NA]+$', line):
            self.pending = (text, self.pending[1])
            return True
        self.flush_pending()
        return False

    def flush_pending(self):
        if self.pending is not None:
            text, number = self.pending
            self.current['malformed_rows'].append({'line': number, 'text': text.strip(),
                                                   'why': 'incomplete row (the run stopped or its output was cut)'})
            self.pending = None

    # -- NCCL log lines ---------------------------------------------------------------------

    def nccl_log(self, number, log):
        coll, msg, level = self.current, log.group('msg'), log.group('level')
        if level in ('WARN', 'ABORT'):
            coll['warnings'].append({'line': number, 'text': log.group(0).strip()})
        _set_nccl_version(coll, msg)
        ranks = _COMM_RANKS.search(msg)
        if ranks and ('Init COMPLETE' in msg or 'nNodes' in msg):
            coll['ranks'], coll['ranks_source'] = int(ranks.group('ranks')), 'nccl log (nranks)'
            if ranks.group('nodes'):
                coll['nodes'] = int(ranks.group('nodes'))
        if _PLUGIN_PROBLEM.search(msg):
            coll['plugin_problems'].append({'line': number, 'text': msg.strip()})
        self.network(number, msg)

    def network(self, number, msg):
        """Record which NCCL network a log line names, by strength of evidence.

        ``Using network X`` (NCCL's own choice) outranks ``via NET/X`` on a channel, which outranks
        a plugin or transport announcing itself (``NET/X : Using ...``, ``NET/X ver. ...``).
        """
        coll = self.current
        using = _USING_NETWORK.search(msg)
        channel = _CHANNEL_NET.search(msg)
        if using:
            kind, name = 'using', using.group('net')
        elif channel:
            kind, name = 'channel', channel.group('net')
            rdma = 'GDRDMA' in channel.group('rest')
            coll['gpudirect_rdma'] = rdma if coll['gpudirect_rdma'] is None else (coll['gpudirect_rdma'] and rdma)
        else:
            found = _NET_NAME.search(msg)
            if not found or found.group('net') == 'Plugin' or not re.search(r'\b(?:Using|ver\.|Initializ)', msg):
                return
            kind, name = 'announced', found.group('net')
        seen = coll['_networks'].setdefault(kind, [])
        if name not in seen:
            seen.append(name)
            coll['network_lines'].append({'line': number, 'kind': kind, 'text': msg.strip()})

    # -- comment, header and footer lines ---------------------------------------------------

    def comment(self, number, line):
        coll = self.current
        match = _TESTS_VERSION.match(line)
        if match:
            self.begin('version')
            self.current['nccl_tests_version'] = match.group('version')
            if match.group('library'):
                self.current['nccl_version'] = nccl_version_from_code(match.group('library'))
            return
        match = _TEST_STARTING.match(line)
        if match:
            self.begin('starting')
            self.set_program(match.group('program'))
            return
        match = _NTHREAD.match(line)
        if match:
            self.begin('nthread')
            coll = self.current
            coll['nthreads'], coll['gpus_per_rank'] = int(match.group('nthreads')), int(match.group('ngpus'))
            coll['min_bytes'], coll['max_bytes'] = int(match.group('min')), int(match.group('max'))
            return
        if _HEADER.match(line):
            if _started(coll):
                self.begin('header')
            self.current['columns'] = line.lstrip('#').split()
            return
        match = _DEVICE.match(line)
        if match:
            coll['devices'].append({'rank': int(match.group('rank')), 'host': match.group('host'),
                                    'device': int(match.group('device')), 'bus_id': match.group('bus'),
                                    'name': match.group('name')})
            return
        match = _OOB.match(line)
        if match:
            coll['out_of_bounds'], coll['out_of_bounds_status'] = int(match.group('count')), match.group('status')
            return
        match = _AVG.match(line)
        if match:
            try:
                coll['avg_busbw'] = _number(match.group('value'))
            except ValueError:
                coll['errors'].append({'line': number, 'text': line.strip()})
            coll['avg_busbw_check'] = match.group('check')
            return
        match = _TEST_CONCLUDED.match(line)
        if match:
            coll['concluded'] = True
            if coll['program'] is None:
                self.set_program(match.group('program'))
            return
        if _TEST_ERROR.search(line):
            coll['errors'].append({'line': number, 'text': line.strip()})
            return
        if not _KNOWN_COMMENT.match(line):
            self.unparsed.append({'line': number, 'text': line})

    def set_program(self, program):
        coll = self.current
        name = collective_name(program)
        if coll['name'] and coll['name_source'] == 'hint' and coll['name'] != name:
            coll['unparsed_lines'].append({'line': 0, 'text': 'the log names %s; the hint %s was ignored' % (name, coll['name'])})
        coll['program'], coll['name'], coll['name_source'] = program, name, 'log'

    # -- table rows -------------------------------------------------------------------------

    def row(self, number, line, quiet=False):
        """Parse one table row into the current collective; False (and, unless quiet, a report) if it cannot be read."""
        coll = self.current
        try:
            row, tolerance = _parse_row(line, coll['columns'])
        except ValueError as exc:
            if not quiet and not self.could_continue(line):
                coll['malformed_rows'].append({'line': number, 'text': line.strip(), 'why': str(exc)})
                return True
            return False
        row['line'] = number
        coll['rows'].append(row)
        coll['_tolerance'].extend(tolerance)
        return True

    @staticmethod
    def could_continue(line):
        """A row whose end is missing (the next line may hold it)."""
        return len(line.split()) < 13


def _layout(columns, count):
    """(has_root, placement width, placements, wrong column kind) for a row of ``count`` tokens."""
    if columns:
        names = [c.lower() for c in columns if c.lower() not in ('timestamp',)]
        has_root = 'root' in names
        wrong_kind = 'error' if ('error' in names or 'res' in names) else 'wrong'
        per = 4 + sum(1 for c in names if c.startswith('i_')) // 2
        prefix = 5 if has_root else 4
        if count == prefix + 2 * per:
            return has_root, per, ('out_of_place', 'in_place'), wrong_kind
        raise ValueError('%d values where the table header %r has %d' % (count, ' '.join(columns), len(names)))
    layouts = {13: (True, 4, ('out_of_place', 'in_place')), 12: (False, 4, ('out_of_place', 'in_place')),
               21: (True, 8, ('out_of_place', 'in_place'))}
    if count not in layouts:
        raise ValueError('%d values; a row has 12 or 13 (size count type redop [root] then time algbw busbw #wrong twice)' % count)
    return layouts[count] + ('wrong',)


def _parse_row(line, columns):
    text = line
    stamp = _TIMESTAMP_TAIL.search(text)
    if stamp:
        text = text[:stamp.start()]
    tokens = text.split()
    has_root, per, placements, wrong_kind = _layout(columns, len(tokens))
    try:
        row = {'size': int(tokens[0]), 'count': int(tokens[1]), 'type': tokens[2], 'redop': tokens[3],
               'root': int(tokens[4]) if has_root else None,
               'out_of_place': None, 'in_place': None,
               'timestamp': stamp.group(0).strip() if stamp else None}
    except ValueError:
        raise ValueError('size, count and root must be integers') from None
    if not re.match(r'^[A-Za-z]\w*$', row['type']) or not re.match(r'^[A-Za-z]\w*$', row['redop']):
        raise ValueError('type and redop must be names, got %r %r' % (row['type'], row['redop']))
    tolerance = []
    offset = 5 if has_root else 4
    for placement in placements:
        values = tokens[offset:offset + per]
        offset += per
        try:
            row[placement] = {'time_us': _number(values[0]), 'algbw': _number(values[1]), 'busbw': _number(values[2])}
        except ValueError:
            raise ValueError('time, algbw and busbw must be numbers, got %s' % ' '.join(values[:3])) from None
        row[placement].update(_wrong(values[3], wrong_kind))
        tolerance.append(_resolution(values[2]))
    return row, tolerance


def _wrong(token, kind):
    if token.upper() == 'N/A':
        return {'wrong': None, 'error': None}
    try:
        value = float(token)
    except ValueError:
        raise ValueError('#wrong must be a number or N/A, got %r' % token) from None
    if kind == 'error':
        return {'wrong': None, 'error': value}
    return {'wrong': int(value), 'error': None}


# ---------------------------------------------------------------------------------------------
# The -J JSON file
# ---------------------------------------------------------------------------------------------


def _json_bool(value):
    return value is True or str(value).lower() == 'true'


def _json_number(value):
    if value is None or value == 'nan':
        return None
    return float(value)


def _parse_json_document(doc, hint=None):
    coll = _new_collective(hint)
    args = doc.get('args') or []
    if args:
        coll['program'], coll['name'], coll['name_source'] = args[0], collective_name(args[0]), 'json args'
    if doc.get('nccl_version') is not None:
        coll['nccl_version'] = nccl_version_from_code(doc['nccl_version'])
    config = doc.get('config') or {}
    coll['nthreads'], coll['gpus_per_rank'] = config.get('nthreads'), config.get('ngpus')
    coll['min_bytes'], coll['max_bytes'] = config.get('minimum_bytes'), config.get('maximum_bytes')
    for dev in config.get('devices') or []:
        coll['devices'].append({'rank': dev.get('rank'), 'host': dev.get('hostname'), 'device': dev.get('device'),
                                'bus_id': dev.get('device_hex'), 'name': dev.get('device_info')})
    for index, item in enumerate(doc.get('results') or [], 1):
        row = {'size': int(item['size']), 'count': int(item['count']), 'type': item.get('type'), 'redop': item.get('redop'),
               'root': int(item['root']) if str(item.get('root', '')).strip().lstrip('-').isdigit() else None,
               'out_of_place': None, 'in_place': None, 'timestamp': None, 'line': index}
        for placement in ('out_of_place', 'in_place'):
            body = item.get(placement)
            if body:
                nwrong = body.get('nwrong')
                row[placement] = {'time_us': _json_number(body.get('time', body.get('cpu_time'))),
                                  'algbw': _json_number(body.get('alg_bw')), 'busbw': _json_number(body.get('bus_bw')),
                                  'wrong': None if nwrong is None else int(float(nwrong)), 'error': None}
                coll['_tolerance'].append(0.0)
        coll['rows'].append(row)
    oob = doc.get('out_of_bounds')
    if oob is not None:
        coll['out_of_bounds'] = int(oob.get('count', 0))
        coll['out_of_bounds_status'] = 'OK' if _json_bool(oob.get('okay')) else 'FAILED'
    avg = doc.get('average_bus_bandwidth')
    if avg is not None:
        coll['avg_busbw'] = _json_number(avg.get('bandwidth'))
        okay = avg.get('okay')
        coll['avg_busbw_check'] = None if okay in (None, 'unchecked') else ('OK' if _json_bool(okay) else 'FAILED')
        coll['concluded'] = True
    coll['errors'].extend({'line': 0, 'text': str(e)} for e in doc.get('errors') or [] if str(e).strip())
    return coll


def parse_json(text, collective=None):
    """Parse the ``-J`` JSON file of nccl-tests (version 2). A file cut short is reported, not guessed at."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        result = _finish([], [], source='json')
        result['errors'].append('the JSON results file cannot be read (%s): the run may have stopped before nccl-tests '
                                'closed it; parse the text output instead' % exc)
        return result
    docs = doc if isinstance(doc, list) else [doc]
    collectives = [_parse_json_document(d, collective) for d in docs if isinstance(d, dict)]
    return _finish(collectives, [], source='json')


# ---------------------------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------------------------


def _busbw_values(rows):
    return [row[p]['busbw'] for row in rows for p in ('out_of_place', 'in_place') if row.get(p) and row[p]['busbw'] is not None]


def _ranks_from_bandwidth(name, rows):
    """The rank count implied by busbw/algbw of the largest rows, if the collective's factor fixes it."""
    if name not in ('all_gather', 'reduce_scatter', 'alltoall', 'all_reduce'):
        return None
    samples = sorted((row[p] for row in rows for p in ('out_of_place', 'in_place') if row.get(p) and row[p]['algbw'] >= 1.0),
                     key=lambda body: -body['algbw'])[:4]
    estimates = []
    for body in samples:
        ratio = body['busbw'] / body['algbw']
        span = 2.0 if name == 'all_reduce' else 1.0
        if not 0 < ratio < span:
            return None
        estimates.append(span / (span - ratio))
    if not estimates:
        return None
    nearest = round(sum(estimates) / len(estimates))
    if nearest >= 2 and all(abs(e - nearest) <= 0.25 for e in estimates):
        return int(nearest)
    return None


def summarize(coll):
    """Add the derived figures to one collective's results (averages, peak, largest size, ranks)."""
    rows = coll['rows']
    values = _busbw_values(rows)
    tolerance = coll.pop('_tolerance', [])
    coll.pop('_seen', None)
    coll['complete'] = coll['avg_busbw'] is not None and coll['out_of_bounds'] is not None
    coll['avg_busbw_recomputed'] = round(sum(values) / len(values), 6) if values else None
    # printed rows are rounded: their mean can differ from nccl-tests' own by the mean rounding step,
    # and the printed average (%g) by one part in 10^6.
    coll['avg_busbw_tolerance'] = (sum(tolerance) / len(tolerance) if tolerance else 0.0) + \
        (abs(coll['avg_busbw'] or 0.0) * 5e-6) + 1e-9
    coll['peak_busbw'], coll['peak_busbw_size'] = None, None
    for row in rows:
        for placement in ('out_of_place', 'in_place'):
            body = row.get(placement)
            if body and (coll['peak_busbw'] is None or body['busbw'] > coll['peak_busbw']):
                coll['peak_busbw'], coll['peak_busbw_size'] = body['busbw'], row['size']
    largest = max(rows, key=lambda r: r['size']) if rows else None
    coll['largest_size'] = largest['size'] if largest else None
    at_largest = [largest[p]['busbw'] for p in ('out_of_place', 'in_place') if largest and largest.get(p)]
    coll['busbw_at_largest_size'] = min(at_largest) if at_largest else None
    wrongs = [row[p]['wrong'] for row in rows for p in ('out_of_place', 'in_place') if row.get(p)]
    coll['validation'] = any(w is not None for w in wrongs) or any(
        row[p]['error'] is not None for row in rows for p in ('out_of_place', 'in_place') if row.get(p))
    coll['wrong_total'] = sum(w for w in wrongs if w is not None) if any(w is not None for w in wrongs) else None
    if coll['ranks'] is None and coll['devices']:
        coll['ranks'], coll['ranks_source'] = len(coll['devices']), 'device list'
    if coll['ranks'] is None:
        derived = _ranks_from_bandwidth(coll['name'], rows)
        if derived:
            coll['ranks'], coll['ranks_source'] = derived, 'busbw/algbw of the largest rows'
    evidence = coll.pop('_networks', {})
    coll['networks'] = list(evidence.get('using') or evidence.get('channel') or evidence.get('announced') or coll['networks'])
    coll['network'] = coll['networks'][0] if len(coll['networks']) == 1 else (
        ','.join(coll['networks']) if coll['networks'] else None)
    return coll


def _has_results(coll):
    return bool(_started(coll) or coll['malformed_rows'] or coll['errors'] or coll['program'])


def _finish(collectives, unparsed, source):
    """Summarize the collectives that hold results; fold the others' log lines into a neighbour."""
    kept, orphans = [], []
    for coll in collectives:
        if _has_results(coll):
            for orphan in orphans:
                _merge_into(coll, orphan)
            orphans = []
            kept.append(coll)
        else:
            orphans.append(coll)
    for orphan in orphans:
        if kept:
            _merge_into(kept[-1], orphan)
    result = {'format': source, 'collectives': [summarize(c) for c in kept], 'unparsed_lines': unparsed, 'errors': []}
    result.update(_overall(result['collectives'] or [summarize(o) for o in orphans]))
    return result


def _merge_into(target, extra):
    """Logs read before a test's header (or after its footer) belong to the test next to them."""
    for key in ('network_lines', 'plugin_problems', 'warnings', 'errors', 'unparsed_lines'):
        for item in extra.get(key, []):
            if item not in target[key]:
                target[key].append(item)
    for kind, names in extra.get('_networks', {}).items():
        mine = target['_networks'].setdefault(kind, [])
        mine.extend(n for n in names if n not in mine)
    for key in ('nccl_version', 'ranks', 'ranks_source', 'nodes', 'gpudirect_rdma'):
        if target.get(key) is None and extra.get(key) is not None:
            target[key] = extra[key]


def _overall(collectives):
    networks, warnings = [], []
    for coll in collectives:
        networks.extend(n for n in coll['networks'] if n not in networks)
        warnings.extend(coll['warnings'])
    versions = [c['nccl_version'] for c in collectives if c['nccl_version']]
    return {'networks': networks, 'warnings': warnings, 'nccl_version': versions[0] if versions else None}


def parse_text(text, collective=None):
    """Parse nccl-tests text output (any vintage, with NCCL logs and wrapper lines) into results."""
    reader = _Reader(collective).read(text)
    return _finish(reader.collectives, reader.unparsed, source='text')


def parse(output, collective=None):
    """Parse nccl-tests output: the ``-J`` JSON file or the text a run printed.

    ``collective`` names the collective for tests whose output does not (the guides' scripts print
    only the table); a name printed in the output always wins and the hint is marked as such
    (``name_source``).

    Returns ``{'format', 'collectives': [...], 'unparsed_lines', 'errors', 'networks', 'warnings',
    'nccl_version'}``; each collective holds ``name``, ``rows``, ``avg_busbw`` (printed),
    ``avg_busbw_recomputed``, ``peak_busbw``, ``busbw_at_largest_size``, ``out_of_bounds``,
    ``out_of_bounds_status``, ``ranks``, ``gpus_per_rank``, ``nccl_version``, ``network``,
    ``warnings``, ``malformed_rows`` and more (see the module's RETURN documentation).
    """
    if isinstance(output, bytes):
        output = output.decode('utf-8', errors='replace')
    if isinstance(output, (dict, list)):
        return parse_json(json.dumps(output), collective)
    if output is None:
        raise ValueError('output: nothing to parse; give the text nccl-tests printed or its -J JSON file')
    text = str(output)
    results = parse_json(text, collective) if text.lstrip().startswith('{') else parse_text(text, collective)
    results['synthetic'] = bool(SYNTHETIC_OUTPUT.search(text))
    return results


# "NET/FasTrak ver. 1.0.13" (TCPX/TCPXO); "NET/gIB : Initializing gIB v1.0.5" (GPUDirect RDMA's gIB plugin, as Google's
# "Run NCCL on Compute Engine instances" shows it: https://cloud.google.com/ai-hypercomputer/docs/nccl/test-vms).
_PLUGIN_BANNER = re.compile(r'\bNET/(?P<net>[A-Za-z][\w-]*) (?:ver\. |: Initializing (?P=net) v)(?P<version>\d[\w.+-]*?)\.?$')


def empty_host_evidence():
    """One host's evidence before anything is seen; ``gpu_problems``: the preflight's (nccl_perf adds them for its host)."""
    return {'gpus': 0, 'network': None, 'network_line': None, 'plugin': None, 'nccl_version': None, 'gpu_problems': None}


def host_evidence(text):
    """What the output shows about each host: ``{host: {'gpus', 'network', 'plugin', 'nccl_version'}}``.

    ``gpus``: the devices nccl-tests listed on the host (``#  Rank N ... on HOST device D``); ``network``: the network
    NCCL's INFO lines of that host name (``Using network FasTrak``), with ``network_line`` the line itself;
    ``plugin``: the GPUDirect plugin's version banner it logged (``FasTrak 1.0.13`` from ``NET/FasTrak ver. 1.0.13``);
    ``nccl_version``: the NCCL version it logged. None where the output does not say (NCCL_DEBUG below INFO).
    A diagnosis compares these across hosts: NCCL ranks with different plugin versions hang.
    """
    hosts = {}

    def entry(name):
        return hosts.setdefault(name, empty_host_evidence())

    for raw in (text or '').splitlines():
        line = _strip_wrappers(raw)
        device = _DEVICE.match(line)
        if device:
            entry(device.group('host'))['gpus'] += 1
            continue
        log = _NCCL_LOG.search(line)
        if not log or not log.group('host'):
            continue
        found, msg = entry(log.group('host')), log.group('msg').strip()
        banner = _PLUGIN_BANNER.search(msg)
        if banner and found['plugin'] is None:
            found['plugin'] = '%s %s' % (banner.group('net'), banner.group('version'))
        using = _USING_NETWORK.search(msg)
        if using and found['network'] is None:
            found['network'], found['network_line'] = using.group('net'), msg
        version = _NCCL_VERSION.search(msg)
        if version and found['nccl_version'] is None:
            found['nccl_version'] = version.group('version')
    return hosts
