# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the report modules share: they write a report directory through module_utils/report_dir.py. The attributes carry
their descriptions too, so a report module needs no other fragment."""

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Whether a check-mode run reports what it would change, changing nothing.
    support: full
    details: In check mode the verdict is computed and nothing is written.
  diff_mode:
    description: Whether a run with --diff shows what changed (or would change).
    support: full
    details: The diff shows the old and new C(report.json).
  platform:
    description: The systems the module runs on.
    support: full
    platforms: posix
requirements:
  - matplotlib (for the plot only; O(plot=false) works without it)
options:
  dest:
    description: The report directory (created if missing).
    type: path
    required: true
"""
