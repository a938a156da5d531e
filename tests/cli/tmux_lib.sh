# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
#
# Driving a full-screen `nmiprof top` in a detached tmux session named
# "top", for top_tmux.sh and top_daemon.sh.  Source it after setting
# TMUX_SOCK (the private tmux server's name) and WORK (where screens are
# captured).

t() { tmux -L "$TMUX_SOCK" "$@"; }
screen() { t capture-pane -p -t top; }
keys() { t send-keys -t top "$@"; }
# wait_for REGEX [SECONDS]: until the screen matches (default 15 s); the
# last capture is left in $WORK/screen.txt
wait_for() {
	i=0 limit=$(( ${2:-15} * 5 ))
	while [ $i -lt $limit ]; do
		screen >"$WORK/screen.txt" 2>/dev/null
		grep -Eq -- "$1" "$WORK/screen.txt" && return 0
		sleep 0.2
		i=$((i + 1))
	done
	echo "FAIL: waited for /$1/; screen was:"
	cat "$WORK/screen.txt"
	exit 1
}
