# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A report directory on the controller: text files and a bandwidth plot, written only when they differ.

The one mechanism behind the nccl_report and perftest_report modules: each renders its own text files
(report.json, junit.xml, summary.md) and says what its plot shows; this module decides ``changed``, honours
check mode and diff, writes the directory, and draws bandwidth against message size on a log-2 axis with
the threshold lines.  Everything but the plot is standard library; matplotlib is imported only to draw.
"""

from __future__ import annotations

import os
import traceback

from ansible.module_utils.basic import missing_required_lib

REPORT = 'report.json'
PLOT_SIZE_INCHES = (10, 6)
PLOT_DPI = 100
# 1000 x 600 pixels: wide enough for 20+ sizes on the axis, small enough for a CI artifact.


def unwritable(dest):
    """Why the report directory ``dest`` cannot be written (it is a file, or the nearest directory that exists
    refuses this user), or None: checked before a run's first write, so that the report is not what fails last."""
    dest = os.path.abspath(os.path.expanduser(str(dest)))
    if os.path.exists(dest) and not os.path.isdir(dest):
        return '%s is a file, not a directory; give a directory path' % dest
    existing = dest
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return '%s is a file, so %s cannot be made; give a directory path' % (existing, dest)
    if not os.access(existing, os.W_OK | os.X_OK):
        return '%s is not writable by this user%s; give a directory it can write' % (
            existing, '' if existing == dest else ' (so %s cannot be made)' % dest)
    return None


def previous_text(path):
    """What a report file held before this run ('' when there was none)."""
    try:
        with open(path, encoding='utf-8') as handle:
            return handle.read()
    except FileNotFoundError:
        return ''


def stale(dest, files, plot_name=None):
    """True when a text file in ``dest`` differs from ``files`` (name -> content) or the plot is missing.

    The plot is drawn from the same report as the text files, so it is stale only when they are or when it is gone.
    """
    return any(previous_text(os.path.join(dest, name)) != content for name, content in files.items()) or \
        bool(plot_name and not os.path.exists(os.path.join(dest, plot_name)))


def matplotlib_import_error():
    """The traceback of importing matplotlib, or None when it imports (only a plot needs it)."""
    try:
        import matplotlib  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
    except ImportError:
        return traceback.format_exc()
    return None


def require_matplotlib(module, plot_name):
    """Fail naming matplotlib and the way around it (``plot: false``) when it cannot be imported."""
    error = matplotlib_import_error()
    if error:
        module.fail_json(msg=missing_required_lib('matplotlib', reason='to draw %s (or set plot: false)' % plot_name), exception=error)


def plot_bandwidth(path, series, thresholds, ylabel, title):
    """Draw bandwidth against message size (log-2 axis) into the PNG ``path``.

    ``series``: (label, matplotlib style, [(size in bytes, bandwidth)]) per line; ``thresholds``: (value, label) per
    dotted red line (a value of None or 0 draws nothing).
    """
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use('Agg')
    from matplotlib import pyplot  # pylint: disable=import-outside-toplevel

    figure, axes = pyplot.subplots(figsize=PLOT_SIZE_INCHES, dpi=PLOT_DPI)
    try:
        for label, style, points in series:
            if points:
                axes.plot([p[0] for p in points], [p[1] for p in points], style, markersize=3, label=label)
        for value, label in thresholds:
            if value:
                axes.axhline(value, color='red', linestyle=':', linewidth=1.5, label=label)
        axes.set_xscale('log', base=2)
        axes.set_ylim(bottom=0)   # from zero, so that the distance to the threshold reads true
        axes.set_xlabel('message size (bytes)')
        axes.set_ylabel(ylabel)
        axes.set_title(title)
        axes.grid(True, which='both', alpha=0.3)
        if axes.get_legend_handles_labels()[0]:
            axes.legend(loc='upper left', fontsize='small')
        else:
            axes.text(0.5, 0.5, 'no results to plot', transform=axes.transAxes, ha='center')
        figure.savefig(path, dpi=PLOT_DPI)
    finally:
        pyplot.close(figure)
    return path


def write(dest, files, plot_name=None, draw=None):
    """Write ``files`` (name -> content) into ``dest`` and, with ``plot_name``, ``draw(path)``; the paths written."""
    os.makedirs(dest, exist_ok=True)
    written = []
    for name, content in files.items():
        path = os.path.join(dest, name)
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write(content)
        written.append(path)
    if plot_name:
        written.append(draw(os.path.join(dest, plot_name)))
    return written


def sync(module, dest, files, plot_name=None, draw=None):
    """Bring the report directory ``dest`` to ``files`` and the plot: {'changed', 'files'[, 'diff']} for exit_json.

    Changed only when a file differs (or the plot is missing); in check mode nothing is written and ``files`` is
    empty; the diff shows the old and new report.json.
    """
    report_path = os.path.join(dest, REPORT)
    before = previous_text(report_path)
    changed = stale(dest, files, plot_name)
    paths = [os.path.join(dest, name) for name in files] + ([os.path.join(dest, plot_name)] if plot_name else [])
    if module.check_mode:
        paths = []
    elif changed:
        try:
            paths = write(dest, files, plot_name, draw)
        except OSError as exc:
            module.fail_json(msg='dest: cannot write the report in %s (%s)' % (dest, exc))
    result = {'changed': changed, 'files': paths}
    if module._diff:
        result['diff'] = {'before': before, 'after': files.get(REPORT, ''), 'before_header': report_path, 'after_header': report_path}
    return result


def plot_matrix(path, labels, values, colorbar, title, marked=()):
    """Draw a heat map of ``values`` ({(row label, column label): number}) over ``labels`` on both axes into the PNG
    ``path``; a pair without a value is left blank, each cell carries its number, and the labels in ``marked`` are red
    (the bad hosts of a diagnosis)."""
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use('Agg')
    from matplotlib import pyplot  # pylint: disable=import-outside-toplevel

    grid = [[values.get((row, column), float('nan')) for column in labels] for row in labels]
    side = max(6, min(16, 2 + 0.5 * len(labels)))
    figure, axes = pyplot.subplots(figsize=(side + 1.5, side), dpi=PLOT_DPI)
    try:
        image = axes.imshow(grid, cmap='RdYlGn', vmin=0)
        figure.colorbar(image, ax=axes, label=colorbar)
        # Tick labels shrink with the count, so that 64 hosts stay legible in the figure's 16 inches.
        size = 'medium' if len(labels) <= 16 else 'small' if len(labels) <= 32 else 'x-small'
        axes.set_xticks(range(len(labels)))
        axes.set_xticklabels(labels, rotation=90, fontsize=size)
        axes.set_yticks(range(len(labels)))
        axes.set_yticklabels(labels, fontsize=size)
        for tick in list(axes.get_xticklabels()) + list(axes.get_yticklabels()):
            if tick.get_text() in marked:
                tick.set_color('red')
                tick.set_fontweight('bold')
        if len(labels) <= 24:
            for (row, column), value in values.items():
                axes.text(labels.index(column), labels.index(row), '%.0f' % value, ha='center', va='center', fontsize='x-small')
        axes.set_title(title)
        figure.tight_layout()
        figure.savefig(path, dpi=PLOT_DPI)
    finally:
        pyplot.close(figure)
    return path
