# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this package is private to the inferops.sglang collection; it can change at any time.
# The machinery of inferops.sglang.server_process and server_process_info, one concern per file:
# cmdline (what a command line is), discovery (the servers of a host), stop (signalling safely),
# release (GPU and port waits) and module (the glue both modules share).
