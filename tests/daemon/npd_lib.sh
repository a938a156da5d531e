# SPDX-License-Identifier: GPL-2.0
# Shell helpers for tests that run a private nmiprofd (sourced).

# npd_wait_socket SOCK DPID LOG: wait at most 10 s for the daemon's
# socket.  Exits 77 (skip) when it cannot sample on this machine, 1 when
# it died or never listened.
npd_wait_socket() {
	_i=0
	until [ -S "$1" ]; do
		if ! kill -0 "$2" 2>/dev/null; then
			if grep -Eq 'Permission denied|not supported|No such device' "$3"; then
				echo "SKIP: nmiprofd cannot sample here: $(tail -n 1 "$3")"
				exit 77
			fi
			echo "FAIL: nmiprofd exited:"; cat "$3"; exit 1
		fi
		_i=$((_i + 1))
		[ $_i -lt 50 ] || { echo "FAIL: no socket after 10 s"; cat "$3"; exit 1; }
		sleep 0.2
	done
}
