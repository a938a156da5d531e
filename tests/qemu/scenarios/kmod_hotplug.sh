# nmiprof.ko across CPU hotplug: CPU 1 goes offline and comes back while
# sampling (the session is a cpuhp state: its timers/counters stop and
# start with the CPU; with CPU 1 gone, CPU 0 paces itself and says so in
# dmesg, once).  Accounting must stay exact and the guest clean, also for
# a session restricted to CPU 1 (-c 1: CPU 0 paces it and stops while it
# is offline; nothing is sampled then, and CPU 0 never is).
# kmod_sample_onecpu takes the pacer offline instead.
# @smp 2
# @timeout 120
# @progs tests/progs/nmiprof_ringcheck

ONLINE=/sys/devices/system/cpu/cpu1/online
[ -w $ONLINE ] || { fail "cpu1 cannot be offlined here"; exit 1; }
check "insmod nmiprof.ko" insmod "$NMIPROF_KO"

for opts in "-w" "-c 1"; do
	nmiprof_ringcheck -t 8 -f 1000 -n 100 $opts >"$RESULTS/hotplug.txt" 2>&1 &
	reader=$!
	sleep 3
	# Sampling with both CPUs online: nobody paces itself, nor says so.
	if [ "$opts" = -w ] && dmesg_has 'paces itself'; then
		fail "self-pacing reported with both CPUs online"
	fi
	check "cpu1 offline" sh -c "echo 0 >$ONLINE"
	sleep 2
	check "cpu1 online" sh -c "echo 1 >$ONLINE"
	wait $reader || fail "ringcheck $opts: $(tail -n 1 "$RESULTS/hotplug.txt")"
	grep -vE '^  ' "$RESULTS/hotplug.txt"
	cp "$RESULTS/hotplug.txt" "$RESULTS/hotplug$(echo $opts | tr -d ' -').txt"
done
n=$(dmesg | grep -c 'nmiprof: cpu 0 is the only online CPU and paces itself')
[ "$n" -eq 1 ] || fail "self-pacing reported $n times, want once (the -w round)"
check "rmmod nmiprof" rmmod nmiprof
