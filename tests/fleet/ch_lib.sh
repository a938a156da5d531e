# SPDX-License-Identifier: GPL-2.0
#
# Loopback ClickHouse servers for the fleet tests and benchmark: each is
# Debian's clickhouse-server (18.16) run as a plain process from a config
# written into the work directory, listening on 127.0.0.1 only.  Two of
# them form the two-shard cluster "fleet" (remote_servers) that the
# Distributed tables span.  Sourced by fleet.sh and bench_fleet.sh.
#
#   ch_ports BASE          sets CH_HTTP1 CH_TCP1 CH_HTTP2 CH_TCP2 ...
#   ch_start N DIR         start server N (1 or 2) with its data in DIR
#   ch_stop N              SIGTERM, wait (bounded)
#   ch_kill N              SIGKILL
#   ch_q N SQL [SETTINGS]  run SQL on server N, print the TSV reply;
#                          SETTINGS (a=1&b=2) go in the URL: 18.16 applies
#                          an INSERT ... SELECT's own SETTINGS clause to the
#                          SELECT only, not to the insert
CH_SERVER=${CH_SERVER:-/usr/sbin/clickhouse-server}

ch_available() {
	[ -x "$CH_SERVER" ]
}

# Ports from a base, so that concurrent runs (different bases) coexist.
ch_ports() {
	CH_HTTP1=$1 CH_TCP1=$(($1 + 1)) CH_INT1=$(($1 + 2))
	CH_HTTP2=$(($1 + 3)) CH_TCP2=$(($1 + 4)) CH_INT2=$(($1 + 5))
}

# A base whose nine ports (two servers, three fake ones in fleet.sh)
# nobody listens on, claimed by a lock held until this shell and its
# children exit: two runs at once (two engineers' builds) never pick the
# same base between one's check and its servers' start.  Bases are 10
# apart, so two runs' ranges never overlap.  Bounded tries.
CH_PORT_LOCKS=${TMPDIR:-/tmp}/nmiprof-ch-ports
ch_pick_ports() {
	mkdir -p "$CH_PORT_LOCKS" 2>/dev/null
	i=0
	while [ $i -lt 40 ]; do
		base=$((20000 + ($$ * 7 + i * 131) % 3000 * 10))
		i=$((i + 1))
		exec {CH_PORT_FD}>"$CH_PORT_LOCKS/$base.lock" || continue
		if ! flock -n "$CH_PORT_FD"; then
			exec {CH_PORT_FD}>&-
			continue
		fi
		busy=0
		for p in 0 1 2 3 4 5 6 7 8; do
			hex=$(printf '%04X' $((base + p)))
			grep -q ":$hex " /proc/net/tcp /proc/net/tcp6 2>/dev/null && busy=1
		done
		[ $busy = 0 ] && { ch_ports $base; return 0; }
		exec {CH_PORT_FD}>&-
	done
	return 1
}

ch_config() {	# N DIR
	n=$1 d=$2
	eval http=\$CH_HTTP$n tcp=\$CH_TCP$n inter=\$CH_INT$n
	mkdir -p "$d/data" "$d/tmp" "$d/log" "$d/files"
	cat >"$d/config.xml" <<X
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$d/log/server.log</log>
    <errorlog>$d/log/err.log</errorlog><size>10M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$http</http_port>
  <tcp_port>$tcp</tcp_port>
  <interserver_http_port>$inter</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <path>$d/data/</path>
  <tmp_path>$d/tmp/</tmp_path>
  <user_files_path>$d/files/</user_files_path>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
  <users_config>$d/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mlock_executable>false</mlock_executable>
  <remote_servers>
    <fleet>
      <shard><replica><host>127.0.0.1</host><port>$CH_TCP1</port></replica></shard>
      <shard><replica><host>127.0.0.1</host><port>$CH_TCP2</port></replica></shard>
    </fleet>
  </remote_servers>
</yandex>
X
	cat >"$d/users.xml" <<X
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users><default><password>${CH_PASSWORD:-}</password>
    <networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
X
}

ch_start() {	# N DIR
	n=$1 d=$2
	[ -f "$d/config.xml" ] || ch_config "$n" "$d"
	"$CH_SERVER" --config-file="$d/config.xml" >"$d/stdout" 2>&1 &
	eval CH_PID$n=$!
	eval http=\$CH_HTTP$n
	i=0
	until [ "$(curl -s "http://127.0.0.1:$http/ping" 2>/dev/null)" = "Ok." ]; do
		i=$((i + 1))
		if [ $i -gt 150 ]; then
			echo "clickhouse-server $n did not start:"; tail -n 5 "$d/log/err.log" "$d/stdout"
			return 1
		fi
		sleep 0.2
	done
}

ch_stop() {
	eval pid=\${CH_PID$1:-}
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	eval CH_PID$1=
}

ch_q() {	# N SQL [SETTINGS]
	eval http=\$CH_HTTP$1
	curl -sS --max-time 120 ${CH_PASSWORD:+-u default:$CH_PASSWORD} \
		"http://127.0.0.1:$http/?${3:-}" --data-binary "$2"
}
