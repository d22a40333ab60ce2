# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options shared by the host modules that drive the Docker Engine API (cos/host.run_engine_module)."""

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    DOCUMENTATION = r"""
options:
  log_lines:
    description:
      - How many of the container's last log lines a failure shows.
    type: int
    default: 20
  docker_socket:
    description:
      - Unix socket of the Docker Engine API.
    type: path
    default: /var/run/docker.sock
"""
